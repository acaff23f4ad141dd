//! Crash and stop tests of the real `strait` binary (docs/operations.md, "Stopping
//! and restarting"): two Tansu brokers, a producer writing numbered records to a
//! multi-partition source topic the whole time, and `strait run` killed mid-stream.
//!
//! - kill -9, restart: nothing lost, per-partition order kept, duplicates within
//!   `max_in_flight_per_partition` batches per partition.
//! - SIGTERM (exit 0), restart: nothing lost and no duplicates.
//!
//! Every process a test starts is stopped on drop, also when an assertion fails.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use strait_client::IsolationLevel;
use strait_testkit::TansuCluster;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation};

mod common;
use common::load::NumberedProducer;
use common::read::{partition_ends, runtime, saved_maps};
use common::{Strait, log_tail};

/// SIGTERM, then the exit status within `deadline` (a test failure if it does not stop).
fn terminated(strait: &mut Strait, deadline: Duration) -> ExitStatus {
    let (status, _) = strait.terminate(deadline);
    status.unwrap_or_else(|| {
        panic!(
            "strait did not stop within {deadline:?} of SIGTERM:\n{}",
            strait.log_tail()
        )
    })
}

const TOPIC: &str = "crash";
const PARTITIONS: i32 = 3;
/// librdkafka `batch.num.messages`: no source batch (so no forwarded batch) holds more.
const BATCH_RECORDS: u32 = 10;
/// Records per partition in one producer call.
const PER_CALL: u64 = 25;
/// Strait's default `engine.max_in_flight_per_partition`.
const MAX_IN_FLIGHT: u64 = 5;

fn config(dir: &Path, source: &str, target: &str) -> PathBuf {
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
enabled = false
"#,
        two_cluster_flow(source, target, "3s")
    );
    let path = dir.join("strait.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// High watermarks per partition (`None` while the topic does not exist).
fn ends(rt: &tokio::runtime::Runtime, bootstrap: &str, topic: &str) -> Option<Vec<i64>> {
    ends_at(rt, bootstrap, topic, IsolationLevel::ReadUncommitted)
}

/// Per partition, the high watermark (read_uncommitted) or last stable offset
/// (read_committed, what strait fetches up to), from Fetch.
fn ends_at(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    topic: &str,
    isolation: IsolationLevel,
) -> Option<Vec<i64>> {
    partition_ends(rt, bootstrap, topic, PARTITIONS, isolation)
}

fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    wait_for_or(what, deadline, &mut done, String::new);
}

/// [`wait_for`], adding `diagnose()` to the failure message.
fn wait_for_or(
    what: &str,
    deadline: Duration,
    mut done: impl FnMut() -> bool,
    diagnose: impl FnOnce() -> String,
) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= deadline {
            panic!("timed out waiting for {what}\n{}", diagnose());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until every target partition holds at least the source's records and its end
/// has not moved for a while (late duplicates landed).
fn wait_caught_up(rt: &tokio::runtime::Runtime, src: &str, dst: &str, strait: &mut Strait) {
    let source = ends(rt, src, TOPIC).expect("source ends");
    let mut last: Option<(Vec<i64>, Instant)> = None;
    let target_topic = format!("src.{TOPIC}");
    let log = strait.log.clone();
    wait_for_or(
        "the target to catch up",
        Duration::from_secs(30),
        || {
            strait.assert_running();
            let Some(target) = ends(rt, dst, &target_topic) else {
                return false;
            };
            if target.iter().zip(&source).any(|(t, s)| t < s) {
                return false;
            }
            match &last {
                Some((prev, since)) if *prev == target => {
                    since.elapsed() > Duration::from_millis(1500)
                }
                _ => {
                    last = Some((target, Instant::now()));
                    false
                }
            }
        },
        || {
            format!(
                "source ends {source:?} (read_committed: {:?}), target ends {:?}\n{}",
                ends_at(rt, src, TOPIC, IsolationLevel::ReadCommitted),
                ends(rt, dst, &target_topic),
                log_tail(&log)
            )
        },
    );
}

/// Values per partition in offset order.
fn read_all(bootstrap: &str, topic: &str, count: usize) -> BTreeMap<i32, Vec<String>> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadUncommitted,
        idle: Duration::from_secs(3),
        ..ConsumeOptions::count(count)
    };
    let mut records = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in records {
        let v = r.value.map(|v| String::from_utf8_lossy(&v).into_owned());
        out.entry(r.partition)
            .or_default()
            .push(v.unwrap_or_default());
    }
    out
}

