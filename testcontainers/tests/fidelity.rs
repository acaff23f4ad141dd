//! Fidelity against Apache Kafka: five source topics of different shapes (partitions, every
//! codec: none, lz4, zstd, gzip and snappy, cleanup policies, explicit topic configs) with
//! keys, headers (duplicate names, null values), explicit timestamps and the testkit's edge
//! cases, replicated by
//! `strait run --once` to a second Kafka. librdkafka reads both sides: every partition
//! holds the same records in the same order, byte for byte, with the same timestamps, and
//! the target topics carry the source's topic configs.

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::{Client, ClientConfig, ResourceType};
use strait_kafka_scenarios::{Kafka, process, runtime};
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{self, Codec, ConsumeOptions, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestRecord};

/// Explicit topic configs: (name, value).
type Configs = &'static [(&'static str, &'static str)];

/// (topic, partitions, codec, topic configs): every codec Kafka has.
const TOPICS: [(&str, i32, Codec, Configs); 5] = [
    (
        "orders",
        3,
        Codec::None,
        &[("retention.ms", "86400000"), ("segment.bytes", "10485760")],
    ),
    ("events", 2, Codec::Lz4, &[("max.message.bytes", "2097152")]),
    (
        "accounts",
        1,
        Codec::Zstd,
        &[
            ("cleanup.policy", "compact"),
            ("min.compaction.lag.ms", "60000"),
        ],
    ),
    (
        "payments",
        2,
        Codec::Gzip,
        &[("compression.type", "producer")],
    ),
    (
        "clicks",
        2,
        Codec::Snappy,
        &[("retention.bytes", "1073741824")],
    ),
];

fn records(topic: &str, partitions: i32, seed: u64) -> Vec<TestRecord> {
    let mut g = DataGen::new(seed);
    let spec = RecordSpec {
        headers: 2,
        partition: None,
        ..RecordSpec::default()
    };
    let mut out: Vec<TestRecord> = g
        .records(300, &spec)
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.with_partition(i as i32 % partitions))
        .collect();
    if topic == "orders" {
        // Null and empty keys, tombstones, duplicate and null headers, 100 KiB, timestamps
        // going backwards; a compacted topic would refuse the null key.
        out.extend(g.edge_cases(0));
    }
    out
}

/// Per partition, the records in offset order (partition, key, value, headers, timestamp):
/// every partition read to its end, so a duplicate or a foreign record is counted too.
fn read(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<TestRecord>> {
    let options = ConsumeOptions {
        to_end: true,
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::default()
    };
    let mut got = rdkafka::consume(bootstrap, topic, &options)
        .unwrap_or_else(|e| panic!("consume {topic}: {e}"));
    got.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<TestRecord>> = BTreeMap::new();
    for r in got {
        out.entry(r.partition).or_default().push(r.to_test_record());
    }
    out
}

fn topic_configs(bootstrap: &str, topic: &str) -> BTreeMap<String, String> {
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

#[test]
fn five_topics_in_every_codec_arrive_byte_for_byte_with_their_configs() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let mut produced = BTreeMap::new();
    for (seed, (topic, partitions, codec, configs)) in TOPICS.iter().enumerate() {
        rdkafka::create_topic(&src, topic, *partitions, configs).expect("create topic");
        let recs = records(topic, *partitions, seed as u64 + 1);
        let opts = ProduceOptions {
            codec: *codec,
            ..ProduceOptions::default()
        };
        let delivered = rdkafka::produce(&src, topic, &recs, &opts).expect("produce");
        assert!(delivered.iter().all(|d| d.error.is_none()), "{delivered:?}");
        produced.insert(*topic, recs.len());
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["orders", "events", "accounts", "payments", "clicks"]
[flows.sync]
topic_configs = true
group_offsets = false
heartbeats = false
checkpoints = false
[metrics]
enabled = false
"#,
        two_cluster_flow(&src, &dst, "10s")
    );
    std::fs::write(&config, text).expect("write config");
    let log = dir.path().join("strait.log");
    let status = process::once(&config, &log, Duration::from_secs(120));
    assert!(
        status.success(),
        "strait run --once: {status}\n{}",
        strait_kafka_scenarios::process::log_tail(&log)
    );

    for (topic, _, _, configs) in TOPICS {
        let n = produced[topic];
        let want = read(&src, topic);
        let got = read(&dst, &format!("src.{topic}"));
        assert_eq!(
            want.values().map(Vec::len).sum::<usize>(),
            n,
            "{topic}: source"
        );
        for (p, records) in &want {
            let copied = got.get(p).map_or(&[][..], Vec::as_slice);
            assert_eq!(copied.len(), records.len(), "{topic}-{p}: record count");
            for (i, (w, g)) in records.iter().zip(copied).enumerate() {
                assert_eq!(w, g, "{topic}-{p}: record {i} differs");
            }
        }
        assert_eq!(got.len(), want.len(), "{topic}: partitions with data");
        let (src_cfg, dst_cfg) = (
            topic_configs(&src, topic),
            topic_configs(&dst, &format!("src.{topic}")),
        );
        for (name, value) in configs {
            assert_eq!(
                src_cfg.get(*name).map(String::as_str),
                Some(*value),
                "{topic}: {name} on the source"
            );
            assert_eq!(
                dst_cfg.get(*name),
                src_cfg.get(*name),
                "{topic}: {name} copied"
            );
        }
    }
}
