//! Asks each cluster what Strait may do there (KIP-430 authorized operations; nothing is
//! written) and prints the verdicts of [`super::authz`].
//!
//! Source: Describe, Read, DescribeConfigs on the topics the flows select; Describe on the
//! groups they sync. Target: Describe, Read, Write, DescribeConfigs (and AlterConfigs when
//! topic configs are synced) on the target topics already there (Read: a partition starts
//! by reading its target's bounds with a Fetch, and recovery reads back what it wrote); Describe, Read, Write on the state
//! topic; Create and IdempotentWrite on the cluster; Describe and Read on the synced groups
//! and on each flow's own group (`strait.<flow>.workers`, which every `strait run` joins).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use strait_client::Client;
use strait_client::metadata::ClusterMetadata;
use strait_client::rpc::authz::{AclOperation, AuthorizedOps};
use strait_mirror::config::scale_out::default_group;
use strait_mirror::config::{Config, Flow, TopicDecision};

use super::authz::{ClusterFacts, Line, cluster_lines, resource_lines};
use super::{Report, deadline, timed};
use AclOperation::*;

/// A cluster already reached: its client, metadata, and (once listed) its synced groups.
pub(super) struct Seen {
    pub client: Client,
    pub meta: Arc<ClusterMetadata>,
    groups: Option<Result<Vec<String>, String>>,
}

impl Seen {
    pub fn new(client: Client, meta: Arc<ClusterMetadata>) -> Self {
        Seen {
            client,
            meta,
            groups: None,
        }
    }
}

/// Clusters reached so far, by name, and those that could not be: a target's checks need
/// its sources' topics, and an unreachable source is not tried twice.
#[derive(Default)]
pub(super) struct Cache {
    seen: BTreeMap<String, Seen>,
    unreachable: BTreeMap<String, String>,
}

impl Cache {
    /// Records a cluster that was reached.
    pub fn reached(&mut self, name: &str, seen: Seen) {
        self.seen.insert(name.to_owned(), seen);
    }

    /// Records a cluster whose checks stopped early.
    pub fn failed(&mut self, name: &str, why: impl Into<String>) {
        self.unreachable.insert(name.to_owned(), why.into());
    }
}

/// The source topics `flow` replicates, with their target names.
fn selected(flow: &Flow, meta: &ClusterMetadata) -> Vec<(String, String)> {
    meta.topics
        .values()
        .filter(|t| !t.is_internal && !t.name.starts_with("__"))
        .filter_map(|t| match flow.topic_decision(&t.name) {
            TopicDecision::Replicate { target_topic } => Some((t.name.clone(), target_topic)),
            _ => None,
        })
        .collect()
}

/// The source cluster `name`, connecting if this run has not reached it yet.
async fn source<'c>(config: &Config, name: &str, cache: &'c mut Cache) -> Result<&'c Seen, String> {
    if let Some(why) = cache.unreachable.get(name) {
        return Err(why.clone());
    }
    if !cache.seen.contains_key(name) {
        let limit = deadline(config, name);
        let reached = async {
            let client = timed(limit, crate::plan::connect(config, name)).await?;
            let meta = timed(limit, client.metadata(None)).await?;
            Ok::<_, String>(Seen::new(client, meta))
        };
        match reached.await {
            Ok(seen) => cache.reached(name, seen),
            Err(e) => {
                cache.failed(name, e.clone());
                return Err(e);
            }
        }
    }
    Ok(&cache.seen[name])
}

/// The groups of source cluster `name` that the flows from it sync (listed once).
async fn source_groups(
    config: &Config,
    name: &str,
    cache: &mut Cache,
) -> Result<Vec<String>, String> {
    source(config, name, cache).await?;
    let seen = cache.seen.get_mut(name).expect("just reached");
    if seen.groups.is_none() {
        let limit = deadline(config, name);
        let listed = timed(limit, seen.client.list_groups()).await.map(|gs| {
            let mut names: BTreeSet<String> = BTreeSet::new();
            for g in gs {
                if config
                    .enabled_flows()
                    .any(|f| f.source == name && f.syncs_group(&g.group_id))
                {
                    names.insert(g.group_id);
                }
            }
            names.into_iter().collect()
        });
        seen.groups = Some(listed);
    }
    seen.groups.clone().expect("just listed")
}

