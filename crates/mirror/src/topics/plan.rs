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
    let mut out = TopicPlan::default();
    for ((s, decision), collided) in decided.into_iter().zip(collided) {
        let decision = if collided {
            Err(SkipReason::NameCollision)
        } else {
            decision
        };
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
        if let (Some(_), Some(_)) = (&s.configs, &t.configs) {
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
            if !set.is_empty() || !delete.is_empty() {
                out.alter_configs.push(AlterConfigs {
                    source_topic: s.name.clone(),
                    target_topic,
                    set,
                    delete,
                });
            }
        }
    }
    out
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
mod tests {
    use super::*;
    use crate::config::load_str;

    fn flow(extra: &str) -> Flow {
        let text = format!(
            r#"
[clusters.src]
bootstrap_servers = "localhost:1"
[clusters.dst]
bootstrap_servers = "localhost:2"
[[flows]]
source = "src"
target = "dst"
{extra}
"#
        );
        let cfg = load_str(&text, "test.toml", &|_| None).expect("valid test config");
        cfg.flows.into_iter().next().expect("one flow")
    }

    fn topic(name: &str, partitions: i32, configs: &[(&str, &str)]) -> TopicState {
        TopicState {
            name: name.into(),
            partitions,
            internal: false,
            configs: Some(
                configs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
        }
    }

    fn skipped(p: &TopicPlan, name: &str) -> Option<SkipReason> {
        p.skipped.iter().find(|(n, _)| n == name).map(|(_, r)| *r)
    }

    #[test]
    fn renamed_topics_get_their_new_name_through_the_policy() {
        let f = flow("[flows.naming.rename]\norders = \"orders-v2\"\n");
        let p = plan(
            &[topic("orders", 2, &[]), topic("payments", 1, &[])],
            &[],
            &f,
        );
        let names: Vec<(&str, &str)> = p
            .create
            .iter()
            .map(|c| (c.source_topic.as_str(), c.target_topic.as_str()))
            .collect();
        assert_eq!(
            names,
            [("orders", "src.orders-v2"), ("payments", "src.payments")]
        );
    }

    #[test]
    fn two_sources_onto_one_target_name_replicate_neither() {
        // `orders` renamed onto the name `legacy` already has: never one target for both.
        let f = flow("[flows.naming]\npolicy = \"identity\"\nrename = { orders = \"legacy\" }\n");
        let p = plan(
            &[
                topic("orders", 1, &[]),
                topic("legacy", 1, &[]),
                topic("other", 1, &[]),
            ],
            &[],
            &f,
        );
        assert_eq!(skipped(&p, "orders"), Some(SkipReason::NameCollision));
        assert_eq!(skipped(&p, "legacy"), Some(SkipReason::NameCollision));
        assert_eq!(p.create.len(), 1);
        assert_eq!(p.create[0].target_topic, "other");
    }

    #[test]
    fn creates_missing_topics_with_partitions_and_copied_configs() {
        let f = flow("");
        let src = [topic(
            "orders",
            3,
            &[("retention.ms", "1000"), ("min.insync.replicas", "2")],
        )];
        let p = plan(&src, &[], &f);
        assert_eq!(
            p.create,
            vec![CreateTopic {
                source_topic: "orders".into(),
                target_topic: "src.orders".into(),
                partitions: 3,
                replication_factor: -1,
                configs: [("retention.ms".to_string(), "1000".to_string())].into(),
            }],
            "prefix naming, min.insync.replicas is excluded by default"
        );
        assert_eq!(p.replicate[0].target_partitions, None);
    }

    #[test]
    fn identity_naming_and_replication_factor() {
        let f =
            flow("[flows.naming]\npolicy = \"identity\"\n[flows.topics]\nreplication_factor = 3");
        let p = plan(&[topic("orders", 1, &[])], &[], &f);
        assert_eq!(p.create[0].target_topic, "orders");
        assert_eq!(p.create[0].replication_factor, 3);
    }

    #[test]
    fn filters_cycles_and_reserved_topics_are_skipped_with_reasons() {
        let f = flow("[flows.topics]\ninclude = [\".*\"]\nexclude = [\"secret.*\"]");
        let mut internal = topic("offsets", 1, &[]);
        internal.internal = true;
        let src = [
            topic("secret-x", 1, &[]),
            topic("dst.orders", 1, &[]),
            topic("__consumer_offsets", 50, &[]),
            internal,
            topic("strait-state.src-to-dst.internal", 1, &[]),
            topic("strait-state.other.internal", 1, &[]),
            topic("mm2-offset-syncs.dst.internal", 1, &[]),
            topic("heartbeats", 1, &[]),
            topic("ok", 1, &[]),
        ];
        let p = plan(&src, &[], &f);
        assert_eq!(skipped(&p, "secret-x"), Some(SkipReason::Filtered));
        assert_eq!(skipped(&p, "dst.orders"), Some(SkipReason::Cycle));
        assert_eq!(
            skipped(&p, "__consumer_offsets"),
            Some(SkipReason::Internal)
        );
        assert_eq!(skipped(&p, "offsets"), Some(SkipReason::Internal));
        assert_eq!(
            skipped(&p, "strait-state.src-to-dst.internal"),
            Some(SkipReason::StraitState)
        );
        assert_eq!(
            skipped(&p, "strait-state.other.internal"),
            Some(SkipReason::StraitState)
        );
        assert_eq!(
            skipped(&p, "mm2-offset-syncs.dst.internal"),
            Some(SkipReason::Mm2Internal)
        );
        assert_eq!(
            skipped(&p, "heartbeats"),
            None,
            "heartbeats replicate by default"
        );
        let created: Vec<&str> = p.create.iter().map(|c| c.target_topic.as_str()).collect();
        assert_eq!(created, ["src.heartbeats", "src.ok"]);
    }

    #[test]
    fn reserved_topics_stay_out_even_when_the_lists_accept_everything() {
        let f = flow("[flows.topics]\nexclude = []");
        let src = [
            topic("__consumer_offsets", 1, &[]),
            topic("src.checkpoints.internal", 1, &[]),
            topic("strait-state.x.internal", 1, &[]),
        ];
        let p = plan(&src, &[], &f);
        assert!(p.create.is_empty(), "{p:?}");
        assert_eq!(p.skipped.len(), 3);
    }

    #[test]
    fn config_diff_sets_and_deletes_only_synced_keys() {
        let f = flow("[flows.topic_configs]\nexclude = [\"segment\\\\.bytes\"]");
        let src = [topic(
            "t",
            2,
            &[("retention.ms", "2000"), ("cleanup.policy", "delete")],
        )];
        let dst = [topic(
            "src.t",
            2,
            &[
                ("retention.ms", "1000"),
                ("cleanup.policy", "delete"),
                ("max.message.bytes", "10"),
                ("segment.bytes", "99"),
            ],
        )];
        let p = plan(&src, &dst, &f);
        assert!(p.create.is_empty() && p.grow_partitions.is_empty());
        assert_eq!(
            p.alter_configs,
            vec![AlterConfigs {
                source_topic: "t".into(),
                target_topic: "src.t".into(),
                set: vec![("retention.ms".into(), "2000".into())],
                delete: vec!["max.message.bytes".into()],
            }],
            "segment.bytes is excluded: never touched"
        );
    }

    #[test]
    fn equal_configs_or_undescribed_configs_change_nothing() {
        let f = flow("");
        let src = [topic("t", 2, &[("retention.ms", "1")])];
        let same = [topic("src.t", 2, &[("retention.ms", "1")])];
        assert_eq!(plan(&src, &same, &f).alter_configs, vec![]);
        let mut unknown = same[0].clone();
        unknown.configs = None;
        assert_eq!(plan(&src, &[unknown], &f).alter_configs, vec![]);
    }

    #[test]
    fn config_sync_off_copies_nothing() {
        let f = flow("[flows.sync]\ntopic_configs = false");
        let src = [topic("t", 1, &[("retention.ms", "1")])];
        let p = plan(&src, &[topic("src.t", 1, &[("retention.ms", "2")])], &f);
        assert!(p.alter_configs.is_empty());
        assert!(plan(&src, &[], &f).create[0].configs.is_empty());
    }

    #[test]
    fn grows_but_never_shrinks_partitions() {
        let f = flow("");
        let p = plan(&[topic("t", 4, &[])], &[topic("src.t", 2, &[])], &f);
        assert_eq!(
            p.grow_partitions,
            vec![GrowPartitions {
                source_topic: "t".into(),
                target_topic: "src.t".into(),
                from: 2,
                to: 4,
            }]
        );
        let p = plan(&[topic("t", 2, &[])], &[topic("src.t", 4, &[])], &f);
        assert!(p.grow_partitions.is_empty());
        assert_eq!(p.replicate[0].target_partitions, Some(4));
    }
}
