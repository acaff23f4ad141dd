//! The pure topic plan: given what exists on both clusters, what must be created, altered
//! or grown on the target, and which source topics are skipped and why. No I/O: it backs
//! both [`super::TopicSync`] and `strait plan`.

use std::collections::BTreeMap;
use std::fmt;

use crate::config::{Flow, TopicDecision};

/// A topic as one cluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicState {
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Marked internal by the broker (e.g. `__consumer_offsets`).
    pub internal: bool,
    /// Explicitly set (non-default) configs; `None` when they were not described, in
    /// which case configs are neither copied nor compared.
    pub configs: Option<BTreeMap<String, String>>,
}

/// Why a source topic is not replicated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Rejected by the flow's include/exclude lists.
    Filtered,
    /// Its name says it came from the target: replicating it would loop.
    Cycle,
    /// A broker-internal topic (`__*` or flagged internal).
    Internal,
    /// A Strait state topic (this flow's or another's).
    StraitState,
    /// One of MirrorMaker 2's own topics (offset syncs, checkpoints, Connect topics).
    Mm2Internal,
    /// A heartbeats topic while `sync.heartbeats` is off.
    HeartbeatsDisabled,
    /// Another source topic gets the same target name (a rename onto an existing name):
    /// neither is replicated, rather than two written into one.
    NameCollision,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Filtered => "rejected by the topic include/exclude lists",
            SkipReason::Cycle => "came from the target cluster (replicating it would loop)",
            SkipReason::Internal => "broker-internal topic",
            SkipReason::StraitState => "a Strait state topic",
            SkipReason::Mm2Internal => "a MirrorMaker 2 internal topic",
            SkipReason::HeartbeatsDisabled => "heartbeats topic and sync.heartbeats is off",
            SkipReason::NameCollision => {
                "another source topic gets the same target name (naming.rename): neither is replicated"
            }
        })
    }
}

/// A target topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopic {
    /// Source name.
    pub source_topic: String,
    /// Target name.
    pub target_topic: String,
    /// The source's partition count.
    pub partitions: i32,
    /// From the flow, or -1 for the target broker's default.
    pub replication_factor: i16,
    /// The source's configs that the flow copies.
    pub configs: BTreeMap<String, String>,
}

/// Config changes for an existing target topic (IncrementalAlterConfigs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigs {
    /// Source name.
    pub source_topic: String,
    /// Target name.
    pub target_topic: String,
    /// Keys whose value differs or is missing on the target: `(key, source value)`.
    pub set: Vec<(String, String)>,
    /// Keys set on the target but not (any more) on the source: reset to the default.
    pub delete: Vec<String>,
}

/// A target topic with fewer partitions than its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrowPartitions {
    /// Source name.
    pub source_topic: String,
    /// Target name.
    pub target_topic: String,
    /// The target's partition count now.
    pub from: i32,
    /// The source's partition count.
    pub to: i32,
}

/// A source topic the flow replicates, and how many of its partitions can be replicated
/// today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replicate {
    /// Source name.
    pub source_topic: String,
    /// Target name.
    pub target_topic: String,
    /// The source's partition count.
    pub source_partitions: i32,
    /// The target's partition count (`None` while it does not exist).
    pub target_partitions: Option<i32>,
}

/// What a refresh does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicPlan {
    /// Every replicated source topic, sorted by source name.
    pub replicate: Vec<Replicate>,
    /// Target topics to create.
    pub create: Vec<CreateTopic>,
    /// Target configs to change.
    pub alter_configs: Vec<AlterConfigs>,
    /// Target topics to grow.
    pub grow_partitions: Vec<GrowPartitions>,
    /// Source topics not replicated, and why.
    pub skipped: Vec<(String, SkipReason)>,
}

/// Topics no flow may replicate, whatever its lists say: broker internals, Strait's state
/// topics, MM2's own topics.
pub fn reserved(topic: &TopicState) -> Option<SkipReason> {
    let n = topic.name.as_str();
    if topic.internal || n.starts_with("__") {
        Some(SkipReason::Internal)
    } else if n.starts_with("strait-state.") && n.ends_with(".internal") {
        Some(SkipReason::StraitState)
    } else if n.starts_with("mm2-") || n.ends_with("checkpoints.internal") {
        Some(SkipReason::Mm2Internal)
    } else {
        None
    }
}

