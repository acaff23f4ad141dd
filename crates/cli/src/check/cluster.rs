//! The checks of one cluster up to authorization: its security protocol and TLS, connecting,
//! Metadata, API versions, DescribeConfigs, CreateTopics (`validate_only`) and the state
//! topics.

use std::sync::Arc;
use std::time::Duration;

use strait_client::metadata::ClusterMetadata;
use strait_client::protocol::messages::create_topics_request::CreatableTopic;
use strait_client::protocol::messages::{ApiKey, CreateTopicsRequest, TopicName};
use strait_client::protocol::protocol::StrBytes;
use strait_client::{Client, ResourceType};
use strait_mirror::config::{Cluster, Config};

use super::{Report, Roles, deadline, security, timed};

/// APIs a source cluster must offer.
const SOURCE_APIS: &[ApiKey] = &[
    ApiKey::Metadata,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::DescribeConfigs,
    ApiKey::FindCoordinator,
    ApiKey::ListGroups,
    ApiKey::OffsetFetch,
];

/// APIs a target cluster must offer.
const TARGET_APIS: &[ApiKey] = &[
    ApiKey::Metadata,
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::InitProducerId,
    ApiKey::CreateTopics,
    ApiKey::DescribeConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::FindCoordinator,
    ApiKey::DescribeGroups,
    ApiKey::OffsetFetch,
    ApiKey::OffsetCommit,
];

/// APIs whose absence Strait copes with (said with `!`).
const OPTIONAL_TARGET_APIS: &[(ApiKey, &str)] = &[(
    ApiKey::CreatePartitions,
    "target topics cannot be grown when the source gains partitions (logged and counted)",
)];

/// The checks of one cluster up to authorization; the client and metadata when the
/// cluster was reached (authorization is checked next).
pub(super) async fn check_cluster(
    config: &Config,
    name: &str,
    role: &Roles,
    report: &mut Report,
) -> Option<(Client, Arc<ClusterMetadata>)> {
    let cluster = config.cluster(name)?;
    report_cluster_heading(cluster, name, role, report);
    security::protocol(cluster, report);
    if !security::tls(cluster, report).await {
        return None;
    }
    let limit = deadline(config, name);
    let client = connect_within(config, name, limit, report).await?;
    security::sasl_ok(cluster, report);
    let meta = fetch_metadata(&client, limit, report).await?;
    let Some(&broker) = meta.brokers.keys().next() else {
        report.fail("metadata lists no broker");
        return None;
    };
    check_api_versions(&client, broker, role, limit, report).await;
    check_describe_configs(&client, &meta, limit, report).await;
    if !role.target {
        return Some((client, meta));
    }
    let can_create = check_create(&client, meta.controller_id, broker, limit, report).await;
    check_state_topics(&meta, role, can_create, report);
    Some((client, meta))
}

/// Prints the cluster's heading line: its name, bootstrap servers and role(s).
fn report_cluster_heading(cluster: &Cluster, name: &str, role: &Roles, report: &mut Report) {
    let what = match (role.source, role.target) {
        (true, true) => "source and target",
        (true, false) => "source",
        _ => "target",
    };
    report.line(format!(
        "cluster {name} ({}), {what}:",
        cluster.bootstrap_servers.join(",")
    ));
}

/// Connects to the cluster within `limit`, reporting why when it cannot.
async fn connect_within(
    config: &Config,
    name: &str,
    limit: Duration,
    report: &mut Report,
) -> Option<Client> {
    match tokio::time::timeout(limit, crate::plan::connect(config, name)).await {
        Ok(Ok(c)) => Some(c),
        Ok(Err(e)) => {
            security::connect_failure(&e, report);
            None
        }
        Err(_) => {
            report.fail(format!("reachable: no answer within {limit:?}"));
            None
        }
    }
}

/// Reads the cluster's metadata and reports its brokers, controller, id and topic count.
async fn fetch_metadata(
    client: &Client,
    limit: Duration,
    report: &mut Report,
) -> Option<Arc<ClusterMetadata>> {
    let meta = match timed(limit, client.metadata(None)).await {
        Ok(m) => m,
        Err(e) => {
            report.fail(format!("metadata: {e}"));
            return None;
        }
    };
    report.ok(format!(
        "reachable: {} broker(s), controller {}, cluster id {}, {} topic(s)",
        meta.brokers.len(),
        meta.controller_id,
        meta.cluster_id.as_deref().unwrap_or("-"),
        meta.topics.len()
    ));
    Some(meta)
}

