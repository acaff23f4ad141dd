//! `strait failover` and `strait failback` against Apache Kafka (docs/replication.md,
//! "Failover and failback: the rules"). The source topic holds plain batches, a committed
//! transaction and an aborted one: Kafka keeps the aborted records and both markers in
//! the log, so the source offsets have a gap of one marker after the committed
//! transaction and of eleven offsets (ten aborted records and the ABORT marker) after the
//! aborted one, none of which the target has. A consumer group's positions are committed
//! and read back with librdkafka, which also reads the records they point at on both
//! sides: the group must resume at the very record, not near it.
//!
//! The tests share one pair of clusters; each has its own flow (so its own state topic),
//! topic and group.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use strait_kafka_scenarios::process::{self, log_tail};
use strait_kafka_scenarios::{Kafka, strait_binary, wait};
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{
    self, ConsumeOptions, ConsumedRecord, ProduceOptions, StartOffset, Transaction,
};

/// The source and target clusters every test of this file shares.
fn clusters() -> &'static (Kafka, Kafka) {
    static PAIR: OnceLock<(Kafka, Kafka)> = OnceLock::new();
    PAIR.get_or_init(Kafka::pair)
}

fn strait(args: &[&str]) -> Output {
    Command::new(strait_binary())
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One flow named `name` replicating `topic`; `sync` is its `[flows.sync]` table and
/// `extra` more of its subtables.
fn config(dir: &Path, name: &str, topic: &str, sync: &str, extra: &str) -> PathBuf {
    let (source, target) = clusters();
    let mut cfg = two_cluster_flow(&source.bootstrap(), &target.bootstrap(), "5s");
    cfg.push_str(&format!(
        "name = \"{name}\"\n[flows.topics]\ninclude = [\"{topic}\"]\n{sync}{extra}"
    ));
    cfg.push_str("[engine]\nfetch_max_wait = \"100ms\"\n[metrics]\nenabled = false\n");
    let path = dir.join("strait.toml");
    std::fs::write(&path, cfg).expect("write config");
    path
}

const NO_SYNC: &str =
    "[flows.sync]\ngroup_offsets = false\nheartbeats = false\ncheckpoints = false\n";

/// Records `from..from + n` (`k<i>`/`v<i>`) to partition 0 of `topic`, in batches of 7.
fn produce(bootstrap: &str, topic: &str, from: usize, n: usize, transaction: Transaction) {
    let records: Vec<TestRecord> = (from..from + n)
        .map(|i| TestRecord::new(format!("k{i}"), format!("v{i}")).with_partition(0))
        .collect();
    let opts = ProduceOptions {
        transaction,
        batch_num_messages: Some(7),
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(bootstrap, topic, &records, &opts).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "{delivered:?}");
}

/// The source history of the first test: v0..v29 plain, v30..v41 committed, v42..v51
/// aborted, v52..v81 plain. A read_committed reader sees 72 records.
fn produce_history(bootstrap: &str, topic: &str) {
    rdkafka::create_topic(bootstrap, topic, 1, &[]).expect("topic");
    produce(bootstrap, topic, 0, 30, Transaction::None);
    produce(bootstrap, topic, 30, 12, Transaction::Commit);
    produce(bootstrap, topic, 42, 10, Transaction::Abort);
    produce(bootstrap, topic, 52, 30, Transaction::None);
}

/// Every record of `topic` a read_committed reader sees, in offset order.
fn read_all(bootstrap: &str, topic: &str) -> Vec<ConsumedRecord> {
    let mut got = rdkafka::consume(bootstrap, topic, &ConsumeOptions::default()).expect("consume");
    got.sort_by_key(|r| (r.partition, r.offset));
    got
}

/// The first record at or after `offset` in partition 0, read by librdkafka
/// (read_committed), as a consumer of the group resuming at `offset` gets it.
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

/// `group`'s committed offset of partition 0 of `topic`, as librdkafka's admin lists it.
fn committed(bootstrap: &str, group: &str, topic: &str) -> Option<i64> {
    rdkafka::list_group_offsets(bootstrap, group)
        .expect("group offsets")
        .into_iter()
        .find(|o| o.topic == topic && o.partition == 0)
        .map(|o| o.offset)
        .filter(|o| *o >= 0)
}

/// A librdkafka consumer of `group` reads `n` records of `topic` from the group's
/// committed position (the beginning without one) and commits the position after them;
/// returns them.
fn consume_and_commit(bootstrap: &str, group: &str, topic: &str, n: usize) -> Vec<ConsumedRecord> {
    let from =
        committed(bootstrap, group, topic).map_or(StartOffset::Beginning, StartOffset::Offset);
    let opts = ConsumeOptions {
        partitions: Some(vec![0]),
        from,
        group: Some(group.to_owned()),
        ..ConsumeOptions::count(n)
    };
    let got = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    assert_eq!(got.len(), n, "{n} records of {topic} for {group}");
    let next = got.last().expect("records").offset + 1;
    rdkafka::commit_group_offsets(bootstrap, group, topic, &[(0, next)]).expect("commit");
    got
}

fn value(r: &ConsumedRecord) -> String {
    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()
}

#[test]
fn failover_then_failback_resume_at_the_very_record_across_committed_and_aborted_transactions() {
    const TOPIC: &str = "orders-fo";
    const TARGET: &str = "src.orders-fo";
    const GROUP: &str = "billing-fo";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    produce_history(&src, TOPIC);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "fo", TOPIC, NO_SYNC, "");
    let cfg = cfg.to_str().expect("utf-8 path");
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    let source = read_all(&src, TOPIC);
    assert_eq!(source.len(), 72);
    // The commit marker takes an offset, the aborted records and their marker eleven: the
    // records after each are further on.
    assert_eq!(value(&source[30]), "v30");
    assert!(source[30].offset > source[29].offset, "in order");
    assert_eq!(value(&source[42]), "v52");
    assert_eq!(
        source[42].offset,
        source[41].offset + 1 + 1 + 10 + 1,
        "a commit marker, ten aborted records and an abort marker between v41 and v52"
    );
    let on_target = read_all(&dst, TARGET);
    assert_eq!(
        on_target.iter().map(value).collect::<Vec<_>>(),
        source.iter().map(value).collect::<Vec<_>>(),
        "the target holds the committed records, in order"
    );

    // The group read 50 records on the source (v0..v41 and v52..v59) and stopped there.
    let read = consume_and_commit(&src, GROUP, TOPIC, 50);
    assert_eq!(value(read.last().expect("records")), "v59");
    let position = committed(&src, GROUP, TOPIC).expect("committed on the source");
    assert_eq!(value(&record_at(&src, TOPIC, position)), "v60");

    // Dry run: a plan naming the record on both sides, nothing committed.
    let out = strait(&["failover", "-c", cfg, "--group", GROUP]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dry run"), "{}", text(&out));
    assert!(stdout.contains("key \"k60\""), "{}", text(&out));
    assert_eq!(
        committed(&dst, GROUP, TARGET),
        None,
        "a dry run commits nothing"
    );

    let out = strait(&["failover", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", text(&out));
    let at = committed(&dst, GROUP, TARGET).expect("committed on the target");
    let next = record_at(&dst, TARGET, at);
    assert_eq!(value(&next), "v60", "resumes at the next record");
    assert_eq!(next.offset, at, "the committed offset is that record's");

    // The group consumes 8 more records on the target, then fails back.
    let read = consume_and_commit(&dst, GROUP, TARGET, 8);
    assert_eq!(
        read.iter().map(value).collect::<Vec<_>>(),
        (60..68).map(|i| format!("v{i}")).collect::<Vec<_>>(),
        "the group goes on on the target where it left the source"
    );
    let out = strait(&[
        "failback",
        "-c",
        cfg,
        "--group",
        GROUP,
        "--execute",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["executed"], true, "{report}");
    assert_eq!(report["committed"], 1, "{report}");
    let on_source = committed(&src, GROUP, TOPIC).expect("committed on the source");
    let next = record_at(&src, TOPIC, on_source);
    assert_eq!(value(&next), "v68", "resumes after the last read");
    assert_eq!(
        next.offset, on_source,
        "the committed offset is that record's"
    );
    assert_eq!(
        report["flows"][0]["partitions"][0]["verdict"]["offset"], on_source,
        "{report}"
    );

    // Again: the group is already there on the source, nothing to move.
    let out = strait(&["failback", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already there"),
        "{}",
        text(&out)
    );
}

#[test]
fn group_sync_on_a_running_flow_then_failover_resumes_the_group_at_the_very_record() {
    const TOPIC: &str = "orders-sync";
    const TARGET: &str = "src.orders-sync";
    const GROUP: &str = "billing-sync";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    produce_history(&src, TOPIC);
    // The group read 45 records on the source (v0..v41, v52..v54): its position is past
    // both transactions.
    let read = consume_and_commit(&src, GROUP, TOPIC, 45);
    assert_eq!(value(read.last().expect("records")), "v54");
    let dir = tempfile::tempdir().expect("temp dir");
    let sync = "[flows.sync]\ngroup_offsets = true\nheartbeats = false\ncheckpoints = true\n\
                [flows.intervals]\ncheckpoint = \"500ms\"\ngroup_sync = \"1s\"\n";
    let cfg = config(dir.path(), "fo-sync", TOPIC, sync, "");
    let log = dir.path().join("strait.log");
    let mut run = process::start(&cfg, &log);
    // Group sync commits the translated position on the target (the group has no member
    // there).
    let mut seen = None;
    wait::until(
        "the group's position synced to the target",
        Duration::from_secs(60),
        || {
            run.assert_running();
            seen = committed(&dst, GROUP, TARGET);
            seen.is_some()
        },
        || log_tail(&log),
    );
    let synced = seen.expect("synced");
    assert_eq!(
        value(&record_at(&dst, TARGET, synced)),
        "v55",
        "group sync puts the group at its next record"
    );
    // More records on the source and the group reads some of them; the flow goes on.
    produce(&src, TOPIC, 82, 20, Transaction::Commit);
    let read = consume_and_commit(&src, GROUP, TOPIC, 40);
    assert_eq!(value(read.last().expect("records")), "v94");
    wait::until(
        "the new records on the target",
        Duration::from_secs(60),
        || {
            run.assert_running();
            read_all(&dst, TARGET)
                .last()
                .is_some_and(|r| value(r) == "v101")
        },
        || log_tail(&log),
    );
    // The switch-over: replication stops, failover moves the group (or finds it already
    // moved by the sync), and a consumer of the group on the target resumes at v95.
    let status = process::stop(&mut run, Duration::from_secs(20));
    assert!(status.success(), "{status:?}\n{}", log_tail(&log));
    let cfg = cfg.to_str().expect("utf-8 path");
    let out = strait(&["failover", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", text(&out));
    let at = committed(&dst, GROUP, TARGET).expect("committed on the target");
    let next = record_at(&dst, TARGET, at);
    assert_eq!(value(&next), "v95", "{}", text(&out));
    assert_eq!(next.offset, at, "the committed offset is that record's");
    let resumed = consume_and_commit(&dst, GROUP, TARGET, 7);
    assert_eq!(
        resumed.iter().map(value).collect::<Vec<_>>(),
        (95..102).map(|i| format!("v{i}")).collect::<Vec<_>>()
    );
}

#[test]
fn failover_refuses_a_position_replication_has_not_reached_and_commits_nothing() {
    const TOPIC: &str = "orders-ahead";
    const TARGET: &str = "src.orders-ahead";
    const GROUP: &str = "billing-ahead";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "fo-ahead", TOPIC, NO_SYNC, "");
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, 0, 20, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    // Written after replication stopped: the group read records the target lacks.
    produce(&src, TOPIC, 20, 10, Transaction::None);
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
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("not replicated yet"), "{}", text(&out));
    assert!(stdout.contains("nothing committed"), "{}", text(&out));
    assert_eq!(committed(&dst, GROUP, TARGET), None);
}

#[test]
fn a_group_behind_a_latest_start_is_not_exact_and_fails_over_only_when_accepted() {
    const TOPIC: &str = "orders-behind";
    const TARGET: &str = "src.orders-behind";
    const GROUP: &str = "billing-behind";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "fo-behind", TOPIC, NO_SYNC, "");
    // `start_position` belongs to `[flows.topics]`.
    let with_start = std::fs::read_to_string(&cfg).expect("read config").replace(
        "include = [\"orders-behind\"]\n",
        "include = [\"orders-behind\"]\nstart_position = \"latest\"\n",
    );
    std::fs::write(&cfg, with_start).expect("write config");
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    // 20 records before replication starts (never replicated), 10 after.
    produce(&src, TOPIC, 0, 20, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    produce(&src, TOPIC, 20, 10, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        read_all(&dst, TARGET).len(),
        10,
        "only what came after the start"
    );
    // The group read 5 records: it is 15 records behind where replication started.
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, 5)]).expect("commit");
    let failover = |extra: &[&str]| {
        let mut args = vec!["failover", "-c", cfg, "--group", GROUP, "--execute"];
        args.extend_from_slice(extra);
        strait(&args)
    };
    let out = failover(&[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("before where replication started (20)") && stdout.contains("skip 15"),
        "{}",
        text(&out)
    );
    assert_eq!(committed(&dst, GROUP, TARGET), None, "nothing committed");
    let out = failover(&["--accept-inexact"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("NOT EXACT"),
        "{}",
        text(&out)
    );
    // Where replication started: the first replicated record, v20.
    let at = committed(&dst, GROUP, TARGET).expect("committed");
    assert_eq!(value(&record_at(&dst, TARGET, at)), "v20");
}

#[test]
fn with_the_source_killed_failover_commits_the_last_synced_positions_and_shows_their_age() {
    const TOPIC: &str = "orders-dr";
    const TARGET: &str = "src.orders-dr";
    const GROUP: &str = "billing-dr";
    // Its own pair: the source is killed.
    let (mut source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = two_cluster_flow(&src, &dst, "5s");
    cfg.push_str(&format!(
        "name = \"fo-dr\"\n[flows.topics]\ninclude = [\"{TOPIC}\"]\n[flows.sync]\n\
         group_offsets = false\nheartbeats = false\ncheckpoints = true\n\
         [engine]\nfetch_max_wait = \"100ms\"\n[metrics]\nenabled = false\n"
    ));
    let cfg_path = dir.path().join("strait.toml");
    std::fs::write(&cfg_path, cfg).expect("write config");
    let cfg = cfg_path.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, 0, 40, Transaction::None);
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, 25)]).expect("commit");
    // Replicates and syncs once: a checkpoint (25 -> 25) on the target, no group commit.
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(committed(&dst, GROUP, TARGET), None, "group_offsets is off");

    source.cluster_mut().node_mut(0).kill9();
    let started = std::time::Instant::now();
    let failover = |extra: &[&str]| {
        let mut args = vec![
            "failover",
            "-c",
            cfg,
            "--group",
            GROUP,
            "--source-unavailable",
        ];
        args.extend_from_slice(extra);
        strait(&args)
    };
    let plan = failover(&[]);
    assert!(plan.status.success(), "{}", text(&plan));
    let stdout = String::from_utf8_lossy(&plan.stdout);
    println!("{stdout}");
    assert!(
        stdout.contains("synced") && stdout.contains(" ago (at ") && stdout.contains("exact"),
        "the plan shows how old the position is:\n{}",
        text(&plan)
    );
    assert!(
        stdout.contains("not checked (--source-unavailable)"),
        "{}",
        text(&plan)
    );
    let out = failover(&["--execute"]);
    assert!(out.status.success(), "{}", text(&out));
    // Nothing waited on the dead source (a source connection alone gives up after 5 s,
    // retried for the request timeout).
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let at = committed(&dst, GROUP, TARGET).expect("committed on the target");
    assert_eq!(
        value(&record_at(&dst, TARGET, at)),
        "v25",
        "the very record"
    );
}

#[test]
fn a_renamed_topic_is_replicated_under_its_new_name_and_fails_over_there() {
    const TOPIC: &str = "orders-rn";
    const GROUP: &str = "billing-rn";
    let renamed = "src.orders-rn-v2";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(
        dir.path(),
        "fo-rn",
        TOPIC,
        NO_SYNC,
        "[flows.naming.rename]\norders-rn = \"orders-rn-v2\"\n",
    );
    let cfg = cfg.to_str().expect("utf-8 path");
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, 0, 25, Transaction::None);
    let out = strait(&["run", "--once", "-c", cfg]);
    assert!(out.status.success(), "{}", text(&out));
    let values = |rs: Vec<ConsumedRecord>| -> Vec<_> { rs.into_iter().map(|r| r.value).collect() };
    assert_eq!(
        values(read_all(&dst, renamed)),
        values(read_all(&src, TOPIC)),
        "every record, in order, under the new name"
    );
    let source = read_all(&src, TOPIC);
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(0, source[10].offset)]).expect("commit");
    let out = strait(&["failover", "-c", cfg, "--group", GROUP, "--execute"]);
    assert!(out.status.success(), "{}", text(&out));
    let on_target = committed(&dst, GROUP, renamed).expect("committed on the renamed topic");
    assert_eq!(
        record_at(&dst, renamed, on_target).value.as_deref(),
        Some(&b"v10"[..])
    );
}
