//! Consumer-group offsets against Apache Kafka, where aborted records and transaction
//! markers take source offsets that the target does not have (Strait copies neither), so
//! source and target offsets differ and only an exact translation points a group at the
//! same record. Per partition the source holds: 20 plain records (offsets 0–19), a
//! committed transaction (20–39, marker 40), an aborted one (41–60, marker 61), 20 plain
//! (62–81) and a committed transaction (82–101, marker 102). Groups committed inside a run,
//! on the commit marker, inside the aborted transaction, right after it and at the log end
//! are synced by `strait run --once`; librdkafka then checks on both clusters that each
//! group's next record is the same record, and that a group at the source's end is at the
//! target's end.

use std::time::Duration;

use strait_client::IsolationLevel;
use strait_kafka_scenarios::history::{next_record, produce_labelled};
use strait_kafka_scenarios::kafka::ends;
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process};
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{self, Transaction};

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 2;
/// (group, committed source offset in every partition).
const GROUPS: [(&str, i64); 5] = [
    ("g-inside-a-run", 10),
    ("g-on-a-commit-marker", 40),
    ("g-inside-the-aborted", 45),
    ("g-after-the-abort-marker", 62),
    ("g-at-the-end", 103),
];

#[test]
fn group_offsets_are_translated_to_the_same_next_record() {
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-a", Transaction::None);
    produce_labelled(&src, TOPIC, PARTITIONS, "commit-1", Transaction::Commit);
    produce_labelled(&src, TOPIC, PARTITIONS, "abort-1", Transaction::Abort);
    produce_labelled(&src, TOPIC, PARTITIONS, "plain-b", Transaction::None);
    produce_labelled(&src, TOPIC, PARTITIONS, "commit-2", Transaction::Commit);
    let end = ends(&src, TOPIC, PARTITIONS, IsolationLevel::ReadCommitted).expect("source ends");
    assert!(
        end.values().all(|e| *e == 103),
        "the layout the groups assume: {end:?}"
    );
    for (group, offset) in GROUPS {
        let offsets: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, offset)).collect();
        rdkafka::commit_group_offsets(&src, group, TOPIC, &offsets).expect("commit");
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.groups]
include = ["g-.*"]
[flows.sync]
group_offsets = true
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
        log_tail(&log)
    );

    let target_topic = format!("src.{TOPIC}");
    let target_end = ends(
        &dst,
        &target_topic,
        PARTITIONS,
        IsolationLevel::ReadUncommitted,
    )
    .expect("target ends");
    assert!(
        target_end.values().all(|e| *e == 80),
        "80 committed records each: {target_end:?}"
    );
    for (group, offset) in GROUPS {
        let committed = rdkafka::list_group_offsets(&dst, group).expect("list group offsets");
        for p in 0..PARTITIONS {
            let t = committed
                .iter()
                .find(|o| o.topic == target_topic && o.partition == p)
                .map(|o| o.offset)
                .unwrap_or_else(|| {
                    panic!(
                        "{group}: no offset for {target_topic}-{p}: {committed:?}\n{}",
                        log_tail(&log)
                    )
                });
            match next_record(&src, TOPIC, p, offset) {
                None => assert_eq!(t, target_end[&p], "{group}-{p}: at the end on both sides"),
                Some((_, value)) => {
                    let at = next_record(&dst, &target_topic, p, t);
                    assert_eq!(
                        at,
                        Some((t, value.clone())),
                        "{group}-{p}: source {offset} reads {value} next; target {t} must too"
                    );
                }
            }
        }
    }
}
