//! Taking over from MirrorMaker 2 (`start_position = "takeover"`, `strait_mirror::takeover`),
//! with MM2 played by librdkafka between two Tansu brokers: the first records of each
//! source partition copied to the target as MM2 copies them (key, value, headers and
//! timestamp kept), with MM2-format offset syncs on the source or none. `strait run --once`
//! must continue right after the last copied record — librdkafka reads every source
//! record on the target exactly once, in order — and refuse a target that is not a copy,
//! or one still being written, naming the partition and writing nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use strait_mirror::takeover::decide::{OffsetSync, encode_offset_sync};
use strait_testkit::TansuCluster;
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::data::RecordHeader;
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation, ProduceOptions};

mod common;

use common::command::{output_text, strait};

const PARTITIONS: i32 = 2;
/// Records per partition on the source before the takeover.
const BEFORE: usize = 300;
/// Of those, the ones "MM2" copied.
const COPIED: usize = 200;
/// Records per partition produced after the takeover.
const AFTER: usize = 50;

fn config(dir: &Path, source: &str, target: &str, topic: &str) -> PathBuf {
    let mut cfg = two_cluster_flow(source, target, "5s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"{topic}\"]\nstart_position = \"takeover\"\n\
         [flows.sync]\ngroup_offsets = false\nheartbeats = false\ncheckpoints = false\n\
         [metrics]\nenabled = false\n"
    ));
    let path = dir.join("strait.toml");
    std::fs::write(&path, cfg).expect("write config");
    path
}

/// Record `i` of partition `p`: key, value, a header and a fixed CreateTime.
fn record(p: i32, i: usize) -> TestRecord {
    TestRecord::new(format!("k{p}-{i}"), format!("v{p}-{i}"))
        .with_partition(p)
        .with_header(RecordHeader::new("n", format!("{i}")))
        .with_timestamp(1_780_000_000_000 + (i as i64) * 10)
}

fn produce(bootstrap: &str, topic: &str, p: i32, range: std::ops::Range<usize>) {
    let records: Vec<TestRecord> = range.map(|i| record(p, i)).collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(16),
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, topic, &records, &opts).expect("produce");
}

/// MM2's offset syncs for `topic`, partition `p`: every 64 records, as MM2 emits them
/// when the distance it tracks moves on.
fn write_offset_syncs(source: &str, topic: &str, p: i32) {
    let records: Vec<TestRecord> = (0..COPIED as i64)
        .step_by(64)
        .map(|o| {
            let (k, v) = encode_offset_sync(
                topic,
                p,
                OffsetSync {
                    upstream: o,
                    downstream: o,
                },
            );
            TestRecord {
                partition: Some(0),
                key: Some(Bytes::from(k)),
                value: Some(Bytes::from(v)),
                headers: Vec::new(),
                timestamp: None,
            }
        })
        .collect();
    rdkafka::produce(
        source,
        "mm2-offset-syncs.dst.internal",
        &records,
        &ProduceOptions::default(),
    )
    .expect("offset syncs");
}

/// The source with `BEFORE` records per partition, the target with the first `COPIED`
/// of each (plus MM2's offset syncs when `syncs`).
fn mm2_copied(cluster: &TansuCluster, topic: &str, syncs: bool) -> (String, String) {
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, topic, PARTITIONS, &[]).expect("source topic");
    rdkafka::create_topic(&dst, &format!("src.{topic}"), PARTITIONS, &[]).expect("target");
    if syncs {
        rdkafka::create_topic(&src, "mm2-offset-syncs.dst.internal", 1, &[]).expect("syncs");
    }
    for p in 0..PARTITIONS {
        produce(&src, topic, p, 0..BEFORE);
        produce(&dst, &format!("src.{topic}"), p, 0..COPIED);
        if syncs {
            write_offset_syncs(&src, topic, p);
        }
    }
    (src, dst)
}