/// The plan for `flow` given the `source` and `target` topics (any order).
pub fn plan(source: &[TopicState], target: &[TopicState], flow: &Flow) -> TopicPlan {
    let targets: BTreeMap<&str, &TopicState> =
        target.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut out = TopicPlan::default();
    for (s, decision) in decide_all(source, flow) {
        let target_topic = match decision {
            Ok(t) => t,
            Err(reason) => {
                out.skipped.push((s.name.clone(), reason));
                continue;
            }
        };
        let existing = targets.get(target_topic.as_str());
        out.replicate.push(Replicate {
            source_topic: s.name.clone(),
            target_topic: target_topic.clone(),
            source_partitions: s.partitions,
            target_partitions: existing.map(|t| t.partitions),
        });
        let Some(t) = existing else {
            out.create.push(CreateTopic {
                source_topic: s.name.clone(),
                target_topic,
                partitions: s.partitions,
                replication_factor: flow.replication_factor.unwrap_or(-1),
                configs: synced(s.configs.as_ref(), flow),
            });
            continue;
        };
        if t.partitions < s.partitions {
            out.grow_partitions.push(GrowPartitions {
                source_topic: s.name.clone(),
                target_topic: target_topic.clone(),
                from: t.partitions,
                to: s.partitions,
            });
        }
        if let Some(alter) = alter_configs(s, t, target_topic, flow) {
            out.alter_configs.push(alter);
        }
    }
    out
}

/// Every source topic, by name, with its target name or why it is skipped; topics whose
/// target names collide are all skipped.
fn decide_all<'a>(
    source: &'a [TopicState],
    flow: &Flow,
) -> Vec<(&'a TopicState, Result<String, SkipReason>)> {
    let mut sources: Vec<&TopicState> = source.iter().collect();
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    let decided: Vec<(&TopicState, Result<String, SkipReason>)> =
        sources.into_iter().map(|s| (s, decide(s, flow))).collect();
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, d) in &decided {
        if let Ok(t) = d {
            *names.entry(t.as_str()).or_default() += 1;
        }
    }
    let collided: Vec<bool> = decided
        .iter()
        .map(|(_, d)| d.as_ref().is_ok_and(|t| names[t.as_str()] > 1))
        .collect();
    decided
        .into_iter()
        .zip(collided)
        .map(|((s, decision), collided)| {
            let decision = if collided {
                Err(SkipReason::NameCollision)
            } else {
                decision
            };
            (s, decision)
        })
        .collect()
}

/// The synced configs `t` must change to match `s` (both known), if any.
fn alter_configs(
    s: &TopicState,
    t: &TopicState,
    target_topic: String,
    flow: &Flow,
) -> Option<AlterConfigs> {
    let (Some(_), Some(_)) = (&s.configs, &t.configs) else {
        return None;
    };
    let want = synced(s.configs.as_ref(), flow);
    let have = synced(t.configs.as_ref(), flow);
    let set: Vec<(String, String)> = want
        .iter()
        .filter(|(k, v)| have.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let delete: Vec<String> = have
        .keys()
        .filter(|k| !want.contains_key(*k))
        .cloned()
        .collect();
    (!set.is_empty() || !delete.is_empty()).then(|| AlterConfigs {
        source_topic: s.name.clone(),
        target_topic,
        set,
        delete,
    })
}

/// The target name of `topic`, or why it is skipped.
fn decide(topic: &TopicState, flow: &Flow) -> Result<String, SkipReason> {
    // Reserved names first: their reason is the most telling (`mm2-offset-syncs.b.internal`
    // would otherwise read as a cycle through a cluster called `mm2-offset-syncs`).
    if let Some(reason) = reserved(topic) {
        return Err(reason);
    }
    match flow.topic_decision(&topic.name) {
        TopicDecision::Replicate { target_topic } => Ok(target_topic),
        TopicDecision::Filtered => Err(SkipReason::Filtered),
        TopicDecision::Cycle => Err(SkipReason::Cycle),
        TopicDecision::HeartbeatsDisabled => Err(SkipReason::HeartbeatsDisabled),
        TopicDecision::StateTopic => Err(SkipReason::StraitState),
    }
}

/// The configs of `configs` that the flow copies; excluded keys are never compared, so
/// they are never touched on the target.
fn synced(configs: Option<&BTreeMap<String, String>>, flow: &Flow) -> BTreeMap<String, String> {
    configs
        .into_iter()
        .flatten()
        .filter(|(k, _)| flow.syncs_topic_config(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests;
