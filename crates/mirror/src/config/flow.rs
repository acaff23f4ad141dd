//! `[[flows]]`: one replication flow, source → target — the file's form, the resolved
//! form ([`Flow`], which decides what it replicates) and its checks, which call into the
//! flow's tables' files, plus the checks across flows (unique names and state topics,
//! identity naming cycles).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::delivery::{Delivery, DeliverySpec};
use super::filter::NameFilter;
use super::intervals::{Intervals, IntervalsSpec};
use super::naming::{MAX_TOPIC_LEN, NamingPolicy, NamingSpec, ReplicationPolicy, is_topic_name};
use super::problem::{KeyPath, Problem};
use super::scale_out::{ScaleOut, ScaleOutSpec};
use super::suggest::did_you_mean;
use super::sync::{Sync, SyncSpec};
use super::topics::{
    GroupsSpec, IncidentPolicy, Selection, StartPosition, TopicConfigsSpec, TopicsSpec,
};
use super::{defaults, delivery, intervals, naming, scale_out, sync, topics};

/// One replication flow: `source` → `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name used in logs, metrics and the state topic; default `<source>-to-<target>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Source cluster name.
    pub source: String,
    /// Target cluster name.
    pub target: String,
    /// A disabled flow is validated but not run (MM2's `A->B.enabled`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Compacted topic on the target holding positions and offset maps; default
    /// `strait-state.<flow name>.internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_topic: Option<String>,
    /// Which topics, and how they are created (`[flows.topics]`).
    #[serde(default)]
    pub topics: TopicsSpec,
    /// Target topic naming (`[flows.naming]`).
    #[serde(default)]
    pub naming: NamingSpec,
    /// Which consumer groups (`[flows.groups]`).
    #[serde(default)]
    pub groups: GroupsSpec,
    /// Which topic configs are copied (`[flows.topic_configs]`).
    #[serde(default)]
    pub topic_configs: TopicConfigsSpec,
    /// What is synced besides records (`[flows.sync]`).
    #[serde(default)]
    pub sync: SyncSpec,
    /// Control-plane cadences (`[flows.intervals]`).
    #[serde(default)]
    pub intervals: IntervalsSpec,
    /// Delivery guarantee (`[flows.delivery]`).
    #[serde(default, skip_serializing_if = "DeliverySpec::is_default")]
    pub delivery: DeliverySpec,
    /// Several processes share the flow (`[flows.scale_out]`); absent: one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_out: Option<ScaleOutSpec>,
}

fn yes() -> bool {
    true
}

impl FlowSpec {
    /// The flow's name and state topic, defaults applied: `<source>-to-<target>` and
    /// `strait-state.<name>.internal`.
    fn names(&self) -> (String, String) {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| defaults::flow_name(&self.source, &self.target));
        let state_topic = self
            .state_topic
            .clone()
            .unwrap_or_else(|| defaults::state_topic(&name));
        (name, state_topic)
    }
}

/// One replication flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Unique name.
    pub name: String,
    /// Source cluster name (a key of [`super::Config::clusters`]).
    pub source: String,
    /// Target cluster name.
    pub target: String,
    /// Whether to run it.
    pub enabled: bool,
    /// Compacted state topic on the target.
    pub state_topic: String,
    /// Which source topics.
    pub topics: NameFilter,
    /// Naming and cycle detection.
    pub policy: ReplicationPolicy,
    /// Which consumer groups.
    pub groups: NameFilter,
    /// Which topic configs are copied.
    pub topic_configs: NameFilter,
    /// Replication factor for created topics; `None` = the target broker's default.
    pub replication_factor: Option<i16>,
    /// Start of replication in a new partition.
    pub start_position: StartPosition,
    /// Reaction to source truncation.
    pub on_source_truncation: IncidentPolicy,
    /// Reaction to source topic re-creation.
    pub on_topic_recreation: IncidentPolicy,
    /// Reaction to a target partition that does not hold what was written to it.
    pub on_target_mismatch: IncidentPolicy,
    /// What is synced besides records.
    pub sync: Sync,
    /// Control-plane cadences.
    pub intervals: Intervals,
    /// Delivery guarantee.
    pub delivery: Delivery,
    /// Scale-out: the group the flow's processes share; `None`: one process, no group.
    pub scale_out: Option<ScaleOut>,
}

