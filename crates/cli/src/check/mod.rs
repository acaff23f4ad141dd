//! `strait check -c FILE`: validates the config, then reaches every cluster and checks what
//! Strait needs from it, one line per check (`✓`, `✗`, or `!` for a limitation Strait copes
//! with). Exits 1 if any check failed. Every network step has a deadline, so an unreachable
//! or stalled broker gives a `✗` line, never a hang. Writes nothing, except that a broker
//! which ignores CreateTopics' `validate_only` gets a probe topic that is deleted at once
//! (and the output says so).
//!
//! Per cluster, in order: the security protocol; a TLS handshake with every bootstrap
//! address ([`security`]; a failure skips the rest of the cluster); connecting, which
//! authenticates with SASL; Metadata; API versions; DescribeConfigs; CreateTopics
//! (`validate_only`); the state topics; then authorization ([`access`] asks the brokers,
//! [`authz`] decides).

mod access;
mod authz;
mod security;

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use strait_client::metadata::ClusterMetadata;
use strait_client::protocol::messages::create_topics_request::CreatableTopic;
use strait_client::protocol::messages::{ApiKey, CreateTopicsRequest, TopicName};
use strait_client::protocol::protocol::StrBytes;
use strait_client::{Client, ResourceType};
use strait_mirror::config::{Config, load};

use crate::exit::Exit;
use crate::plan::runtime;

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

/// The outcome of the checks so far, and their lines not printed yet (clusters are checked
/// at once; each one's lines are printed together, in the config's order).
#[derive(Default)]
pub(crate) struct Report {
    failed: usize,
    warned: usize,
    lines: Vec<String>,
    /// `--json`: lines are kept for the document instead of printed.
    json: bool,
    /// The lines "printed" so far in `--json` mode.
    kept: Vec<String>,
}

impl Report {
    fn line(&mut self, text: impl Display) {
        self.lines.push(text.to_string());
    }

    fn ok(&mut self, what: impl Display) {
        self.line(format!("  ✓ {what}"));
    }

    fn fail(&mut self, what: impl Display) {
        self.failed += 1;
        self.line(format!("  ✗ {what}"));
    }

    fn warn(&mut self, what: impl Display) {
        self.warned += 1;
        self.line(format!("  ! {what}"));
    }

    /// Prints the lines gathered so far.
    fn print(&mut self) {
        if self.json {
            self.kept.append(&mut self.lines);
            return;
        }
        for l in self.lines.drain(..) {
            println!("{l}");
        }
    }

    /// The lines as JSON: each with its status (`ok`, `failed`, `limitation`, or `info`
    /// for a heading), the text without its mark.
    fn json_lines(&self) -> Vec<serde_json::Value> {
        self.kept
            .iter()
            .chain(&self.lines)
            .map(|l| {
                let t = l.trim_start();
                let (status, text) = [("✓ ", "ok"), ("✗ ", "failed"), ("! ", "limitation")]
                    .iter()
                    .find_map(|(mark, s)| t.strip_prefix(mark).map(|rest| (*s, rest)))
                    .unwrap_or(("info", t));
                serde_json::json!({ "status": status, "text": text })
            })
            .collect()
    }

    /// Takes `other`'s counts and lines after this one's.
    fn absorb(&mut self, mut other: Report) {
        self.failed += other.failed;
        self.warned += other.warned;
        self.lines.append(&mut other.lines);
    }
}

/// Runs `strait check` (`json`: one JSON document instead of text).
pub fn check_cmd(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let config = match load(path) {
        Ok(c) => c,
        Err(e) => {
            if json {
                let doc = serde_json::json!({
                    "config": path.display().to_string(), "valid": false,
                    "error": e.to_string(), "checks": [],
                });
                println!("{doc}");
            } else {
                println!("✗ config {}: invalid", path.display());
            }
            eprintln!("{e}");
            return Ok(Exit::Usage.into());
        }
    };
    if !json {
        println!(
            "✓ config {}: valid ({} clusters, {} enabled flows)",
            path.display(),
            config.clusters.len(),
            config.enabled_flows().count()
        );
    }
    let mut report = Report {
        json,
        ..Report::default()
    };
    let started = std::time::Instant::now();
    runtime()?.block_on(check_all(&config, &mut report));
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let doc = serde_json::json!({
            "config": path.display().to_string(), "valid": true,
            "checks": report.json_lines(), "failed": report.failed,
            "limitations": report.warned, "seconds": seconds,
        });
        println!("{doc}");
    } else {
        report.print();
        println!(
            "{} check(s) failed, {} limitation(s), in {seconds:.1} s",
            report.failed, report.warned,
        );
    }
    // Every check is of reaching a cluster: connecting, TLS, SASL, authorization.
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        Exit::Unreachable.into()
    })
}

