//! `strait run` against a target whose network stalls (connections open, no bytes moving;
//! issue 12): the target sits behind a testkit `FaultProxy` it advertises, while
//! librdkafka keeps writing the source.
//!
//! - SIGTERM during the stall: the process exits within its stated bound (docs/operations.md:
//!   2 × the target's `request_timeout` + 5 s, and 1 s for the runtime), with exit 0 or a
//!   clear error; also while group sync, heartbeats and checkpoints are stuck on the
//!   stalled target; a restart after the stall recovers every record, in order per
//!   partition, with duplicates within one in-flight window per stall or stop.
//! - A stall longer than `engine.delivery_timeout`: the process keeps running, restarts the
//!   failed partitions in-process (a warning names the partition and the timeout) and
//!   catches up in the same run once the network is back.
//!
//! Every process a test starts is stopped on drop, also when an assertion fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strait_testkit::config::two_cluster_flow;
use strait_testkit::rdkafka::{self, ConsumeOptions, Isolation, ProduceOptions};
use strait_testkit::{BrokerOptions, FaultProxy, TansuBroker, TestRecord};

mod common;
use common::Strait;

const TOPIC: &str = "stall";
const PARTITIONS: i32 = 2;
/// The target's (and source's) `request_timeout` in the test configs.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The documented stop bound: 2 × the target's request timeout + 5 s, and 1 s for the
/// runtime's shutdown.
fn stop_bound() -> Duration {
    REQUEST_TIMEOUT * 2 + Duration::from_secs(6)
}

/// Slack over [`stop_bound`] for a loaded test machine (process start-up of `kill`, the
/// polling of the exit).
const EXIT_SLACK: Duration = Duration::from_secs(3);

/// Group sync, heartbeats and checkpoints every second (all of them write to the target).
const SYNC_ON: &str = "[flows.sync]
group_offsets = true
heartbeats = true
checkpoints = true
[flows.intervals]
checkpoint = \"1s\"
group_sync = \"1s\"
heartbeat = \"1s\"
";

/// Only the state checkpoint every second.
const SYNC_NONE: &str = "[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[flows.intervals]
checkpoint = \"1s\"
";

/// Brokers: the source direct, the target behind a proxy (dropped last: proxy first).
struct Brokers {
    proxy: FaultProxy,
    target: TansuBroker,
    source: TansuBroker,
}

impl Brokers {
    fn start() -> Brokers {
        let source = TansuBroker::start().expect("source broker");
        let (target, proxy) =
            TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
        rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
        Brokers {
            proxy,
            target,
            source,
        }
    }

    fn config(&self, dir: &Path, delivery_timeout: &str, sync: &str) -> PathBuf {
        // STALL_TEST_LOG=debug (or any directives) for a closer look.
        let level = std::env::var("STALL_TEST_LOG").unwrap_or_else(|_| "info".into());
        let text = format!(
            r#"{}[flows.topics]
include = ["{TOPIC}"]
{sync}[engine]
fetch_max_wait = "50ms"
delivery_timeout = "{delivery_timeout}"
[metrics]
enabled = false
[logging]
level = "{level}"
"#,
            two_cluster_flow(
                &self.source.bootstrap(),
                &self.proxy.bootstrap(),
                &format!("{}s", REQUEST_TIMEOUT.as_secs())
            )
        );
        let path = dir.join(format!("strait-{delivery_timeout}-{}.toml", sync.len()));
        std::fs::write(&path, text).expect("write config");
        path
    }
}

fn records(from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| TestRecord::new(format!("k{i}"), format!("v{i:06}")).with_partition(i as i32 % 2))
        .collect()
}

/// Records per source batch (librdkafka `batch.num.messages`): no forwarded batch holds more.
const BATCH_RECORDS: u32 = 10;
/// Strait's default `engine.max_in_flight_per_partition`.
const MAX_IN_FLIGHT: usize = 5;

/// Source writes in batches of at most [`BATCH_RECORDS`].
fn batched() -> ProduceOptions {
    ProduceOptions {
        batch_num_messages: Some(BATCH_RECORDS),
        ..ProduceOptions::default()
    }
}