/// Every record of the target topic, per partition, as `v<p>-<i>` values in offset order
/// (librdkafka, read to the high watermark).
fn target_values(dst: &str, topic: &str) -> Vec<Vec<String>> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadUncommitted,
        to_end: true,
        ..ConsumeOptions::default()
    };
    let mut records = rdkafka::consume(dst, topic, &opts).expect("consume the target");
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out = vec![Vec::new(); PARTITIONS as usize];
    for r in records {
        let v = r.value.map(|v| String::from_utf8_lossy(&v).into_owned());
        out[r.partition as usize].push(v.unwrap_or_default());
    }
    out
}

fn expected(n: usize) -> Vec<Vec<String>> {
    (0..PARTITIONS)
        .map(|p| (0..n).map(|i| format!("v{p}-{i}")).collect())
        .collect()
}

fn takes_over(topic: &str, syncs: bool) {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = mm2_copied(&cluster, topic, syncs);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst, topic);
    let cfg = cfg.to_str().expect("utf-8 path");
    // `strait plan` shows where each partition would continue, and how that was proven.
    let plan = strait(&["plan", "-c", cfg]);
    assert!(plan.status.success(), "{}", output_text(&plan));
    let shown = String::from_utf8_lossy(&plan.stdout);
    for p in 0..PARTITIONS {
        assert!(
            shown.contains(&format!(
                "takeover {topic}-{p} -> src.{topic}: continues at source offset {COPIED}"
            )),
            "{}",
            output_text(&plan)
        );
    }
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", output_text(&out));
    let target = format!("src.{topic}");
    assert_eq!(
        target_values(&dst, &target),
        expected(BEFORE),
        "every source record once, in order, after MM2's last\n{}",
        output_text(&out)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let hint = if syncs { "OffsetSync" } else { "Timestamp" };
    assert!(
        log.contains("takeover: replication continues") && log.contains(hint),
        "{}",
        output_text(&out)
    );
    // Later runs resume from the map the takeover started, not from a new takeover.
    for p in 0..PARTITIONS {
        produce(&src, topic, p, BEFORE..BEFORE + AFTER);
    }
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert_eq!(target_values(&dst, &target), expected(BEFORE + AFTER));
}

#[test]
fn a_takeover_continues_after_mm2_s_last_record_found_through_its_offset_syncs() {
    takes_over("orders", true);
}

#[test]
fn a_takeover_without_offset_syncs_finds_mm2_s_last_record_by_its_timestamp() {
    takes_over("payments", false);
}

#[test]
fn a_target_that_is_not_a_copy_of_the_source_is_refused_by_partition_and_left_alone() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = mm2_copied(&cluster, "refunds", true);
    // Someone else's record after MM2's last one on partition 1.
    let foreign = TestRecord::new("k1-x", "not from the source").with_partition(1);
    rdkafka::produce(&dst, "src.refunds", &[foreign], &ProduceOptions::default())
        .expect("foreign record");
    let before = target_values(&dst, "src.refunds");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst, "refunds");
    let plan = strait(&["plan", "-c", cfg.to_str().expect("utf-8 path")]);
    let shown = String::from_utf8_lossy(&plan.stdout);
    assert!(
        shown.contains("takeover refunds-1 -> src.refunds: ! refused")
            && shown.contains("takeover refunds-0 -> src.refunds: continues at source offset"),
        "{}",
        output_text(&plan)
    );
    let out = strait(&["run", "--once", "-c", cfg.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(4), "refused: {}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("takeover of refunds-1") && stderr.contains("matches no source record"),
        "{}",
        output_text(&out)
    );
    assert_eq!(
        target_values(&dst, "src.refunds"),
        before,
        "nothing written"
    );
}

#[test]
fn a_target_still_being_written_is_refused_as_mm2_still_running() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = mm2_copied(&cluster, "audits", true);
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (dst, writing) = (dst.clone(), Arc::clone(&writing));
        std::thread::spawn(move || {
            let mut i = COPIED;
            while writing.load(Ordering::Relaxed) {
                produce(&dst, "src.audits", 0, i..i + 1);
                i += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst, "audits");
    let out = strait(&["run", "--once", "-c", cfg.to_str().expect("utf-8 path")]);
    writing.store(false, Ordering::Relaxed);
    writer.join().expect("writer");
    assert_eq!(out.status.code(), Some(4), "refused: {}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("takeover of audits-0") && stderr.contains("still running"),
        "{}",
        output_text(&out)
    );
}