/// Checks that the broker has a usable version of every API the role needs, and warns
/// about optional target APIs it lacks.
async fn check_api_versions(
    client: &Client,
    broker: i32,
    role: &Roles,
    limit: Duration,
    report: &mut Report,
) {
    let mut needed: Vec<ApiKey> = Vec::new();
    if role.source {
        needed.extend(SOURCE_APIS);
    }
    if role.target {
        for api in TARGET_APIS {
            if !needed.contains(api) {
                needed.push(*api);
            }
        }
    }
    let mut picked = Vec::new();
    let mut missing = Vec::new();
    for api in needed {
        match timed(limit, client.api_version(broker, api)).await {
            Ok(v) => picked.push(format!("{api:?} v{v}")),
            Err(e) => missing.push(format!("{api:?} ({e})")),
        }
    }
    if missing.is_empty() {
        report.ok(format!("API versions: {}", picked.join(", ")));
    } else {
        report.fail(format!(
            "API versions: no usable version of {}",
            missing.join(", ")
        ));
    }
    if role.target {
        for (api, consequence) in OPTIONAL_TARGET_APIS {
            if let Err(e) = timed(limit, client.api_version(broker, *api)).await {
                report.warn(format!("{api:?} unavailable ({e}): {consequence}"));
            }
        }
    }
}

/// Tries DescribeConfigs on one ordinary topic, if the cluster has any.
async fn check_describe_configs(
    client: &Client,
    meta: &ClusterMetadata,
    limit: Duration,
    report: &mut Report,
) {
    // DescribeConfigs on a topic (never on the BROKER resource: Tansu does not answer it).
    let probe_topic = meta
        .topics
        .values()
        .find(|t| !t.is_internal && !t.name.starts_with("__"))
        .map(|t| t.name.clone());
    match probe_topic {
        Some(t) => match timed(
            limit,
            client.describe_configs(ResourceType::Topic, &[t.as_str()], None),
        )
        .await
        {
            Ok(_) => report.ok(format!("describe configs: allowed (topic {t})")),
            Err(e) => report.fail(format!("describe configs (topic {t}): {e}")),
        },
        None => report.warn("describe configs: not verified (the cluster has no topic yet)"),
    }
}

/// Reports whether each state topic exists, or else whether it can be created.
fn check_state_topics(meta: &ClusterMetadata, role: &Roles, can_create: bool, report: &mut Report) {
    for state in &role.state_topics {
        match meta.topics.get(state) {
            Some(t) => report.ok(format!(
                "state topic {state}: exists ({} partition(s))",
                t.partitions.len()
            )),
            None if can_create => report.ok(format!(
                "state topic {state}: missing, will be created on the first run"
            )),
            None => report.fail(format!(
                "state topic {state}: missing, and topics cannot be created"
            )),
        }
    }
}

/// CreateTopics with `validate_only`: may Strait create topics here? Returns whether it can.
async fn check_create(
    client: &Client,
    controller: i32,
    any_broker: i32,
    limit: Duration,
    report: &mut Report,
) -> bool {
    let probe = format!("strait-check-probe-{}", std::process::id());
    let broker = if controller >= 0 {
        controller
    } else {
        any_broker
    };
    let request = |_version: i16| {
        Ok(CreateTopicsRequest::default()
            .with_timeout_ms(i32::try_from(limit.as_millis()).unwrap_or(i32::MAX))
            .with_validate_only(true)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_string(probe.clone())))
                    .with_num_partitions(1)
                    .with_replication_factor(-1),
            ]))
    };
    let resp = match timed(limit, client.send_request(broker, request)).await {
        Ok((_, r)) => r,
        Err(e) => {
            report.fail(format!("create topics: CreateTopics failed: {e}"));
            return false;
        }
    };
    let code = resp.topics.first().map(|t| t.error_code).unwrap_or(0);
    if code != 0 {
        let msg = resp
            .topics
            .first()
            .and_then(|t| t.error_message.as_ref())
            .map(|m| m.to_string())
            .unwrap_or_default();
        let err = strait_client::Error::from_code(code)
            .map(|e| e.to_string())
            .unwrap_or_else(|| format!("error code {code}"));
        report.fail(format!(
            "create topics: refused (validate_only): {err} {msg}; Strait could not create target topics or its state topic"
        ));
        return false;
    }
    report_probe(client, &probe, limit, report).await;
    true
}

/// Whether the broker honoured `validate_only`: if the probe topic exists now it did not,
/// and the probe is deleted; reported either way.
async fn report_probe(client: &Client, probe: &str, limit: Duration, report: &mut Report) {
    client.invalidate_metadata();
    let created = timed(limit, client.metadata(Some(&[probe])))
        .await
        .map(|m| m.topics.contains_key(probe))
        .unwrap_or(false);
    if created {
        let deleted = timed(limit, client.delete_topics(&[probe], limit)).await;
        match deleted {
            Ok(_) => report.ok(format!(
                "create topics: allowed (the broker ignored validate_only: probe topic {probe} was created and deleted)"
            )),
            Err(e) => report.warn(format!(
                "create topics: allowed, but the broker ignored validate_only and probe topic {probe} could not be deleted: {e}"
            )),
        }
    } else {
        report.ok("create topics: allowed (CreateTopics with validate_only)");
    }
}
