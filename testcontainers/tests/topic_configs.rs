//! Topic-config sync against Apache Kafka's real configs: a source topic with non-default
//! `retention.ms`, `cleanup.policy=compact`, `max.message.bytes`, `min.compaction.lag.ms`,
//! `compression.type`, `segment.bytes` and `delete.retention.ms` gets them on the target
//! except the one `[flows.topic_configs] exclude` names; a config changed and one added on
//! the source later follow; partitions added on the source are added on the target and
//! replicate. With the default exclude list, `unclean.leader.election.enable` stays off the
//! target; a cycle (a topic with the target's prefix) and an excluded topic are never
//! created, and a topic created on the source while strait runs arrives. librdkafka reads
//! both sides, every partition, at the end.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use strait_client::{AlterConfigOp, Client, ClientConfig, ResourceType};
use strait_kafka_scenarios::kafka::{compare, wait_caught_up};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, runtime, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestRecord};

const TOPIC: &str = "cfg";
const TARGET: &str = "src.cfg";

/// The source topic's explicit configs.
const CONFIGS: &[(&str, &str)] = &[
    ("retention.ms", "3600000"),
    ("cleanup.policy", "compact"),
    ("max.message.bytes", "2097152"),
    ("min.compaction.lag.ms", "60000"),
    ("compression.type", "zstd"),
    ("segment.bytes", "10485760"),
    ("delete.retention.ms", "7200000"),
];

/// One source and one target for the binary; each test has its own topics and flow.
fn pair() -> &'static (Kafka, Kafka) {
    static PAIR: OnceLock<(Kafka, Kafka)> = OnceLock::new();
    PAIR.get_or_init(Kafka::pair)
}

/// Partition counts of every topic on the cluster.
fn topics(bootstrap: &str) -> BTreeMap<String, usize> {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let md = client.metadata(None).await.expect("metadata");
        md.topics
            .iter()
            .map(|(name, t)| (name.to_string(), t.partitions.len()))
            .collect()
    })
}

fn configs(bootstrap: &str, topic: &str) -> BTreeMap<String, String> {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let described = client
            .describe_configs(ResourceType::Topic, &[topic], None)
            .await
            .expect("describe_configs");
        described[0]
            .entries
            .iter()
            .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
            .collect()
    })
}

fn alter(bootstrap: &str, topic: &str, ops: &[AlterConfigOp]) {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        client
            .incremental_alter_configs(ResourceType::Topic, topic, ops)
            .await
            .expect("alter configs");
    })
}

fn grow(bootstrap: &str, partitions: i32) {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let results = client
            .create_partitions(&[(TOPIC, partitions)], Duration::from_secs(10))
            .await
            .expect("create partitions");
        assert!(
            results.iter().all(|(_, r)| r.is_ok()),
            "create partitions: {results:?}"
        );
    })
}

fn records(n: usize, partitions: i32, seed: u64) -> Vec<TestRecord> {
    DataGen::new(seed)
        .records(
            n,
            &RecordSpec {
                partition: None,
                ..RecordSpec::default()
            },
        )
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.with_partition(i as i32 % partitions))
        .collect()
}

fn produce(bootstrap: &str, topic: &str, records: &[TestRecord]) {
    let delivered =
        rdkafka::produce(bootstrap, topic, records, &ProduceOptions::default()).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "{delivered:?}");
}