/// Checks every source record is on the target in per-partition order; returns the
/// duplicates per partition.
fn verify(src: &str, dst: &str, produced: u64) -> BTreeMap<i32, usize> {
    let source = read_all(src, TOPIC, produced as usize);
    let source_total: usize = source.values().map(Vec::len).sum();
    assert_eq!(
        source_total as u64, produced,
        "the source holds what was produced"
    );
    let target_total: usize = ends_total(dst);
    let target = read_all(dst, &format!("src.{TOPIC}"), target_total);
    let mut dups = BTreeMap::new();
    for p in 0..PARTITIONS {
        let s = source.get(&p).cloned().unwrap_or_default();
        let t = target.get(&p).cloned().unwrap_or_default();
        let mut seen = HashSet::new();
        let firsts: Vec<&String> = t.iter().filter(|v| seen.insert(v.as_str())).collect();
        let missing = s.iter().filter(|v| !seen.contains(v.as_str())).count();
        assert_eq!(missing, 0, "partition {p}: {missing} source records lost");
        assert_eq!(
            firsts,
            s.iter().collect::<Vec<_>>(),
            "partition {p}: source order kept"
        );
        assert!(
            t.iter().all(|v| s.contains(v)),
            "partition {p}: nothing the source does not hold"
        );
        dups.insert(p, t.len() - s.len());
    }
    dups
}

fn ends_total(dst: &str) -> usize {
    let rt = runtime();
    ends(&rt, dst, &format!("src.{TOPIC}"))
        .expect("target ends")
        .iter()
        .map(|e| *e as usize)
        .sum()
}

