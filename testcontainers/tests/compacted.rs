//! A compacted source topic with offset gaps, against Apache Kafka's log cleaner: keys are
//! written over and over with segments rolling every 100 ms and a cleaner that runs every
//! 500 ms at a dirty ratio of 0.01, until librdkafka sees gaps in the source's offsets and
//! the cleaner has settled. `strait run --once` then replicates it: the target holds exactly
//! the surviving records, in order, and a group committed inside a gap on the source is
//! translated to the next surviving record on the target. `strait verify` agrees: every
//! record the map pairs matches, and the group's target position is proven by its record.

use std::time::{Duration, Instant};

use strait_kafka_scenarios::kafka::compare;
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process};
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::kafka::KafkaOptions;
use strait_testkit::rdkafka::{self, ConsumeOptions, ConsumedRecord, ProduceOptions};

const TOPIC: &str = "compacted";
const TARGET: &str = "src.compacted";
const KEYS: usize = 10;
const ROUNDS: usize = 8;
const PER_ROUND: usize = 50;

/// The surviving records of partition 0, in offset order.
fn read(bootstrap: &str, topic: &str) -> Vec<ConsumedRecord> {
    let mut got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions::until_idle(Duration::from_secs(3)),
    )
    .unwrap_or_else(|e| panic!("consume {topic}: {e}"));
    got.sort_by_key(|r| r.offset);
    got
}

fn offsets(records: &[ConsumedRecord]) -> Vec<i64> {
    records.iter().map(|r| r.offset).collect()
}

#[test]
fn surviving_records_arrive_in_order_and_a_group_inside_a_gap_moves_to_the_next_survivor() {
    let (source, target) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            Kafka::start_with(KafkaOptions::default().property("log.cleaner.backoff.ms", "500"))
        });
        let b = s.spawn(Kafka::start);
        (a.join().expect("source"), b.join().expect("target"))
    });
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(
        &src,
        TOPIC,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("min.compaction.lag.ms", "0"),
            ("delete.retention.ms", "100"),
        ],
    )
    .expect("topic");
    // Rounds of the keys written again, spaced so that each round starts a new segment.
    let mut produced = 0;
    for round in 0..ROUNDS {
        let records: Vec<TestRecord> = (0..PER_ROUND)
            .map(|i| {
                // The last two rounds write half of the keys: the other half survives from
                // the round before them, and the cleaned next-to-last round leaves a gap
                // between those survivors and the last round.
                let keys = if round + 2 >= ROUNDS { KEYS / 2 } else { KEYS };
                TestRecord::new(
                    format!("key-{}", i % keys).into_bytes(),
                    format!("round-{round}-record-{i}").into_bytes(),
                )
                .with_partition(0)
            })
            .collect();
        let delivered =
            rdkafka::produce(&src, TOPIC, &records, &ProduceOptions::default()).expect("produce");
        assert!(delivered.iter().all(|d| d.error.is_none()));
        produced += records.len();
        std::thread::sleep(Duration::from_millis(300));
    }

    // Wait for the cleaner: gaps in the offsets, and the same survivors twice in a row.
    let deadline = Instant::now() + Duration::from_secs(60);
    let survivors = loop {
        let a = read(&src, TOPIC);
        std::thread::sleep(Duration::from_secs(2));
        let b = read(&src, TOPIC);
        if b.len() < produced && offsets(&a) == offsets(&b) {
            break b;
        }
        assert!(
            Instant::now() < deadline,
            "the cleaner left {} of {produced} records",
            b.len()
        );
    };
    let offs = offsets(&survivors);
    let gap = offs
        .windows(2)
        .find(|w| w[1] > w[0] + 1)
        .map(|w| w[0] + 1)
        .expect("a gap between surviving offsets");
    let next_survivor = offs
        .iter()
        .position(|&o| o > gap)
        .expect("a survivor after the gap");
    println!(
        "{} of {produced} records survive; group committed at {gap} (in a gap), next survivor at \
         source offset {} (index {next_survivor})",
        survivors.len(),
        offs[next_survivor]
    );
    rdkafka::commit_group_offsets(&src, "g-gap", TOPIC, &[(0, gap)]).expect("commit");

    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    // The target keeps the broker's cleaning defaults: it must not compact the copy further.
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
[flows.groups]
include = ["g-gap"]
[flows.topic_configs]
exclude = ["segment\\.ms", "min\\.cleanable\\.dirty\\.ratio", "delete\\.retention\\.ms"]
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

    // Exactly the survivors, in order (keys, values, headers, timestamps).
    let copied = read(&dst, TARGET);
    assert_eq!(copied.len(), survivors.len(), "records on the target");
    for (i, (w, g)) in survivors.iter().zip(&copied).enumerate() {
        assert_eq!(
            w.to_test_record(),
            g.to_test_record(),
            "survivor {i} (source offset {}) differs",
            w.offset
        );
    }
    let report = compare((&src, TOPIC), (&dst, TARGET), 1, survivors.len() as u64);
    assert!(report.problems(0).is_empty(), "{:?}", report.problems(0));

    // The group's next record is the same record on both sides.
    let g = rdkafka::list_group_offsets(&dst, "g-gap").expect("target group offsets");
    let committed = g
        .iter()
        .find(|o| o.topic == TARGET && o.partition == 0)
        .map(|o| o.offset)
        .unwrap_or_else(|| panic!("g-gap not on the target: {g:?}\n{}", log_tail(&log)));
    assert_eq!(
        committed, copied[next_survivor].offset,
        "committed at source offset {gap}, a gap: the target's next record must be the next \
         survivor (source offset {})",
        offs[next_survivor]
    );

    // The parity check finds the same: the copy matches and the group is proven.
    let (code, out) = process::verify(&config, &[]);
    let report: serde_json::Value = serde_json::from_str(&out).expect("verify's JSON");
    assert_eq!(code, Some(0), "strait verify: {report:#}");
    let partition = &report["flows"][0]["partitions"][0];
    assert_eq!(
        partition["tally"]["matched"].as_u64(),
        Some(survivors.len() as u64),
        "{report:#}"
    );
    let group = &report["flows"][0]["groups"][0];
    assert_eq!(
        (group["group"].as_str(), group["verdict"].as_str()),
        (Some("g-gap"), Some("proven")),
        "{report:#}"
    );
    assert_eq!(
        group["record"].as_i64(),
        Some(offs[next_survivor]),
        "the record both sides resume at: {report:#}"
    );
}
