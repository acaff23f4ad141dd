//! `topics.start_position` as an RFC 3339 timestamp: a new partition starts at the first
//! record whose timestamp is at or after it (ListOffsets by timestamp). Strait checks the
//! broker's answer against the record it points at; Tansu 0.6 answers offset 0 for every
//! timestamp (librdkafka's `offsets_for_times` gets the same), so there the log is searched
//! by batch maxTimestamp instead (`replay::lookup`, shared with `strait replay`). Real
//! Tansu brokers, librdkafka as the reader.

use std::process::Output;

use strait_testkit::TansuCluster;
use strait_testkit::TestRecord;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};

mod common;

use common::command::{rfc3339, strait};

const TOPIC: &str = "events";
/// CreateTime of record `i`: one second apart from a fixed instant.
const BASE_MS: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z

fn values(bootstrap: &str, topic: &str) -> Vec<String> {
    rdkafka::consume(bootstrap, topic, &ConsumeOptions::default())
        .expect("consume")
        .into_iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn replicate_from(start: &str) -> (Output, Vec<String>) {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    let records: Vec<TestRecord> = (0..30)
        .map(|i| {
            TestRecord::new(format!("k{i}"), format!("v{i}"))
                .with_partition(0)
                .with_timestamp(BASE_MS + i * 1000)
        })
        .collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(4),
        ..ProduceOptions::default()
    };
    rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = two_cluster_flow(&src, &dst, "5s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"{TOPIC}\"]\nstart_position = \"{start}\"\n{SYNC_OFF}\
         [metrics]\nenabled = false\n"
    ));
    let path = dir.path().join("strait.toml");
    std::fs::write(&path, cfg).expect("config");
    let out = strait(&["run", "--once", "-c", path.to_str().expect("utf-8")]);
    assert_eq!(values(&src, TOPIC).len(), 30);
    (out, values(&dst, &format!("src.{TOPIC}")))
}

#[test]
fn a_timestamp_start_copies_exactly_the_records_from_that_time_on() {
    // Between record 14 (BASE + 14 s) and record 15: the first copied is v15.
    let (out, target) = replicate_from(&rfc3339(BASE_MS + 14_500));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let want: Vec<String> = (15..30).map(|i| format!("v{i}")).collect();
    assert_eq!(target, want, "{stderr}");
}

#[test]
fn a_timestamp_exactly_on_a_record_starts_at_that_record() {
    let (out, target) = replicate_from(&rfc3339(BASE_MS + 3_000));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let want: Vec<String> = (3..30).map(|i| format!("v{i}")).collect();
    assert_eq!(target, want, "{stderr}");
}

#[test]
fn an_invalid_start_position_is_a_config_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = two_cluster_flow("127.0.0.1:1", "127.0.0.1:2", "5s");
    cfg.push_str("[flows.topics]\nstart_position = \"yesterday\"\n");
    let path = dir.path().join("strait.toml");
    std::fs::write(&path, cfg).expect("config");
    let out = strait(&["config", "validate", "-c", path.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid start position \"yesterday\"") && stderr.contains("RFC 3339"),
        "{stderr}"
    );
}