/// What each cluster is used as.
#[derive(Default, Clone)]
struct Roles {
    source: bool,
    target: bool,
    state_topics: Vec<String>,
}

async fn check_all(config: &Config, report: &mut Report) {
    let mut roles: BTreeMap<&str, Roles> = BTreeMap::new();
    for flow in config.enabled_flows() {
        roles.entry(flow.source.as_str()).or_default().source = true;
        let t = roles.entry(flow.target.as_str()).or_default();
        t.target = true;
        t.state_topics.push(flow.state_topic.clone());
    }
    // Every cluster's connection and protocol checks at once: an unreachable cluster costs
    // its timeout once, not once per cluster before it.
    let shared = Arc::new(config.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (i, (name, role)) in roles.iter().enumerate() {
        let (config, name, role) = (Arc::clone(&shared), name.to_string(), role.clone());
        tasks.spawn(async move {
            let mut own = Report::default();
            let reached = check_cluster(&config, &name, &role, &mut own).await;
            (i, own, reached)
        });
    }
    let mut reached: Vec<_> = tasks.join_all().await;
    reached.sort_by_key(|(i, _, _)| *i);
    let reached = reached.into_iter().map(|(_, own, r)| (own, r));
    let mut cache = access::Cache::default();
    for ((name, role), (own, reached)) in roles.into_iter().zip(reached) {
        report.absorb(own);
        let Some((client, meta)) = reached else {
            report.print();
            cache.failed(name, "its checks failed above");
            continue;
        };
        cache.reached(name, access::Seen::new(client, meta));
        if role.source {
            access::check_source(config, name, &mut cache, report).await;
        }
        if role.target {
            access::check_target(config, name, &mut cache, report).await;
        }
        report.print();
    }
}

/// A deadline for one step: the cluster's request timeout plus slack for a reconnect.
fn deadline(config: &Config, name: &str) -> Duration {
    config
        .cluster(name)
        .map(|c| c.connect_timeout + c.request_timeout * 2)
        .unwrap_or(Duration::from_secs(10))
}

async fn timed<T, E: Display>(
    limit: Duration,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("no answer within {limit:?}")),
    }
}

/// The checks of one cluster up to authorization; the client and metadata when the
/// cluster was reached (authorization is checked next).
async fn check_cluster(
    config: &Config,
    name: &str,
    role: &Roles,
    report: &mut Report,
) -> Option<(Client, Arc<ClusterMetadata>)> {
    let cluster = config.cluster(name)?;
    let what = match (role.source, role.target) {
        (true, true) => "source and target",
        (true, false) => "source",
        _ => "target",
    };
    report.line(format!(
        "cluster {name} ({}), {what}:",
        cluster.bootstrap_servers.join(",")
    ));
    security::protocol(cluster, report);
    if !security::tls(cluster, report).await {
        return None;
    }
    let limit = deadline(config, name);
    let client = match tokio::time::timeout(limit, crate::plan::connect(config, name)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            security::connect_failure(&e, report);
            return None;
        }
        Err(_) => {
            report.fail(format!("reachable: no answer within {limit:?}"));
            return None;
        }
    };
    security::sasl_ok(cluster, report);
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
    let Some(&broker) = meta.brokers.keys().next() else {
        report.fail("metadata lists no broker");
        return None;
    };
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
    if !role.target {
        return Some((client, meta));
    }
    let can_create = check_create(&client, meta.controller_id, broker, limit, report).await;
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
    Some((client, meta))
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
    // Did the broker honour validate_only? If the probe exists now, it did not: delete it.
    client.invalidate_metadata();
    let created = timed(limit, client.metadata(Some(&[probe.as_str()])))
        .await
        .map(|m| m.topics.contains_key(&probe))
        .unwrap_or(false);
    if created {
        let deleted = timed(limit, client.delete_topics(&[probe.as_str()], limit)).await;
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
    true
}
