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
    let f = flow("[flows.naming]\npolicy = \"identity\"\n[flows.topics]\nreplication_factor = 3");
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