fn print(lines: Vec<Line>, report: &mut Report) {
    for l in lines {
        match l {
            Line::Ok(s) => report.ok(s),
            Line::Fail(s) => report.fail(s),
            Line::Warn(s) => report.warn(s),
        }
    }
}

/// Asks for `topics`' authorized operations and prints the verdicts for `needed`.
async fn topic_lines(
    client: &Client,
    what: &str,
    topics: &[String],
    needed: &[AclOperation],
    limit: Duration,
    report: &mut Report,
) -> Vec<(String, Option<AuthorizedOps>)> {
    if topics.is_empty() {
        return Vec::new();
    }
    let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
    match timed(limit, client.topic_authorized_operations(&refs)).await {
        Ok(map) => {
            let mut found: Vec<(String, Option<AuthorizedOps>)> = map.into_iter().collect();
            found.sort_by(|a, b| a.0.cmp(&b.0));
            print(resource_lines(what, needed, &found), report);
            found
        }
        Err(e) => {
            report.fail(format!("authorization on {what}s: Metadata failed: {e}"));
            Vec::new()
        }
    }
}

async fn group_lines(
    client: &Client,
    what: &str,
    groups: &[String],
    needed: &[AclOperation],
    limit: Duration,
    report: &mut Report,
) {
    if groups.is_empty() {
        return;
    }
    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    match timed(limit, client.group_authorized_operations(&refs)).await {
        Ok(map) => {
            let mut found: Vec<(String, Option<AuthorizedOps>)> = map.into_iter().collect();
            found.sort_by(|a, b| a.0.cmp(&b.0));
            print(resource_lines(what, needed, &found), report);
        }
        Err(e) => report.fail(format!(
            "authorization on {what}s: DescribeGroups failed: {e}"
        )),
    }
}

/// The authorization checks of a source cluster (already in `cache`).
pub(super) async fn check_source(
    config: &Config,
    name: &str,
    cache: &mut Cache,
    report: &mut Report,
) {
    let limit = deadline(config, name);
    let (client, meta) = {
        let s = &cache.seen[name];
        (s.client.clone(), s.meta.clone())
    };
    let flows: Vec<&Flow> = config
        .enabled_flows()
        .filter(|f| f.source == name)
        .collect();
    let topics: BTreeSet<String> = flows
        .iter()
        .flat_map(|f| selected(f, &meta))
        .map(|(s, _)| s)
        .collect();
    let topics: Vec<String> = topics.into_iter().collect();
    if topics.is_empty() {
        report.warn("authorization on source topics: not checked, the flows select no topic yet");
    }
    topic_lines(
        &client,
        "source topic",
        &topics,
        &[Describe, Read, DescribeConfigs],
        limit,
        report,
    )
    .await;
    if flows.iter().any(|f| f.sync.group_offsets) {
        match source_groups(config, name, cache).await {
            Ok(groups) => {
                group_lines(&client, "source group", &groups, &[Describe], limit, report).await
            }
            Err(e) => report.fail(format!(
                "authorization on source groups: ListGroups failed: {e}"
            )),
        }
    }
}

/// The authorization checks of a target cluster (already in `cache`).
pub(super) async fn check_target(
    config: &Config,
    name: &str,
    cache: &mut Cache,
    report: &mut Report,
) {
    let limit = deadline(config, name);
    let (client, meta) = {
        let s = &cache.seen[name];
        (s.client.clone(), s.meta.clone())
    };
    let flows: Vec<&Flow> = config
        .enabled_flows()
        .filter(|f| f.target == name)
        .collect();
    let (targets, groups) = flows_targets_and_groups(config, &flows, cache, report).await;
    let topics = TargetTopics::sort(targets, &flows, &meta);
    let reported = check_target_topics(&client, &flows, &topics, limit, report).await;
    check_target_cluster(&client, &reported, &topics.missing, limit, report).await;
    let groups: Vec<String> = groups.into_iter().collect();
    group_lines(
        &client,
        "target group",
        &groups,
        &[Describe, Read],
        limit,
        report,
    )
    .await;
    group_lines(
        &client,
        "flow group",
        &own_groups(&flows),
        &[Describe, Read],
        limit,
        report,
    )
    .await;
}

