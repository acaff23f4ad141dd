//! Topic sync against two real Tansu brokers: creation with partitions and configs,
//! naming, filters, cycles, config propagation, discovery, and partition growth on a
//! broker without CreatePartitions.

mod control;

use std::collections::BTreeMap;
use std::time::Duration;

use control::{Pair, create, produce};
use strait_client::{AlterConfigOp, Client, ResourceType};
use strait_mirror::Metrics;
use strait_mirror::topics::TopicSync;

async fn configs(c: &Client, topic: &str) -> BTreeMap<String, String> {
    let r = c
        .describe_configs(ResourceType::Topic, &[topic], None)
        .await
        .expect("describe_configs");
    r[0].entries
        .iter()
        .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
        .collect()
}

async fn partitions(c: &Client, topic: &str) -> Option<usize> {
    let m = c.metadata(None).await.expect("metadata");
    m.topics.get(topic).map(|t| t.partitions.len())
}

#[tokio::test]
async fn prefix_naming_configs_filters_cycles_config_changes_and_new_topics() {
    let pair = Pair::start().await;
    let (src, dst) = (&pair.source, &pair.target);
    create(
        src,
        "orders",
        3,
        &[("retention.ms", "12345"), ("min.insync.replicas", "1")],
    )
    .await;
    create(src, "target.orders", 1, &[]).await; // came from the target: a cycle
    create(src, "skip-me", 1, &[]).await;
    let flow = pair.flow(
        "[flows.topics]\nexclude = [\"skip-.*\"]\n[flows.intervals]\ntopic_config_sync = \"100ms\"",
    );
    let metrics = Metrics::new();
    let mut sync = TopicSync::new(&flow, src.clone(), dst.clone(), metrics.clone());

    let got = sync.refresh().await.expect("refresh");
    let names: Vec<(&str, &str, i32)> = got
        .iter()
        .map(|r| {
            (
                r.source_topic.as_str(),
                r.target_topic.as_str(),
                r.partitions,
            )
        })
        .collect();
    assert_eq!(names, [("orders", "source.orders", 3)]);
    let src_id = src.metadata(None).await.unwrap().topics["orders"].id;
    assert_eq!(got[0].topic_id, src_id, "the source topic id");
    assert_eq!(partitions(dst, "source.orders").await, Some(3));
    let cfg = configs(dst, "source.orders").await;
    assert_eq!(cfg.get("retention.ms").map(String::as_str), Some("12345"));
    assert!(
        !cfg.contains_key("min.insync.replicas"),
        "excluded by default: {cfg:?}"
    );
    for absent in [
        "source.target.orders",
        "target.orders",
        "source.skip-me",
        "skip-me",
    ] {
        assert_eq!(partitions(dst, absent).await, None, "{absent}");
    }
    assert!(
        metrics
            .render()
            .contains("strait_topics_created_total{flow=\"source-to-target\"} 1")
    );

    // A config change and a new topic on the source reach the target at the next refresh.
    src.incremental_alter_configs(
        ResourceType::Topic,
        "orders",
        &[
            AlterConfigOp::Set("retention.ms".into(), "999".into()),
            AlterConfigOp::Set("max.message.bytes".into(), "65536".into()),
        ],
    )
    .await
    .expect("alter source");
    create(src, "later", 2, &[]).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let got = sync.refresh().await.expect("refresh");
    assert_eq!(got.len(), 2, "{got:?}");
    let cfg = configs(dst, "source.orders").await;
    assert_eq!(cfg.get("retention.ms").map(String::as_str), Some("999"));
    assert_eq!(
        cfg.get("max.message.bytes").map(String::as_str),
        Some("65536")
    );
    assert!(
        !cfg.contains_key("min.insync.replicas"),
        "still never touched"
    );
    assert_eq!(partitions(dst, "source.later").await, Some(2));
}

#[tokio::test]
async fn identity_naming_with_an_include_list() {
    let pair = Pair::start().await;
    let (src, dst) = (&pair.source, &pair.target);
    create(src, "keep-a", 2, &[("cleanup.policy", "compact")]).await;
    create(src, "drop", 1, &[]).await;
    let flow =
        pair.flow("[flows.naming]\npolicy = \"identity\"\n[flows.topics]\ninclude = [\"keep-.*\"]");
    let mut sync = TopicSync::new(&flow, src.clone(), dst.clone(), Metrics::new());
    let got = sync.refresh().await.expect("refresh");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_topic, "keep-a");
    assert_eq!(partitions(dst, "keep-a").await, Some(2));
    assert_eq!(partitions(dst, "drop").await, None);
    assert_eq!(
        configs(dst, "keep-a")
            .await
            .get("cleanup.policy")
            .map(String::as_str),
        Some("compact")
    );
}

#[tokio::test]
async fn partition_growth_without_create_partitions_is_an_error_and_a_metric() {
    let pair = Pair::start().await;
    let (src, dst) = (&pair.source, &pair.target);
    // Tansu cannot grow a topic, so the "grown" source is built up front: the source has 3
    // partitions, the target topic already exists with 1.
    create(src, "grow", 3, &[]).await;
    create(dst, "source.grow", 1, &[]).await;
    let flow = pair.flow("");
    let metrics = Metrics::new();
    let mut sync = TopicSync::new(&flow, src.clone(), dst.clone(), metrics.clone());
    let got = sync.refresh().await.expect("refresh still succeeds");
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].partitions, 1,
        "only the existing target partition replicates"
    );
    let text = metrics.render();
    assert!(
        text.contains(
            "strait_incidents_total{flow=\"source-to-target\",topic=\"grow\",partition=\"-1\",kind=\"partition_growth_unsupported\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("strait_topic_sync_failures_total{flow=\"source-to-target\"} 1"),
        "{text}"
    );
    // The existing partition keeps working.
    assert!(produce(dst, "source.grow", &["x".to_owned()]).await >= 0);
    // Reported once, not at every refresh.
    sync.refresh().await.expect("refresh");
    assert!(
        metrics
            .render()
            .contains("strait_topic_sync_failures_total{flow=\"source-to-target\"} 1")
    );
}