/// Why a flow does or does not replicate a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicDecision {
    /// Replicate it under this target name.
    Replicate {
        /// The target topic.
        target_topic: String,
    },
    /// The include/exclude lists reject it.
    Filtered,
    /// Its name says it came from the target cluster: replicating it would loop.
    Cycle,
    /// A heartbeats topic, and `sync.heartbeats` is off.
    HeartbeatsDisabled,
    /// The flow's own state topic.
    StateTopic,
}

impl Flow {
    /// Decides whether `topic` on the source is replicated, and as what.
    ///
    /// Heartbeats topics bypass the topic filter (governed by `sync.heartbeats`, like
    /// MM2's `heartbeats.replication.enabled`); cycles are refused before anything else.
    pub fn topic_decision(&self, topic: &str) -> TopicDecision {
        if topic == self.state_topic {
            TopicDecision::StateTopic
        } else if self.policy.is_cycle(topic, &self.target) {
            TopicDecision::Cycle
        } else if self.policy.is_heartbeats_topic(topic) {
            if self.sync.heartbeats {
                TopicDecision::Replicate {
                    target_topic: self.policy.remote_topic(topic),
                }
            } else {
                TopicDecision::HeartbeatsDisabled
            }
        } else if self.topics.accepts(topic) {
            TopicDecision::Replicate {
                target_topic: self.policy.remote_topic(topic),
            }
        } else {
            TopicDecision::Filtered
        }
    }

    /// Whether consumer group `group` is synced.
    pub fn syncs_group(&self, group: &str) -> bool {
        self.sync.group_offsets && self.groups.accepts(group)
    }

    /// Whether topic config `name` is copied to the target.
    pub fn syncs_topic_config(&self, name: &str) -> bool {
        self.sync.topic_configs && self.topic_configs.accepts(name)
    }
}

