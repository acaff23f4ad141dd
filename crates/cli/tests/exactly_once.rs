//! Exactly-once replication (`delivery.guarantee = "exactly_once"`, docs/replication.md
//! "Exactly-once") of the real `strait` binary between two Tansu brokers, with a
//! producer writing numbered records the whole time:
//!
//! - kill -9 at random moments, many times, then a drain: every source record is on the
//!   target exactly once for a `read_committed` reader, in order per partition;
//! - a zombie: a `strait run` frozen with SIGSTOP while a replacement takes over is fenced
//!   when resumed (exits with a clear error), and nothing is duplicated;
//! - source transactions, committed and aborted: committed data once, aborted never.
//!
//! The reader is librdkafka (`isolation.level=read_committed`). Tansu sends no aborted
//! list in Fetch, so librdkafka also returns the batches of aborted transactions there
//! (docs/compatibility.md): each target partition is also read with strait-client's
//! marker-resolving consumer, and librdkafka's records are kept only at offsets whose
//! transaction committed. Against Apache Kafka that filter keeps everything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strait_client::{Client, ClientConfig, FetchOptions, IsolationLevel, PartitionConsumer};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{
    self, ConsumeOptions, Isolation, ProduceOptions, StartOffset, Transaction,
};
use strait_testkit::{TansuCluster, TestRecord};

mod common;
use common::load::NumberedProducer;
use common::read::{partition_ends, runtime, saved_maps};
use common::{Strait, eos, faults};

const TOPIC: &str = "eos";
const TARGET: &str = "src.eos";
const PARTITIONS: i32 = 3;
/// Records per partition in one producer call.
const PER_CALL: u64 = 20;

fn config(dir: &Path, source: &str, target: &str) -> PathBuf {
    config_with(dir, source, target, SYNC_OFF)
}

/// [`config`] with another `[flows.sync]` table.
fn config_with(dir: &Path, source: &str, target: &str, sync: &str) -> PathBuf {
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{sync}[flows.delivery]
guarantee = "exactly_once"
transaction_interval = "100ms"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(source, target, "3s")
    );
    let path = dir.join("strait.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// Per partition, the end (read_uncommitted: the high watermark; read_committed: the
/// last stable offset); `None` while the topic does not exist.
fn ends(bootstrap: &str, topic: &str, isolation: IsolationLevel) -> Option<Vec<i64>> {
    partition_ends(&runtime(), bootstrap, topic, PARTITIONS, isolation)
}

/// The target read as a read_committed consumer sees it on a broker that lists aborted
/// transactions (`common::eos`).
fn target_committed(dst: &str) -> BTreeMap<i32, Vec<String>> {
    eos::target_committed(dst, TARGET, PARTITIONS)
}

fn committed_offsets(bootstrap: &str, topic: &str) -> BTreeMap<i32, BTreeSet<i64>> {
    eos::committed_offsets(bootstrap, topic, PARTITIONS)
}

/// Every source record on the target exactly once, in order, per partition.
fn assert_exactly_once(src: &str, dst: &str, produced: u64, log: &str) {
    eos::assert_exactly_once((src, TOPIC), (dst, TARGET), PARTITIONS, produced, log);
}

/// Per partition, value by offset, read by librdkafka with read_uncommitted (every record
/// the log holds).
fn values_by_offset(bootstrap: &str, topic: &str) -> BTreeMap<i32, BTreeMap<i64, String>> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadUncommitted,
        ..ConsumeOptions::until_idle(Duration::from_secs(3))
    };
    let mut out: BTreeMap<i32, BTreeMap<i64, String>> = BTreeMap::new();
    for r in rdkafka::consume(bootstrap, topic, &opts).expect("consume") {
        let v = r.value.map(|v| String::from_utf8_lossy(&v).into_owned());
        out.entry(r.partition)
            .or_default()
            .insert(r.offset, v.unwrap_or_default());
    }
    out
}