/// Per partition, source and target read to their ends: nothing lost, order kept,
/// nothing foreign, and at most one in-flight window of duplicates per `events` (a stall
/// or stop that can leave requests unanswered): docs/operations.md, "Stopping and restarting".
fn assert_copy(brokers: &Brokers, events: usize, log: &str) -> strait_testkit::verify::Report {
    use strait_testkit::verify::{check, read_to_end};
    let source = read_to_end(
        &brokers.source.bootstrap(),
        TOPIC,
        Isolation::ReadUncommitted,
    )
    .expect("read the source");
    let target = read_to_end(
        &brokers.target.bootstrap(),
        &format!("src.{TOPIC}"),
        Isolation::ReadUncommitted,
    )
    .expect("read the target");
    let report = check(&source, &target);
    let bound = events * MAX_IN_FLIGHT * BATCH_RECORDS as usize;
    let problems = report.problems(bound);
    assert!(problems.is_empty(), "{problems:#?}\n{report}\n{log}");
    report
}

fn values(records: &[TestRecord]) -> BTreeSet<String> {
    records
        .iter()
        .filter_map(|r| r.value.as_ref())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// Writes `records` to the source in the background, paced (librdkafka).
fn write_paced(bootstrap: String, records: Vec<TestRecord>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let opts = ProduceOptions {
            pace: Some(Duration::from_millis(10)),
            timeout: Duration::from_secs(120),
            batch_num_messages: Some(BATCH_RECORDS),
            ..ProduceOptions::default()
        };
        let delivered = rdkafka::produce(&bootstrap, TOPIC, &records, &opts).expect("produce");
        assert!(delivered.iter().all(|d| d.error.is_none()), "source writes");
    })
}

/// Per value, how many times the target holds it (read directly, past the proxy).
fn target_counts(target: &TansuBroker) -> BTreeMap<String, usize> {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadUncommitted,
        max_time: Duration::from_secs(30),
        ..ConsumeOptions::until_idle(Duration::from_secs(2))
    };
    let mut counts = BTreeMap::new();
    for r in
        rdkafka::consume(&target.bootstrap(), &format!("src.{TOPIC}"), &opts).unwrap_or_default()
    {
        if let Some(v) = r.value {
            *counts
                .entry(String::from_utf8_lossy(&v).into_owned())
                .or_default() += 1;
        }
    }
    counts
}