/// The target topics the flows select on their sources and the groups they sync, warning
/// about each flow whose source cannot be reached.
async fn flows_targets_and_groups(
    config: &Config,
    flows: &[&Flow],
    cache: &mut Cache,
    report: &mut Report,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut targets = BTreeSet::new();
    let mut groups = BTreeSet::new();
    for flow in flows {
        match source(config, &flow.source, cache).await {
            Ok(src) => targets.extend(selected(flow, &src.meta).into_iter().map(|(_, t)| t)),
            Err(e) => report.warn(format!(
                "authorization on the target topics of flow {}: not checked, source {} unreachable: {e}",
                flow.name, flow.source
            )),
        }
        if flow.sync.group_offsets
            && let Ok(gs) = source_groups(config, &flow.source, cache).await
        {
            groups.extend(gs.into_iter().filter(|g| flow.syncs_group(g)));
        }
    }
    (targets, groups)
}

/// The target's topics and state topics, sorted into those already there and those missing.
struct TargetTopics {
    /// Target topics that exist.
    existing: Vec<String>,
    /// State topics that exist.
    existing_states: Vec<String>,
    /// Target topics, then state topics, that do not exist yet.
    missing: Vec<String>,
}

impl TargetTopics {
    /// Sorts `targets` and the flows' state topics by whether `meta` lists them.
    fn sort(targets: BTreeSet<String>, flows: &[&Flow], meta: &ClusterMetadata) -> Self {
        let states: BTreeSet<String> = flows.iter().map(|f| f.state_topic.clone()).collect();
        let (existing, mut missing): (Vec<String>, Vec<String>) = targets
            .into_iter()
            .partition(|t| meta.topics.contains_key(t));
        let (existing_states, missing_states): (Vec<String>, Vec<String>) = states
            .into_iter()
            .partition(|t| meta.topics.contains_key(t));
        missing.extend(missing_states);
        TargetTopics {
            existing,
            existing_states,
            missing,
        }
    }
}

/// Checks the operations allowed on the existing target and state topics; returns each
/// topic reported with its authorized operations, when known.
async fn check_target_topics(
    client: &Client,
    flows: &[&Flow],
    topics: &TargetTopics,
    limit: Duration,
    report: &mut Report,
) -> Vec<(String, Option<AuthorizedOps>)> {
    // Read: each partition starts by fetching its target's bounds (Apache Kafka refuses a
    // Fetch without it: TOPIC_AUTHORIZATION_FAILED), and recovery reads the target back.
    let mut needed = vec![Describe, Read, Write, DescribeConfigs];
    if flows.iter().any(|f| f.sync.topic_configs) {
        needed.push(AlterConfigs);
    }
    let mut reported = topic_lines(
        client,
        "target topic",
        &topics.existing,
        &needed,
        limit,
        report,
    )
    .await;
    reported.extend(
        topic_lines(
            client,
            "state topic",
            &topics.existing_states,
            &[Describe, Read, Write],
            limit,
            report,
        )
        .await,
    );
    reported
}

/// Checks the cluster-wide operations (topic creation, idempotent writes) on the target.
async fn check_target_cluster(
    client: &Client,
    reported: &[(String, Option<AuthorizedOps>)],
    missing: &[String],
    limit: Duration,
    report: &mut Report,
) {
    let topic_write: Vec<(&str, bool)> = reported
        .iter()
        .filter_map(|(t, ops)| ops.map(|o| (t.as_str(), o.allows(Write))))
        .collect();
    let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
    match timed(limit, client.cluster_authorized_operations()).await {
        Ok((ops, has_describe_cluster)) => print(
            cluster_lines(&ClusterFacts {
                ops,
                write_allows_idempotence: has_describe_cluster,
                missing_topics: &missing,
                topic_write: &topic_write,
            }),
            report,
        ),
        Err(e) => report.fail(format!("authorization on the cluster: {e}")),
    }
}

/// The flows' own groups: every `strait run` joins its flow's own group (scale-out's, or
/// the sole-writer guard's), which needs Read.
fn own_groups(flows: &[&Flow]) -> Vec<String> {
    flows
        .iter()
        .map(|f| {
            f.scale_out
                .as_ref()
                .map_or_else(|| default_group(&f.name), |s| s.group.clone())
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
