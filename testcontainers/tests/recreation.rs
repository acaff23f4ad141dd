//! A source topic deleted and created again under the same name while `strait run`
//! replicates it, on Apache Kafka. The topic refresh is an hour away, so only the fetchers
//! can notice: they fetch by topic id (Fetch v13), Kafka refuses the old id
//! (UNKNOWN_TOPIC_ID), the router finds the topic under a new id and the flow applies
//! `on_topic_recreation`:
//!
//! - `"fail"` (the default): the process stops with the incident, and nothing of the new
//!   topic reaches the target (fetching by name would read the new topic at the old
//!   position and append what lies past it);
//! - `"skip"`: every partition restarts its map and copies the new topic from its start,
//!   after what was copied of the old one, each record once and in order.
//!
//! librdkafka writes the source and reads the target.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process};
use strait_testkit::TestRecord;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};

const PARTITIONS: i32 = 2;
/// Records per partition before the re-creation.
const OLD: usize = 30;
/// Records per partition of the new topic: more than the old position, so a fetch by name
/// at that position would find some.
const NEW: usize = 50;

fn config(
    dir: &std::path::Path,
    src: &str,
    dst: &str,
    topic: &str,
    policy: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"{}[flows.topics]
include = ["{topic}"]
{policy}
{SYNC_OFF}[flows.intervals]
topic_refresh = "1h"
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "5s"),
    );
    let path = dir.join("strait.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// `per` records `prefix-p-i` on each partition p.
fn records(prefix: &str, per: usize) -> Vec<TestRecord> {
    (0..PARTITIONS)
        .flat_map(|p| {
            (0..per).map(move |i| {
                TestRecord::new(format!("k{i}"), format!("{prefix}-{p}-{i:03}")).with_partition(p)
            })
        })
        .collect()
}

fn produce(bootstrap: &str, topic: &str, recs: &[TestRecord]) {
    let d = rdkafka::produce(bootstrap, topic, recs, &ProduceOptions::default()).expect("produce");
    assert!(d.iter().all(|d| d.error.is_none()), "source writes");
}

/// Each partition's values in offset order, read with librdkafka (empty while the topic
/// does not exist).
fn read(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<String>> {
    let got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions {
            max_time: Duration::from_secs(30),
            ..ConsumeOptions::until_idle(Duration::from_secs(1))
        },
    )
    .unwrap_or_default();
    let mut by: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in got {
        let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
        by.entry(r.partition).or_default().push(v);
    }
    by
}

/// `before`, then `prefix-p-i` for i in 0..n on each partition.
fn expected(
    mut before: BTreeMap<i32, Vec<String>>,
    prefix: &str,
    n: usize,
) -> BTreeMap<i32, Vec<String>> {
    for p in 0..PARTITIONS {
        before
            .entry(p)
            .or_default()
            .extend((0..n).map(|i| format!("{prefix}-{p}-{i:03}")));
    }
    before
}

/// Waits (at most 60 s) until every partition of the target holds as many records as
/// `want`'s; returns what it holds then.
fn wait_for(
    dst: &str,
    topic: &str,
    want: &BTreeMap<i32, Vec<String>>,
) -> BTreeMap<i32, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = read(dst, topic);
        let full = want
            .iter()
            .all(|(p, w)| got.get(p).is_some_and(|g| g.len() >= w.len()));
        if full || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Deletes `topic` with strait-client (Kafka's DeleteTopics) and creates it again, waiting
/// out Kafka's asynchronous deletion.
fn recreate(bootstrap: &str, topic: &str) {
    let runtime = strait_kafka_scenarios::runtime();
    runtime.block_on(async {
        let client = strait_client::Client::connect(strait_client::ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        for (name, r) in client
            .delete_topics(&[topic], Duration::from_secs(10))
            .await
            .expect("delete topics")
        {
            r.unwrap_or_else(|e| panic!("delete {name}: {e}"));
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while rdkafka::create_topic(bootstrap, topic, PARTITIONS, &[]).is_err() {
        assert!(
            Instant::now() < deadline,
            "source topic {topic} not re-created"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The old topic replicated by a running `strait run`, then deleted, created again and
/// filled with `NEW` other records per partition.
fn recreated_while_running(
    kafka: &(Kafka, Kafka),
    dir: &std::path::Path,
    topic: &str,
    policy: &str,
) -> (
    process::Strait,
    std::path::PathBuf,
    BTreeMap<i32, Vec<String>>,
) {
    let (src, dst) = (kafka.0.bootstrap(), kafka.1.bootstrap());
    rdkafka::create_topic(&src, topic, PARTITIONS, &[]).expect("topic");
    produce(&src, topic, &records("old", OLD));
    let config = config(dir, &src, &dst, topic, policy);
    let log = dir.join("strait.log");
    let strait = process::start(&config, &log);
    let old = expected(BTreeMap::new(), "old", OLD);
    let got = wait_for(&dst, &format!("src.{topic}"), &old);
    assert_eq!(
        got,
        old,
        "the old topic is replicated first\n{}",
        log_tail(&log)
    );
    recreate(&src, topic);
    produce(&src, topic, &records("new", NEW));
    (strait, log, old)
}

#[test]
fn a_topic_recreated_while_replicating_stops_the_flow_under_fail_and_nothing_new_is_copied() {
    let kafka = Kafka::pair();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut strait, log, old) = recreated_while_running(&kafka, dir.path(), "rc-fail", "");
    let (status, _) = strait.wait_exit(Duration::from_secs(60));
    let status =
        status.unwrap_or_else(|| panic!("the flow did not stop within 60 s\n{}", log_tail(&log)));
    assert!(
        !status.success(),
        "a stopped flow exits non-zero\n{}",
        log_tail(&log)
    );
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.contains("topic re-creation") && text.contains("on_topic_recreation = \"fail\""),
        "the error names the incident and the policy\n{}",
        log_tail(&log)
    );
    let got = read(&kafka.1.bootstrap(), "src.rc-fail");
    assert_eq!(got, old, "the target holds the old topic's records only");
}

#[test]
fn a_topic_recreated_while_replicating_is_copied_from_its_start_under_skip() {
    let kafka = Kafka::pair();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut strait, log, old) = recreated_while_running(
        &kafka,
        dir.path(),
        "rc-skip",
        "on_topic_recreation = \"skip\"",
    );
    let want = expected(old, "new", NEW);
    let got = wait_for(&kafka.1.bootstrap(), "src.rc-skip", &want);
    strait.assert_running();
    let status = process::stop(&mut strait, Duration::from_secs(30));
    assert_eq!(
        got,
        want,
        "per partition: the old records, then the new topic from its start, once each\n{}",
        log_tail(&log)
    );
    assert!(status.success(), "clean stop: {status}\n{}", log_tail(&log));
}