/// The committed offset maps (read from the state topic as `strait` reads them on start)
/// map every source record to the target offset holding the same record, and every
/// source record is mapped: translation is exact.
fn assert_maps_exact(cfg: &Path, src: &str, dst: &str) {
    let registry = saved_maps(&runtime(), cfg, dst);
    let source = values_by_offset(src, TOPIC);
    let target = values_by_offset(dst, TARGET);
    for p in 0..PARTITIONS {
        let reader = registry.reader(TOPIC, p).expect("a map per partition");
        let runs: Vec<(u64, u64, u64)> = reader.read(|m| {
            m.runs()
                .map(|r| (r.source_start(), r.target_start(), r.len()))
                .collect()
        });
        let (s, t) = (&source[&p], &target[&p]);
        let mut mapped = 0usize;
        for (ss, ts, len) in &runs {
            for i in 0..*len {
                let (so, to) = ((ss + i) as i64, (ts + i) as i64);
                assert_eq!(
                    s.get(&so),
                    t.get(&to),
                    "partition {p}: source offset {so} maps to target offset {to} (runs {runs:?})"
                );
                mapped += 1;
            }
        }
        assert_eq!(
            mapped,
            s.len(),
            "partition {p}: every source record is mapped"
        );
    }
}

fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Records committed on the target (the sum of the last stable offsets).
fn committed_on_target(dst: &str) -> i64 {
    ends(dst, TARGET, IsolationLevel::ReadCommitted).map_or(0, |e| e.iter().sum())
}