#[test]
fn configs_follow_the_source_except_the_excluded_and_added_partitions_replicate() {
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, 2, CONFIGS).expect("topic");
    let first = records(200, 2, 1);
    produce(&src, TOPIC, &first);

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.topic_configs]
exclude = ["retention\\.ms"]
[flows.intervals]
topic_refresh = "1s"
topic_config_sync = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait_caught_up(
        (&src, TOPIC),
        (&dst, TARGET),
        2,
        Duration::from_secs(60),
        || log_tail(&log),
    );

    // Created with the source's configs, except the excluded retention.ms.
    let (s, t) = (configs(&src, TOPIC), configs(&dst, TARGET));
    for (name, value) in CONFIGS {
        assert_eq!(
            s.get(*name).map(String::as_str),
            Some(*value),
            "{name} on the source"
        );
        if *name == "retention.ms" {
            assert_ne!(
                t.get(*name).map(String::as_str),
                Some(*value),
                "the excluded {name} was copied"
            );
        } else {
            assert_eq!(t.get(*name), s.get(*name), "{name} on the target");
        }
    }

    // A change and an addition on the source follow; the excluded one still does not.
    alter(
        &src,
        TOPIC,
        &[
            AlterConfigOp::Set("max.message.bytes".into(), "3145728".into()),
            AlterConfigOp::Set("min.cleanable.dirty.ratio".into(), "0.2".into()),
            AlterConfigOp::Set("retention.ms".into(), "7200000".into()),
        ],
    );
    wait::until(
        "the changed configs on the target",
        Duration::from_secs(30),
        || {
            strait.assert_running();
            let t = configs(&dst, TARGET);
            t.get("max.message.bytes").map(String::as_str) == Some("3145728")
                && t.get("min.cleanable.dirty.ratio").map(String::as_str) == Some("0.2")
        },
        || format!("{:?}\n{}", configs(&dst, TARGET), log_tail(&log)),
    );
    assert_ne!(
        configs(&dst, TARGET)
            .get("retention.ms")
            .map(String::as_str),
        Some("7200000"),
        "the excluded retention.ms followed"
    );

    // Two partitions more on the source: on the target too, and they replicate.
    grow(&src, 4);
    let second = records(200, 4, 2);
    produce(&src, TOPIC, &second);
    wait_caught_up(
        (&src, TOPIC),
        (&dst, TARGET),
        4,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    let _ = process::stop(&mut strait, Duration::from_secs(30));

    let report = compare((&src, TOPIC), (&dst, TARGET), 4, 400);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
}

#[test]
fn default_excludes_cycles_and_excluded_topics_stay_off_and_a_new_topic_arrives() {
    let (source, target) = pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    // unclean.leader.election.enable is in the default exclude list.
    rdkafka::create_topic(
        &src,
        "dflt",
        1,
        &[
            ("retention.ms", "12345678"),
            ("unclean.leader.election.enable", "true"),
        ],
    )
    .expect("topic");
    // A topic that came from the target (its alias prefix): a cycle, never replicated.
    rdkafka::create_topic(&src, "dst.dflt", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "skip-dflt", 1, &[]).expect("topic");
    produce(&src, "dflt", &records(100, 1, 3));

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}name = "dflt"
[flows.topics]
include = ["dflt", "dst\\.dflt", "skip-dflt", "later-dflt"]
exclude = ["skip-.*"]
{SYNC_OFF}[flows.intervals]
topic_refresh = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&config, &log);
    wait_caught_up(
        (&src, "dflt"),
        (&dst, "src.dflt"),
        1,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    let t = configs(&dst, "src.dflt");
    assert_eq!(t.get("retention.ms").map(String::as_str), Some("12345678"));
    assert_eq!(
        t.get("unclean.leader.election.enable").map(String::as_str),
        Some("false"),
        "excluded by default"
    );

    // A topic created on the source while strait runs arrives with its partitions.
    rdkafka::create_topic(&src, "later-dflt", 2, &[]).expect("topic");
    produce(&src, "later-dflt", &records(100, 2, 4));
    wait_caught_up(
        (&src, "later-dflt"),
        (&dst, "src.later-dflt"),
        2,
        Duration::from_secs(60),
        || log_tail(&log),
    );
    strait.assert_running();
    let on_target = topics(&dst);
    assert_eq!(on_target.get("src.later-dflt"), Some(&2), "{on_target:?}");
    for absent in ["src.dst.dflt", "dst.dflt", "src.skip-dflt", "skip-dflt"] {
        assert!(!on_target.contains_key(absent), "{absent}: {on_target:?}");
    }
    let _ = process::stop(&mut strait, Duration::from_secs(30));
    let report = compare((&src, "dflt"), (&dst, "src.dflt"), 1, 100);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
    let report = compare((&src, "later-dflt"), (&dst, "src.later-dflt"), 2, 100);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));
    // The flow's state topic was created for a compacted log read at every start.
    let state = configs(&dst, "strait-state.dflt.internal");
    for (key, value) in strait_mirror::state::STATE_TOPIC_CONFIGS {
        assert_eq!(
            state.get(key).map(String::as_str),
            Some(value),
            "{key}: {state:?}"
        );
    }
}