/// Waits until the target holds every value of `want`; returns the counts.
fn wait_all(
    target: &TansuBroker,
    want: &BTreeSet<String>,
    strait: &mut Strait,
) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        strait.assert_running();
        let counts = target_counts(target);
        if want.iter().all(|v| counts.contains_key(v)) {
            return counts;
        }
        assert!(
            Instant::now() < deadline,
            "the target holds {} of {} records after 60 s:\n{}",
            want.iter().filter(|v| counts.contains_key(*v)).count(),
            want.len(),
            strait.log_text()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Restarts strait with the network back, waits for every record, stops it (exit 0) and
/// returns (lost, duplicates).
fn recover(brokers: &Brokers, config: &Path, log: &Path, all: &BTreeSet<String>) -> (usize, usize) {
    let mut strait = Strait::start(config, log);
    let counts = wait_all(&brokers.target, all, &mut strait);
    let (status, _) = strait.terminate(stop_bound() * 3);
    let status = status.expect("the restarted strait stops on SIGTERM");
    assert!(
        status.success(),
        "clean stop when healthy: {status}\n{}",
        strait.log_text()
    );
    let lost = all.iter().filter(|v| !counts.contains_key(*v)).count();
    let duplicates = counts.values().map(|n| n - 1).sum();
    let foreign: Vec<_> = counts.keys().filter(|v| !all.contains(*v)).collect();
    assert!(
        foreign.is_empty(),
        "only source records on the target: {foreign:?}"
    );
    // The stall (stopped by SIGTERM) and the restart: one in-flight window each at most.
    assert_copy(brokers, 2, &strait.log_text());
    (lost, duplicates)
}

#[test]
fn sigterm_during_a_target_stall_exits_within_the_bound_and_a_restart_loses_nothing() {
    sigterm_during_a_stall(SYNC_NONE, "data path and checkpoints");
}

#[test]
fn sigterm_while_group_sync_and_heartbeats_hang_on_a_stalled_target_exits_within_the_bound() {
    sigterm_during_a_stall(SYNC_ON, "group sync, heartbeats and checkpoints");
}

fn sigterm_during_a_stall(sync: &str, what: &str) {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let brokers = Brokers::start();
    let before = records(0, 100);
    rdkafka::produce(&brokers.source.bootstrap(), TOPIC, &before, &batched()).expect("produce");
    // A source group for the group sync to translate and commit on the target.
    rdkafka::commit_group_offsets(
        &brokers.source.bootstrap(),
        "app",
        TOPIC,
        &[(0, 10), (1, 10)],
    )
    .expect("commit a source group");
    // The delivery timeout is far away: only the stop can end this run.
    let config = brokers.config(dir.path(), "120s", sync);
    let log = dir.path().join("strait.log");
    let mut strait = Strait::start(&config, &log);
    wait_all(&brokers.target, &values(&before), &mut strait);

    let during = records(100, 200);
    let writer = write_paced(brokers.source.bootstrap(), during.clone());
    std::thread::sleep(Duration::from_millis(300));
    brokers.proxy.stall();
    // Batches, a checkpoint, group syncs, heartbeats and connection attempts now hang on
    // the target.
    std::thread::sleep(Duration::from_secs(4));
    strait.assert_running();
    let bound = stop_bound() + EXIT_SLACK;
    let (status, took) = strait.terminate(bound);
    let text = strait.log_text();
    let status = status.unwrap_or_else(|| {
        panic!("strait still running {bound:?} after SIGTERM during a stall ({what}):\n{text}")
    });
    eprintln!(
        "SIGTERM during a stall ({what}): exit {status} after {took:?} (bound {:?})",
        stop_bound()
    );
    if !status.success() {
        assert!(
            text.contains("not acknowledged within") || text.contains("did not stop within"),
            "a non-zero exit says why: {status}\n{text}"
        );
    }
    brokers.proxy.unstall();
    writer.join().expect("writer");

    let mut all = values(&before);
    all.extend(values(&during));
    let (lost, duplicates) = recover(&brokers, &config, &log, &all);
    eprintln!(
        "SIGTERM stall figures ({what}): {} source records, {lost} lost, {duplicates} \
         duplicates ({:?} wall)",
        all.len(),
        started.elapsed()
    );
    assert_eq!(lost, 0, "every source record reached the target");
}

#[test]
fn a_stall_past_the_delivery_timeout_restarts_the_partitions_and_catches_up_in_the_same_run() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let brokers = Brokers::start();
    let before = records(0, 100);
    rdkafka::produce(&brokers.source.bootstrap(), TOPIC, &before, &batched()).expect("produce");
    let config = brokers.config(dir.path(), "4s", SYNC_NONE);
    let log = dir.path().join("strait.log");
    let mut strait = Strait::start(&config, &log);
    wait_all(&brokers.target, &values(&before), &mut strait);

    let during = records(100, 200);
    let writer = write_paced(brokers.source.bootstrap(), during.clone());
    std::thread::sleep(Duration::from_millis(300));
    brokers.proxy.stall();
    // Past the delivery timeout (4 s) and a few restart attempts.
    std::thread::sleep(Duration::from_secs(12));
    strait.assert_running();
    let text = strait.log_text();
    assert!(
        text.contains("restarting it in-process")
            && text.contains("delivery timeout")
            && text.contains("partition"),
        "a warning names the partition, the delivery timeout and the restart:\n{text}"
    );
    brokers.proxy.unstall();
    writer.join().expect("writer");

    let mut all = values(&before);
    all.extend(values(&during));
    // The same process catches up, then stops cleanly on SIGTERM.
    let counts = wait_all(&brokers.target, &all, &mut strait);
    let (status, took) = strait.terminate(stop_bound() + EXIT_SLACK);
    let status = status.expect("strait stops on SIGTERM");
    assert!(
        status.success(),
        "clean stop after the outage: {status} ({took:?})\n{}",
        strait.log_text()
    );
    let lost = all.iter().filter(|v| !counts.contains_key(*v)).count();
    let duplicates: usize = counts.values().map(|n| n - 1).sum();
    let foreign: Vec<_> = counts.keys().filter(|v| !all.contains(*v)).collect();
    assert!(
        foreign.is_empty(),
        "only source records on the target: {foreign:?}"
    );
    let restarts = strait.log_text().matches("partition restarted").count();
    eprintln!(
        "delivery-timeout stall figures: stall 12s, {} source records, {lost} lost, \
         {duplicates} duplicates, {restarts} restart(s), all in one run ({:?} wall)",
        all.len(),
        started.elapsed()
    );
    assert!(restarts >= 1, "the partitions were restarted in-process");
    assert_eq!(lost, 0, "every source record reached the target");
    // Order kept per partition; duplicates within one in-flight window per restart.
    assert_copy(&brokers, restarts.max(1), &strait.log_text());
}