/// Waits until the target's committed view holds as many records as the source (it may
/// hold aborted ones too on Tansu, so it is checked by content afterwards).
fn wait_drained(src: &str, dst: &str, strait: &mut Strait) {
    let source: i64 = ends(src, TOPIC, IsolationLevel::ReadCommitted)
        .expect("source ends")
        .iter()
        .sum();
    let start = Instant::now();
    loop {
        strait.assert_running();
        let keep = committed_offsets(dst, TARGET);
        let committed: usize = keep.values().map(BTreeSet::len).sum();
        if committed as i64 >= source {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the target did not drain: {committed} of {source} records committed\n{}",
            strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// How many kill -9s: `STRAIT_EOS_KILLS` (scripts/soak sets 50), else 8. Each restart
/// on Tansu waits out the killed process's writer-group session (Tansu cannot take the
/// dead member out early, docs/compatibility.md), about 10 s.
fn kills() -> usize {
    std::env::var("STRAIT_EOS_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

#[test]
fn kill_9_at_random_moments_under_load_then_every_record_is_committed_exactly_once() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    let log = dir.path().join("strait.log");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let kills = kills();
    // A small xorshift: the moments differ per kill, the run is reproducible.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..kills {
        let before = committed_on_target(&dst);
        let mut strait = Strait::start(&cfg, &log);
        wait_for("a commit after the start", Duration::from_secs(30), || {
            strait.assert_running();
            committed_on_target(&dst) > before
        });
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Anywhere within a few transaction intervals: mid-transaction, mid-commit, between.
        std::thread::sleep(Duration::from_millis(seed % 700));
        strait.kill9();
        println!(
            "kill {}/{kills} at {} committed",
            i + 1,
            committed_on_target(&dst)
        );
    }
    let produced = producer.finish();
    let mut strait = Strait::start(&cfg, &log);
    wait_drained(&src, &dst, &mut strait);
    let (status, _) = strait.terminate(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        strait.log_tail()
    );
    assert_exactly_once(&src, &dst, produced, &strait.log_tail());
    assert_maps_exact(&cfg, &src, &dst);
    let (snapshots, deltas, tombstones) = state_records(&dst);
    println!(
        "{kills} kills: {produced} records, each committed once on the target; state topic: \
         {snapshots} snapshots, {deltas} deltas, {tombstones} tombstones"
    );
    // Each run's first commit of a partition is a snapshot that tombstones the deltas of
    // the runs before (the maps checked above were rebuilt from what is left).
    assert!(
        deltas > 0 && tombstones > 0,
        "deltas {deltas}, tombstones {tombstones}"
    );
}

#[test]
fn a_frozen_process_is_fenced_by_its_replacement_and_duplicates_nothing() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let mut old = Strait::start(&cfg, &dir.path().join("old.log"));
    wait_for("replication", Duration::from_secs(30), || {
        old.assert_running();
        committed_on_target(&dst) > 200
    });
    old.signal("STOP");
    let frozen_at = committed_on_target(&dst);
    let mut new = Strait::start(&cfg, &dir.path().join("new.log"));
    wait_for(
        "the replacement to take over",
        Duration::from_secs(30),
        || {
            new.assert_running();
            committed_on_target(&dst) > frozen_at + 200
        },
    );
    old.signal("CONT");
    let (status, _) = old.wait_exit(Duration::from_secs(60));
    let old_log = old.log_text();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the resumed process must stop with an error: {status:?}\n{}",
        old.log_tail()
    );
    assert!(
        old_log.contains("fenced"),
        "the resumed process says it was fenced:\n{}",
        old.log_tail()
    );
    let produced = producer.finish();
    wait_drained(&src, &dst, &mut new);
    let (status, _) = new.terminate(Duration::from_secs(20));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", new.log_tail());
    assert_exactly_once(&src, &dst, produced, &new.log_tail());
}

#[test]
fn source_transactions_committed_once_aborted_never_and_a_group_translates_exactly() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let sync = "[flows.sync]\ngroup_offsets = true\nheartbeats = false\ncheckpoints = false\n";
    let cfg = config_with(dir.path(), &src, &dst, sync);
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let batch = |tag: &str| -> Vec<TestRecord> {
        (0..PARTITIONS)
            .flat_map(|p| {
                (0..15)
                    .map(move |i| TestRecord::new("k", format!("{p}:{tag}{i}")).with_partition(p))
            })
            .collect()
    };
    for (tag, txn) in [
        ("plain", Transaction::None),
        ("committed", Transaction::Commit),
        ("aborted", Transaction::Abort),
        ("after", Transaction::Commit),
    ] {
        let opts = ProduceOptions {
            idempotence: true,
            transaction: txn,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &batch(tag), &opts).expect("produce");
    }
    // A group on the source that has read up to `1:after3` (its next record), past the
    // markers and the aborted transaction.
    let source = rdkafka::consume(
        &src,
        TOPIC,
        &ConsumeOptions::until_idle(Duration::from_secs(2)),
    )
    .expect("consume");
    let at = source
        .iter()
        .find(|r| r.value.as_deref() == Some(b"1:after3".as_slice()))
        .expect("1:after3 on the source")
        .offset;
    rdkafka::commit_group_offsets(&src, "g-eos", TOPIC, &[(1, at)]).expect("group commit");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["run", "--once", "-c"])
        .arg(&cfg)
        .output()
        .expect("strait run --once");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "strait run --once: {stderr}");
    let target = target_committed(&dst);
    for p in 0..PARTITIONS {
        let want: Vec<String> = ["plain", "committed", "after"]
            .iter()
            .flat_map(|tag| (0..15).map(move |i| format!("{p}:{tag}{i}")))
            .collect();
        assert_eq!(
            target.get(&p).cloned().unwrap_or_default(),
            want,
            "partition {p}\n{stderr}"
        );
    }
    // The target group resumes at the very record.
    let translated = rdkafka::list_group_offsets(&dst, "g-eos")
        .expect("target group offsets")
        .into_iter()
        .find(|o| o.topic == TARGET && o.partition == 1)
        .unwrap_or_else(|| panic!("g-eos committed on the target\n{stderr}"))
        .offset;
    let next = rdkafka::consume(
        &dst,
        TARGET,
        &ConsumeOptions {
            partitions: Some(vec![1]),
            from: StartOffset::Offset(translated),
            ..ConsumeOptions::count(1)
        },
    )
    .expect("consume at the translated offset");
    assert_eq!(
        next.first().and_then(|r| r.value.clone()).as_deref(),
        Some(b"1:after3".as_slice()),
        "source offset {at} translated to target offset {translated}"
    );
}