/// Checks `spec` (at `at`, one element of `flows`) and every table in it; `clusters`: the
/// names of the `[clusters.<name>]` tables. Every problem goes to `problems`.
pub fn resolve(
    spec: &FlowSpec,
    clusters: &[&str],
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Flow> {
    let before = problems.len();
    check_clusters(spec, clusters, at, problems);
    let (name, state_topic) = spec.names();
    check_names(&name, &state_topic, at, problems);
    let policy = naming_policy(spec, at, problems);
    let selection = topics::resolve(
        &spec.topics,
        &spec.groups,
        &spec.topic_configs,
        at,
        problems,
    );
    let intervals = intervals::resolve(&spec.intervals, &at.key("intervals"), problems);
    sync::check(&spec.sync, &at.key("sync"), problems);
    let delivery = delivery::resolve(&spec.delivery, &name, &at.key("delivery"), problems);
    let scale_out = resolve_scale_out(spec, &name, delivery.as_ref(), at, problems);
    if problems.len() != before {
        return None;
    }
    let Selection {
        topics,
        groups,
        topic_configs,
        replication_factor,
    } = selection?;
    Some(Flow {
        name,
        source: spec.source.clone(),
        target: spec.target.clone(),
        enabled: spec.enabled,
        state_topic,
        topics,
        policy: policy?,
        groups,
        topic_configs,
        replication_factor,
        start_position: spec.topics.start_position,
        on_source_truncation: spec.topics.on_source_truncation,
        on_topic_recreation: spec.topics.on_topic_recreation,
        on_target_mismatch: spec.topics.on_target_mismatch,
        sync: spec.sync,
        intervals: intervals?,
        delivery: delivery?,
        scale_out: scale_out?,
    })
}

/// `source` and `target` must name `[clusters.<name>]` tables.
fn check_clusters(spec: &FlowSpec, clusters: &[&str], at: &KeyPath, problems: &mut Vec<Problem>) {
    for (key, name) in [("source", &spec.source), ("target", &spec.target)] {
        if !clusters.contains(&name.as_str()) {
            problems.push(
                Problem::new(at.key(key), format!("unknown cluster \"{name}\""))
                    .expected(format!(
                        "one of the `[clusters.<name>]` names: {}",
                        list(clusters)
                    ))
                    .suggest(did_you_mean(name, clusters.iter().copied()).map(str::to_owned)),
            );
        }
    }
}

/// The flow's name and its state topic must be valid topic names.
fn check_names(name: &str, state_topic: &str, at: &KeyPath, problems: &mut Vec<Problem>) {
    if !is_topic_name(name) {
        problems.push(
            Problem::new(at.key("name"), format!("invalid flow name \"{name}\""))
                .expected("letters, digits, `.`, `_` and `-` (the name becomes part of the state topic's name)"),
        );
    }
    if !is_topic_name(state_topic) {
        problems.push(
            Problem::new(
                at.key("state_topic"),
                format!("invalid topic name \"{state_topic}\""),
            )
            .expected(format!(
                "at most {MAX_TOPIC_LEN} letters, digits, `.`, `_` and `-`"
            )),
        );
    }
}

/// The `naming` table resolved; an enabled flow from a cluster to itself with identity
/// naming is a cycle.
fn naming_policy(
    spec: &FlowSpec,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<ReplicationPolicy> {
    let naming = &spec.naming;
    let policy = naming::resolve(naming, &spec.source, &at.key("naming"), problems);
    if spec.enabled && spec.source == spec.target && naming.policy == NamingPolicy::Identity {
        problems.push(
            Problem::new(at.clone(), format!("flow from \"{0}\" to \"{0}\" with identity naming replicates every topic onto itself (a cycle)", spec.source))
                .expected("a different target, or `naming.policy = \"prefix\"`"),
        );
    }
    policy
}

/// The `scale_out` table resolved, if there is one (`Some(None)` if there is not; `None`
/// if it has a problem).
fn resolve_scale_out(
    spec: &FlowSpec,
    name: &str,
    delivery: Option<&Delivery>,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Option<ScaleOut>> {
    match &spec.scale_out {
        Some(so) => scale_out::resolve(
            so,
            name,
            delivery.is_some_and(|d| d.exactly_once()),
            &at.key("scale_out"),
            problems,
        )
        .map(Some),
        None => Some(None),
    }
}

/// Flow names and state topics must be unique: both identify a flow's durable state.
/// `at`: the `flows` array.
pub fn unique_names(specs: &[FlowSpec], at: &KeyPath, problems: &mut Vec<Problem>) {
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut topics: HashMap<(&str, String), usize> = HashMap::new();
    for (i, spec) in specs.iter().enumerate() {
        let at = at.index(i);
        let (name, topic) = spec.names();
        if let Some(first) = names.insert(name.clone(), i) {
            problems.push(
                Problem::new(at.key("name"), format!("flow name \"{name}\" is also used by flows[{first}]"))
                    .expected("a unique `name` per flow (two flows between the same clusters need explicit names)"),
            );
        } else if let Some(first) = topics.insert((spec.target.as_str(), topic.clone()), i) {
            problems.push(
                Problem::new(
                    at.key("state_topic"),
                    format!(
                        "state topic \"{topic}\" is also used by flows[{first}] on the same target"
                    ),
                )
                .expected("a unique state topic per flow"),
            );
        }
    }
}

/// Enabled identity flows that form a loop (a→b→a, a→b→c→a) copy the same topics
/// around forever: identity names carry no origin, so per-topic cycle checks cannot help.
/// `at`: the `flows` array.
pub fn identity_cycles(flows: &[Flow], at: &KeyPath, problems: &mut Vec<Problem>) {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for f in flows
        .iter()
        .filter(|f| f.enabled && f.policy.kind() == NamingPolicy::Identity && f.source != f.target)
    {
        edges
            .entry(f.source.as_str())
            .or_default()
            .insert(f.target.as_str());
    }
    if let Some(cycle) = find_cycle(&edges) {
        problems.push(
            Problem::new(
                at.clone(),
                format!("flows with identity naming form a cycle ({}): every topic would be replicated around it forever", cycle.join(" -> ")),
            )
            .expected("`naming.policy = \"prefix\"` on at least one flow of the cycle"),
        );
    }
}

/// The first cycle found by depth-first search, as `[a, b, a]`.
fn find_cycle<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    fn dfs<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(pos) = stack.iter().position(|n| *n == node) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = dfs(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|start| dfs(start, edges, &mut Vec::new(), &mut done))
}

/// `"a", "b"`, or `(none defined)`.
fn list(items: &[&str]) -> String {
    if items.is_empty() {
        return "(none defined)".to_owned();
    }
    items
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
