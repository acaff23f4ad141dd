//! `strait failover` and `strait failback`, end to end (docs/replication.md, "Failover
//! and failback: the rules"): two Tansu brokers, a source topic with plain batches and a
//! committed transaction (its marker leaves a gap in the source offsets), replicated with
//! `strait run --once`. A group's positions are committed and read back with librdkafka,
//! which also reads the records they point at on both sides.

use std::path::{Path, PathBuf};

use strait_testkit::TansuCluster;
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{
    self, ConsumeOptions, ConsumedRecord, ProduceOptions, StartOffset, Transaction,
};

mod common;

use common::command::{output_text, strait};

const TOPIC: &str = "orders";
const TARGET_TOPIC: &str = "src.orders";
const GROUP: &str = "billing";

fn config(dir: &Path, source: &str, target: &str) -> PathBuf {
    config_with(dir, source, target, "")
}

fn config_with(dir: &Path, source: &str, target: &str, extra: &str) -> PathBuf {
    let mut cfg = two_cluster_flow(source, target, "5s");
    cfg.push_str(
        "[flows.topics]\ninclude = [\"orders\"]\n[flows.sync]\ngroup_offsets = false\n\
         heartbeats = false\ncheckpoints = false\n",
    );
    cfg.push_str(extra);
    // Tests run in parallel: no two on the default metrics port.
    cfg.push_str("[metrics]\nenabled = false\n");
    let path = dir.join("strait.toml");
    std::fs::write(&path, cfg).expect("write config");
    path
}

fn produce(bootstrap: &str, from: usize, n: usize, transaction: Transaction) {
    let records: Vec<TestRecord> = (from..from + n)
        .map(|i| TestRecord::new(format!("k{i}"), format!("v{i}")).with_partition(0))
        .collect();
    let opts = ProduceOptions {
        transaction,
        batch_num_messages: Some(7),
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, TOPIC, &records, &opts).expect("produce");
}

fn read_all(bootstrap: &str, topic: &str) -> Vec<ConsumedRecord> {
    rdkafka::consume(bootstrap, topic, &ConsumeOptions::default()).expect("consume")
}

/// The first record at or after `offset` in partition 0, read by librdkafka.
fn record_at(bootstrap: &str, topic: &str, offset: i64) -> ConsumedRecord {
    let opts = ConsumeOptions {
        partitions: Some(vec![0]),
        from: StartOffset::Offset(offset),
        ..ConsumeOptions::count(1)
    };
    let mut got = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    assert_eq!(got.len(), 1, "a record at or after {offset} of {topic}");
    got.remove(0)
}

fn committed(bootstrap: &str, topic: &str) -> Option<i64> {
    rdkafka::list_group_offsets(bootstrap, GROUP)
        .expect("group offsets")
        .into_iter()
        .find(|o| o.topic == topic && o.partition == 0)
        .map(|o| o.offset)
        .filter(|o| *o >= 0)
}

#[test]
fn failover_then_failback_resume_at_the_very_record_across_a_transaction_gap() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, 0, 30, Transaction::None);
    produce(&src, 30, 12, Transaction::Commit);
    produce(&src, 42, 30, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", output_text(&out));
    let source = read_all(&src, TOPIC);
    assert_eq!(source.len(), 72);
    // The commit marker takes an offset: the records after it are one further on.
    let after_txn = &source[42];
    assert_eq!(after_txn.value.as_deref(), Some(&b"v42"[..]));
    assert!(after_txn.offset > source[41].offset + 1, "a marker gap");

    // The group read 50 records on the source and stopped.
    let position = source[50].offset;
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, position)]).expect("commit");

    // Dry run: a plan naming the record on both sides, nothing committed.
    let out = strait(&["failover", "-c", cfg, "--group", GROUP]);
    assert!(out.status.success(), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dry run"), "{}", output_text(&out));
    assert!(stdout.contains("key \"k50\""), "{}", output_text(&out));
    assert_eq!(
        committed(&dst, TARGET_TOPIC),
        None,
        "a dry run commits nothing"
    );

    let out = strait(&["failover", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let on_target = committed(&dst, TARGET_TOPIC).expect("committed on the target");
    let next = record_at(&dst, TARGET_TOPIC, on_target);
    assert_eq!(
        next.value.as_deref(),
        Some(&b"v50"[..]),
        "resumes at the next record"
    );
    assert_eq!(
        next.offset, on_target,
        "the committed offset is that record's"
    );

    // The group consumes 8 more records on the target, then fails back.
    let target = read_all(&dst, TARGET_TOPIC);
    let at = target
        .iter()
        .position(|r| r.offset == on_target)
        .expect("the record on the target");
    let moved = target[at + 8].offset;
    rdkafka::commit_group_offsets(&dst, GROUP, TARGET_TOPIC, &[(0, moved)]).expect("commit");
    let out = strait(&[
        "failback",
        "-c",
        cfg,
        "--group",
        GROUP,
        "--execute",
        "--json",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["executed"], true, "{report}");
    assert_eq!(report["committed"], 1, "{report}");
    let on_source = committed(&src, TOPIC).expect("committed on the source");
    let next = record_at(&src, TOPIC, on_source);
    assert_eq!(
        next.value.as_deref(),
        Some(&b"v58"[..]),
        "resumes after the last read"
    );
    assert_eq!(
        report["flows"][0]["partitions"][0]["verdict"]["offset"], on_source,
        "{report}"
    );

    // Again: the group is already there on the source, nothing to move.
    let out = strait(&["failback", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("already there"));
}

#[test]
fn failover_refuses_a_position_replication_has_not_reached_and_commits_nothing() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, 0, 20, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", output_text(&out));
    // Written after replication stopped: the group read records the target lacks.
    produce(&src, 20, 10, Transaction::None);
    let end = read_all(&src, TOPIC).last().expect("records").offset + 1;
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, end)]).expect("commit");
    let out = strait(&[
        "failover",
        "-c",
        cfg,
        "--group",
        GROUP,
        "--execute",
        "--wait",
        "2s",
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not replicated yet"),
        "{}",
        output_text(&out)
    );
    assert!(
        stdout.contains("nothing committed"),
        "{}",
        output_text(&out)
    );
    assert_eq!(committed(&dst, TARGET_TOPIC), None);
}

#[test]
fn a_renamed_topic_is_replicated_under_its_new_name_and_fails_over_there() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let renamed = "src.orders-v2";
    let cfg = config_with(
        dir.path(),
        &src,
        &dst,
        "[flows.naming.rename]\norders = \"orders-v2\"\n",
    );
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, 0, 25, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", output_text(&out));
    let values = |rs: Vec<ConsumedRecord>| -> Vec<_> { rs.into_iter().map(|r| r.value).collect() };
    assert_eq!(
        values(read_all(&dst, renamed)),
        values(read_all(&src, TOPIC)),
        "every record, in order, under the new name"
    );
    let source = read_all(&src, TOPIC);
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, source[10].offset)]).expect("commit");
    let out = strait(&["failover", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let on_target = committed(&dst, renamed).expect("committed on the renamed topic");
    assert_eq!(
        record_at(&dst, renamed, on_target).value.as_deref(),
        Some(&b"v10"[..])
    );
}
