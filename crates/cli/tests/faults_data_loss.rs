//! The fault suite, a broker that restarts and loses its data (issue 12 item 6; Tansu's
//! memory store: `TansuBroker::restart` comes back empty on the same port, behind the same
//! proxy). Nothing may be silently rewritten:
//!
//! - the **target** loses everything while `strait run` replicates: with
//!   `on_target_mismatch = "fail"` (the default) the flow stops with a message naming
//!   the partition; with `"skip"` it goes on,
//!   and what it replicates afterwards is complete (a gap-free, ordered run of the source
//!   up to its end);
//! - the **source** loses everything and its topic is re-created with new records: the
//!   default policies stop the flow with a clear message and no new record is written
//!   after the old ones (the fetchers fetch by topic id, so the new topic is refused
//!   rather than read at the old position).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_testkit::rdkafka;
use strait_testkit::rdkafka::Isolation;
use strait_testkit::verify::{read_to_end, read_to_end_if_exists};

mod common;
use common::Strait;
use common::faults::*;

const TOPIC: &str = "lost";
/// Records per partition written before the restart.
const BEFORE: usize = 200;
/// Generous bound on noticing the loss and stopping (correctness, not speed).
const NOTICE_BOUND: Duration = Duration::from_secs(60);

fn sources(net: &Net) -> BTreeMap<i32, Vec<Bytes>> {
    read_to_end(&net.source.bootstrap(), TOPIC, Isolation::ReadUncommitted).expect("source")
}

/// The target topic to its end: empty while it does not exist (a restarted, empty target);
/// a failed read fails the test, it is never "nothing was written".
fn targets(net: &Net) -> BTreeMap<i32, Vec<Bytes>> {
    let topic = format!("src.{TOPIC}");
    read_to_end_if_exists(&net.target.bootstrap(), &topic, Isolation::ReadUncommitted)
        .unwrap_or_else(|e| panic!("read {topic} on the target: {e}"))
}

/// Aborts strait's connections to `side` with RSTs (no TIME_WAIT on the broker's port:
/// Tansu binds without SO_REUSEADDR), restarts that broker empty, and lets connections
/// through again.
fn restart_empty(net: &mut Net, target: bool) {
    let (proxy, broker) = if target {
        (&net.target_proxy, &mut net.target)
    } else {
        (&net.source_proxy, &mut net.source)
    };
    proxy.reset();
    broker.restart().expect("broker restart");
    proxy.uncut();
}

/// Starts strait on a source with `BEFORE` records per partition and waits until they
/// are all on the target.
fn replicated(policy: &str) -> (Net, tempfile::TempDir, Strait, u16) {
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Net::start(&[TOPIC]);
    produce_now(&net.source.bootstrap(), TOPIC, 0, BEFORE, 0);
    let port = free_port();
    let config = net.config(dir.path(), &[TOPIC], policy, "", port);
    let mut strait = Strait::start(&config, &dir.path().join("strait.log"));
    let report = wait_replicated(&net, TOPIC, &mut strait, Duration::from_secs(60));
    assert!(report.problems(0).is_empty(), "{report}");
    (net, dir, strait, port)
}

/// Waits for strait to exit by itself; its status and log.
fn exits(strait: &mut Strait, what: &str) -> (std::process::ExitStatus, String) {
    let (status, took) = strait.wait_exit(NOTICE_BOUND);
    let log = strait.log_text();
    let status = status
        .unwrap_or_else(|| panic!("{what}: strait still running {NOTICE_BOUND:?} later:\n{log}"));
    println!("fault suite: {what}: strait exited {status} after {took:?}");
    (status, log)
}

#[test]
fn a_target_that_restarts_empty_stops_the_flow_under_the_fail_policy() {
    let started = Instant::now();
    let (mut net, _dir, mut strait, _) = replicated("");
    restart_empty(&mut net, true);
    // New source records: the next produce lands where the map says it cannot.
    produce_now(&net.source.bootstrap(), TOPIC, BEFORE, 20, 0);
    let (status, log) = exits(&mut strait, "target restarted empty, policy fail");
    assert!(!status.success(), "a stopped flow is a failed run\n{log}");
    let named = log
        .lines()
        .find(|l| l.contains("ERROR") && l.contains(TOPIC) && l.contains("partition"));
    assert!(
        named.is_some(),
        "an ERROR line names the topic and partition:\n{log}"
    );
    // Nothing was rewritten behind the operator's back: at most the batches in flight
    // when the loss was noticed landed on the emptied target.
    let target = targets(&net);
    let landed: usize = target.values().map(Vec::len).sum();
    println!(
        "fault suite: target restarted empty, policy fail: stopped with {:?}; {landed} records \
         on the emptied target ({:?} wall)",
        named.unwrap_or_default(),
        started.elapsed()
    );
    for (p, values) in &target {
        assert!(
            values.len() <= PER_EVENT_BOUND,
            "partition {p}: {} records written after the loss",
            values.len()
        );
    }
}