#[test]
fn rst_cuts_of_the_target_keep_every_record_once_and_the_maps_exact() {
    let net = faults::Net::start(&[]);
    let (src, dst) = (net.source.bootstrap(), net.target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let delivery =
        "[flows.delivery]\nguarantee = \"exactly_once\"\ntransaction_interval = \"100ms\"";
    let cfg = net.config(dir.path(), &[TOPIC], delivery, "", faults::free_port());
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let mut strait = Strait::start(&cfg, &dir.path().join("strait.log"));
    let cuts = 8;
    for i in 0..cuts {
        let before = committed_on_target(&dst);
        wait_for(
            &format!("a commit before cut {}", i + 1),
            Duration::from_secs(60),
            || {
                strait.assert_running();
                committed_on_target(&dst) > before
            },
        );
        // Mid-stream: Produce requests, AddPartitionsToTxn and EndTxn are all in flight.
        net.target_proxy.reset();
        std::thread::sleep(Duration::from_millis(300));
        net.target_proxy.uncut();
    }
    let produced = producer.finish();
    wait_drained(&src, &dst, &mut strait);
    let (status, _) = strait.terminate(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        strait.log_tail()
    );
    let log = strait.log_text();
    println!(
        "{cuts} RST cuts: {produced} records; flow restarts: {}",
        log.matches("restarting the flow from its last commit")
            .count()
    );
    assert_exactly_once(&src, &dst, produced, &strait.log_tail());
    assert_maps_exact(&cfg, &src, &dst);
    let (snapshots, deltas, tombstones) = state_records(&dst);
    println!("state topic: {snapshots} snapshots, {deltas} deltas, {tombstones} tombstones");
    assert!(
        deltas > 0,
        "transactions commit deltas of the maps, not snapshots"
    );
}

/// Exactly-once scale-out (`flow/owner.rs`): a slot whose transaction failed restarts only
/// after its group confirmed, in a new generation, that this member still owns the slot;
/// stalls of every target connection (data, transactions and the group's) longer than the
/// request timeout fail the slots' transactions, and every record is still committed once.
#[test]
fn target_stalls_restart_each_slot_only_after_the_group_confirms_it_and_keep_every_record_once() {
    let net = faults::Net::start(&[]);
    let (src, dst) = (net.source.bootstrap(), net.target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let flow = "[flows.delivery]\nguarantee = \"exactly_once\"\ntransaction_interval = \"100ms\"\n\
                [flows.scale_out]\ninstance_id = \"\"\nsession_timeout = \"10s\"\n\
                rebalance_timeout = \"20s\"\nslots = 4";
    let cfg = net.config(dir.path(), &[TOPIC], flow, "", faults::free_port());
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let mut strait = Strait::start(&cfg, &dir.path().join("strait.log"));
    let stalls = 3;
    for i in 0..stalls {
        let before = committed_on_target(&dst);
        wait_for(
            &format!("a commit before stall {}", i + 1),
            Duration::from_secs(120),
            || {
                strait.assert_running();
                committed_on_target(&dst) > before
            },
        );
        // Over twice the request timeout, well within the group's session.
        net.target_proxy.stall();
        std::thread::sleep(faults::REQUEST_TIMEOUT * 2 + Duration::from_secs(1));
        net.target_proxy.unstall();
    }
    let produced = producer.finish();
    wait_drained(&src, &dst, &mut strait);
    let (status, _) = strait.terminate(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        strait.log_tail()
    );
    let log = strait.log_text();
    let restarts = log
        .matches("restarting the flow from its last commit")
        .count();
    let confirmed = log
        .matches("the group confirmed in a new generation")
        .count();
    println!(
        "{stalls} target stalls: {produced} records; slot restarts {restarts}, confirmed {confirmed}"
    );
    assert!(
        restarts > 0,
        "the stalls failed no slot's transaction, so no restart was confirmed: {}",
        strait.log_tail()
    );
    assert!(
        confirmed > 0,
        "no slot restarted after a confirmation: {}",
        strait.log_tail()
    );
    assert!(
        !log.contains("is no longer this member's"),
        "the only member was told its slot belongs to another: {}",
        strait.log_tail()
    );
    assert_exactly_once(&src, &dst, produced, &strait.log_tail());
}

/// Committed records of the flow's state topic: (partition snapshots, map deltas, delta
/// tombstones), by the first key byte (`state::codec`, `state::delta`).
fn state_records(dst: &str) -> (usize, usize, usize) {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([dst]))
            .await
            .expect("connect");
        let opts = FetchOptions {
            max_wait: Duration::from_millis(50),
            ..FetchOptions::default()
        };
        let topic = "strait-state.src-to-dst.internal";
        let mut c = PartitionConsumer::new(client, topic, 0, 0)
            .with_options(opts)
            .resolving_markers();
        let (mut s, mut d, mut t) = (0, 0, 0);
        loop {
            for r in c.poll().await.expect("poll") {
                match (r.key.as_deref().and_then(|k| k.first()), r.value.is_some()) {
                    (Some(1), true) => s += 1,
                    (Some(3), true) => d += 1,
                    (Some(3), false) => t += 1,
                    _ => {}
                }
            }
            if c.high_watermark() >= 0 && c.position() >= c.high_watermark() {
                return (s, d, t);
            }
        }
    })
}