/// Starts the brokers, the producer and Strait; returns once Strait replicated some
/// records while the producer is still writing.
fn setup() -> (TansuCluster, tempfile::TempDir, PathBuf) {
    let cluster = TansuCluster::start(2).expect("brokers");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(
        dir.path(),
        &cluster.broker(0).bootstrap(),
        &cluster.broker(1).bootstrap(),
    );
    rdkafka::create_topic(&cluster.broker(0).bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    (cluster, dir, cfg)
}

fn replicated(rt: &tokio::runtime::Runtime, dst: &str) -> i64 {
    ends(rt, dst, &format!("src.{TOPIC}")).map_or(0, |e| e.iter().sum())
}

/// How many partitions' targets end past their saved maps (the state topic read as a
/// restart reads it).
fn past_saved_maps(rt: &tokio::runtime::Runtime, cfg: &Path, dst: &str) -> usize {
    let registry = saved_maps(rt, cfg, dst);
    let ends = ends(rt, dst, &format!("src.{TOPIC}")).expect("target ends");
    (0..PARTITIONS)
        .filter(|p| {
            let saved = registry
                .reader(TOPIC, *p)
                .map_or(0, |r| r.read(|m| m.next(strait_offsets::Side::Target)));
            ends[*p as usize] > saved as i64
        })
        .count()
}

/// A run stopped mid-stream and restarted, after the target caught up.
struct Restarted {
    produced: u64,
    /// Records on the target right after the stop.
    at_stop: i64,
    /// Partitions whose target held records past the saved map after the stop: the
    /// restart must match each one's tail to the source by content.
    past_map: usize,
    /// Duplicates per partition.
    dups: BTreeMap<i32, usize>,
    /// The restarted process; the brokers and its directory live as long as it does.
    strait: Strait,
    _dir: tempfile::TempDir,
    _cluster: TansuCluster,
}

/// Replicates under a steady load, applies `stop` once 300 records are on the target
/// (`before`: what the wait is for), restarts strait on the same config and state, and
/// verifies the target once it has caught up with everything produced.
fn stop_and_restart(before: &str, stop: impl FnOnce(&mut Strait)) -> Restarted {
    let (cluster, dir, cfg) = setup();
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let rt = runtime();
    let log = dir.path().join("strait.log");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut strait = Strait::start(&cfg, &log);
    wait_for(before, Duration::from_secs(20), || {
        strait.assert_running();
        replicated(&rt, &dst) >= 300
    });
    stop(&mut strait);
    let at_stop = replicated(&rt, &dst);
    let past_map = past_saved_maps(&rt, &cfg, &dst);
    std::thread::sleep(Duration::from_millis(500));
    let mut strait = Strait::start(&cfg, &log);
    wait_for(
        "replication after the restart",
        Duration::from_secs(20),
        || {
            strait.assert_running();
            replicated(&rt, &dst) > at_stop + 150
        },
    );
    let produced = producer.finish();
    wait_caught_up(&rt, &src, &dst, &mut strait);
    let dups = verify(&src, &dst, produced);
    Restarted {
        produced,
        at_stop,
        past_map,
        dups,
        strait,
        _dir: dir,
        _cluster: cluster,
    }
}

#[test]
fn kill_9_mid_stream_then_restart_loses_nothing_and_duplicates_stay_bounded() {
    let run = stop_and_restart("records replicated before the crash", |strait| {
        // Past at least one checkpoint, so the restart recovers from a saved map and reads
        // back what was written after it.
        std::thread::sleep(Duration::from_millis(1200));
        strait.kill9();
    });
    let (produced, at_kill, dups) = (run.produced, run.at_stop, &run.dups);
    let total: usize = dups.values().sum();
    let bound = (MAX_IN_FLIGHT * u64::from(BATCH_RECORDS)) as usize;
    let log = std::fs::read_to_string(&run.strait.log).unwrap_or_default();
    let checked = log
        .matches("write was matched to the source by content")
        .count();
    println!(
        "kill -9: {produced} records produced, {at_kill} on the target at the kill; \
         duplicates per partition {dups:?} (total {total}); bound {bound} per partition \
         ({MAX_IN_FLIGHT} batches of <= {BATCH_RECORDS} records); partitions whose \
         target tail recovery checked by content: {checked} (past their saved maps at \
         the kill: {})",
        run.past_map
    );
    // Every partition whose target held records past its saved map had them proven by
    // content (the kill may land just after a checkpoint: then there are none).
    assert_eq!(
        checked,
        run.past_map,
        "partitions recovered by content vs partitions past their saved maps:\n{}",
        run.strait.log_tail()
    );
    for (p, d) in dups {
        assert!(
            *d <= bound,
            "partition {p}: {d} duplicates > {bound}:\n{}",
            run.strait.log_tail()
        );
    }
}

#[test]
fn sigterm_mid_stream_then_restart_loses_nothing_and_duplicates_nothing() {
    let mut run = stop_and_restart("records replicated before the stop", |strait| {
        let status = terminated(strait, Duration::from_secs(15));
        assert_eq!(
            status.code(),
            Some(0),
            "graceful stop:\n{}",
            strait.log_tail()
        );
    });
    let (produced, at_stop, dups) = (run.produced, run.at_stop, &run.dups);
    let total: usize = dups.values().sum();
    println!(
        "SIGTERM: {produced} records produced, {at_stop} on the target at the stop; \
         duplicates {total}"
    );
    assert_eq!(
        total,
        0,
        "duplicates per partition {dups:?}:\n{}",
        run.strait.log_tail()
    );
    let status = terminated(&mut run.strait, Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "second graceful stop");
}

/// How many kill -9s [`kill_9_repeatedly_under_load_loses_nothing`] makes: `STRAIT_KILLS`
/// (scripts/soak sets 50), else 4.
fn kills() -> usize {
    std::env::var("STRAIT_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

#[test]
fn kill_9_repeatedly_under_load_loses_nothing() {
    let kills = kills();
    let (cluster, dir, cfg) = setup();
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let rt = runtime();
    let log = dir.path().join("strait.log");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let started = Instant::now();
    // A deterministic spread of kill moments (0–1.5 s after progress), different per run
    // of the loop; the seed is printed so a failure can be replayed.
    let seed = std::process::id() as u64;
    let mut x = seed | 1;
    for k in 0..kills {
        let mut strait = Strait::start(&cfg, &log);
        let before = replicated(&rt, &dst);
        wait_for_or(
            "replication progress before the next kill",
            Duration::from_secs(30),
            || {
                strait.assert_running();
                replicated(&rt, &dst) > before + 60
            },
            || log_tail(&log),
        );
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::thread::sleep(Duration::from_millis(x % 1500));
        strait.kill9();
        if k % 10 == 9 {
            println!("{} kills after {:?}", k + 1, started.elapsed());
        }
    }
    let mut strait = Strait::start(&cfg, &log);
    let produced = producer.finish();
    wait_caught_up(&rt, &src, &dst, &mut strait);
    let dups = verify(&src, &dst, produced);
    let total: usize = dups.values().sum();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let checked = text
        .matches("write was matched to the source by content")
        .count();
    let bound = kills * (MAX_IN_FLIGHT * u64::from(BATCH_RECORDS)) as usize;
    println!(
        "kill -9 x {kills} (seed {seed}) in {:?}: {produced} records produced and all on the \
         target in order (0 lost); duplicates per partition {dups:?} (total {total}, bound \
         {bound} per partition); target tails checked by content on restart: {checked}",
        started.elapsed()
    );
    for (p, d) in &dups {
        assert!(*d <= bound, "partition {p}: {d} duplicates > {bound}");
    }
}