#[test]
fn a_target_that_restarts_empty_is_skipped_and_what_follows_is_complete() {
    target_lost_then_skipped(false);
}

/// The same, then a SIGTERM that must stop cleanly: the state topic went with the target's
/// data, and the final state write must not wait for a topic nobody re-creates.
#[test]
fn after_the_target_restarted_empty_state_writes_resume_and_a_stop_is_clean() {
    target_lost_then_skipped(true);
}

fn target_lost_then_skipped(stop_must_be_clean: bool) {
    let started = Instant::now();
    let (mut net, _dir, mut strait, port) = replicated("on_target_mismatch = \"skip\"");
    restart_empty(&mut net, true);
    // Strait's topic sync re-creates the target topic on the emptied broker before new
    // records arrive: a Produce to a missing topic makes Tansu create it by itself, and a
    // CreateTopics right after then empties it again (acknowledged records vanish, see
    // docs/compatibility.md), a loss no replicator can see.
    let t = Instant::now();
    while strait.log_text().matches("created target topic").count() < 2 {
        strait.assert_running();
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the target topic is re-created on the emptied broker:\n{}",
            strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = 100;
    produce_now(&net.source.bootstrap(), TOPIC, BEFORE, after, 0);
    // Every record written after the restart must arrive, in order, gap-free up to the end.
    let deadline = Instant::now() + Duration::from_secs(90);
    let (source, target) = loop {
        strait.assert_running();
        let (s, t) = (sources(&net), targets(&net));
        let done = (0..PARTITIONS).all(|p| {
            let last = s.get(&p).and_then(|v| v.last());
            t.get(&p).and_then(|v| v.last()) == last && last.is_some()
        });
        if done || Instant::now() > deadline {
            break (s, t);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let metrics = http_get(port, "/metrics");
    let incidents = metric(
        &metrics,
        "strait_incidents_total",
        &["kind=\"target_mismatch\""],
    );
    let mut summary = Vec::new();
    for p in 0..PARTITIONS {
        let s = source.get(&p).cloned().unwrap_or_default();
        let t = target.get(&p).cloned().unwrap_or_default();
        let first = t.first().unwrap_or_else(|| {
            panic!(
                "partition {p}: nothing replicated after the loss\n{}",
                strait.log_tail()
            )
        });
        let k = s
            .iter()
            .position(|v| v == first)
            .unwrap_or_else(|| panic!("partition {p}: {:?} is not the source's", text(first)));
        let mut deduped = t.clone();
        deduped.dedup();
        assert_eq!(
            deduped,
            s[k..].to_vec(),
            "partition {p}: the target holds a gap-free, ordered run of the source from \
             offset {k} to its end"
        );
        assert!(
            k <= BEFORE,
            "partition {p}: replication resumed at source offset {k}, after records written \
             after the loss"
        );
        summary.push(format!(
            "partition {p}: resumed at source offset {k}, {} records, {} duplicates",
            t.len(),
            t.len() - deduped.len()
        ));
    }
    println!(
        "fault suite: target restarted empty, policy skip: {incidents} target_mismatch \
         incidents; {} ({:?} wall)",
        summary.join("; "),
        started.elapsed()
    );
    assert!(incidents >= 1.0, "the incident is counted:\n{metrics}");
    let (status, took) = strait.terminate(stop_bound() * 3);
    let status = status.expect("strait stops on SIGTERM");
    println!("fault suite: target restarted empty, policy skip: SIGTERM: {status} after {took:?}");
    if stop_must_be_clean {
        assert!(
            status.success(),
            "clean stop: {status}\n{}",
            strait.log_tail()
        );
    }
}

#[test]
fn a_source_that_restarts_empty_and_is_rewritten_stops_the_flow_and_nothing_new_is_copied() {
    let started = Instant::now();
    let (mut net, _dir, mut strait, _) = replicated("");
    let old = targets(&net);
    restart_empty(&mut net, false);
    // The topic comes back (a new topic id) with other records at the same offsets.
    rdkafka::create_topic(&net.source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let pad = 5;
    produce_now(&net.source.bootstrap(), TOPIC, 0, BEFORE + 50, pad);
    let (status, log) = exits(&mut strait, "source restarted empty, default policies");
    assert!(!status.success(), "a stopped flow is a failed run\n{log}");
    let line = log
        .lines()
        .find(|l| {
            l.contains("ERROR")
                && l.contains(TOPIC)
                && ["re-creat", "truncat", "log start"]
                    .iter()
                    .any(|w| l.contains(w))
        })
        .unwrap_or_else(|| panic!("an ERROR line says what happened to the source:\n{log}"));
    let target = targets(&net);
    let new: usize = target
        .values()
        .flatten()
        .filter(|v| text(v).matches(':').count() > 1)
        .count();
    println!(
        "fault suite: source restarted empty and rewritten: {line:?}; {new} new-source \
         records on the target ({:?} wall)",
        started.elapsed()
    );
    assert_eq!(new, 0, "no record of the rewritten source was copied");
    assert_eq!(
        target, old,
        "the target is as it was before the source was lost"
    );
}