#[test]
fn sigterm_during_a_target_stall_exits_within_the_bound_and_a_restart_commits_everything_once() {
    let net = faults::Net::start(&[]);
    let (src, dst) = (net.source.bootstrap(), net.target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let delivery =
        "[flows.delivery]\nguarantee = \"exactly_once\"\ntransaction_interval = \"100ms\"";
    let cfg = net.config(dir.path(), &[TOPIC], delivery, "", faults::free_port());
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let log = dir.path().join("strait.log");
    let mut strait = Strait::start(&cfg, &log);
    wait_for("a commit", Duration::from_secs(60), || {
        strait.assert_running();
        committed_on_target(&dst) > 0
    });
    // Connections open, no bytes moving: the next commit waits on the target.
    net.target_proxy.stall();
    std::thread::sleep(Duration::from_millis(500));
    let (status, took) = strait.terminate(faults::stop_bound() * 2);
    let bound = faults::stop_bound();
    assert!(
        status.is_some() && took <= bound,
        "stopped after {took:?} (bound {bound:?}): {status:?}\n{}",
        strait.log_tail()
    );
    net.target_proxy.unstall();
    let produced = producer.finish();
    let mut strait = Strait::start(&cfg, &log);
    wait_drained(&src, &dst, &mut strait);
    let (status, _) = strait.terminate(Duration::from_secs(20));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        strait.log_tail()
    );
    println!(
        "SIGTERM during a target stall: stopped in {took:?} (bound {bound:?}); {produced} records once"
    );
    assert_exactly_once(&src, &dst, produced, &strait.log_tail());
    assert_maps_exact(&cfg, &src, &dst);
}

#[test]
fn a_foreign_writer_on_the_target_is_a_target_mismatch_that_stops_the_flow_under_fail() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, 10);
    let mut strait = Strait::start(&cfg, &dir.path().join("strait.log"));
    wait_for("replication", Duration::from_secs(30), || {
        strait.assert_running();
        committed_on_target(&dst) > 100
    });
    // Someone else writes into the target partition Strait owns (not our records).
    let foreign: Vec<TestRecord> = (0..5)
        .map(|i| TestRecord::new("x", format!("foreign-{i}")).with_partition(0))
        .collect();
    rdkafka::produce(&dst, TARGET, &foreign, &ProduceOptions::default()).expect("produce");
    // The default on_target_mismatch is "fail": the flow stops, it is not restarted.
    let (status, _) = strait.wait_exit(Duration::from_secs(60));
    drop(producer);
    let log = strait.log_text();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the flow stops: {status:?}\n{}",
        strait.log_tail()
    );
    assert!(
        log.contains("expected") && log.contains("only writer"),
        "the incident names it:\n{}",
        strait.log_tail()
    );
    assert!(
        !log.contains("restarting the flow from its last commit"),
        "a fail incident is not restarted:\n{}",
        strait.log_tail()
    );
}
