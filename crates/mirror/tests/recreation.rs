//! A source topic deleted and created again under the same name while `Engine::run`
//! replicates it, against real brokers (Tansu) with librdkafka as the independent reader
//! and writer. The topic refresh is an hour away, so only the fetchers can find it: they
//! fetch by topic id (Fetch v13), the broker refuses the old id, the router finds the
//! topic under a new id and the flow applies `on_topic_recreation`:
//!
//! - `"fail"` (the default): the flow stops with the incident, and nothing of the new
//!   topic reaches the target — fetching by name read the new topic at the old position
//!   and appended what lay past it;
//! - `"skip"`: every partition restarts its map and copies the new topic from its start,
//!   after what was copied of the old one, each record once and in order.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strait_mirror::config::{Config, load_str};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};
use strait_testkit::{TansuBroker, TestRecord};

mod common;
use common::Running;

const TOPIC: &str = "rc";
const TARGET: &str = "src.rc";
const PARTITIONS: i32 = 2;
/// Records per partition before the re-creation.
const OLD: usize = 30;
/// Records per partition of the new topic: more than the old position, so that a fetch
/// by name at that position would find some.
const NEW: usize = 50;

fn config(source: &str, target: &str, policy: &str) -> Config {
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{policy}
{}[flows.intervals]
topic_refresh = "1h"
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        strait_testkit::config::two_cluster_flow(source, target, "5s"),
        strait_testkit::config::SYNC_OFF
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
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

fn produce(bootstrap: &str, recs: &[TestRecord]) {
    let d = rdkafka::produce(bootstrap, TOPIC, recs, &ProduceOptions::default()).expect("produce");
    assert!(d.iter().all(|d| d.error.is_none()), "source writes");
}

/// Each partition's values in offset order (read with librdkafka).
fn read(bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<String>> {
    let mut got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions {
            max_time: Duration::from_secs(30),
            ..ConsumeOptions::until_idle(Duration::from_secs(1))
        },
    )
    .unwrap_or_default();
    got.sort_by_key(|r| (r.partition, r.offset));
    let mut by: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in got {
        let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
        by.entry(r.partition).or_default().push(v);
    }
    by
}

/// What each partition should hold: `prefix-p-i` for i in `range`, after `before`.
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

/// Waits (at most 60 s) until the target holds `want`; returns what it holds then.
fn wait_for(dst: &str, want: &BTreeMap<i32, Vec<String>>) -> BTreeMap<i32, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = read(dst, TARGET);
        let full = want
            .iter()
            .all(|(p, w)| got.get(p).is_some_and(|g| g.len() >= w.len()));
        if full || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn delete_topic(bootstrap: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = strait_client::Client::connect(strait_client::ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        for (name, r) in client
            .delete_topics(&[TOPIC], Duration::from_secs(10))
            .await
            .expect("delete topics")
        {
            r.unwrap_or_else(|e| panic!("delete {name}: {e}"));
        }
    });
}

/// Two brokers, the old topic replicated, then deleted and created again with `NEW`
/// other records per partition. Returns the brokers, the engine and what the target held.
fn recreated_while_running(
    policy: &str,
) -> (
    TansuBroker,
    TansuBroker,
    Running,
    BTreeMap<i32, Vec<String>>,
) {
    common::init_logging();
    let source = TansuBroker::start().expect("source broker");
    let target = TansuBroker::start().expect("target broker");
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce(&src, &records("old", OLD));
    let engine = Running::start(config(&src, &dst, policy));
    let old = expected(BTreeMap::new(), "old", OLD);
    let got = wait_for(&dst, &old);
    assert_eq!(got, old, "the old topic is replicated first");
    delete_topic(&src);
    let deadline = Instant::now() + Duration::from_secs(10);
    while rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).is_err() {
        assert!(Instant::now() < deadline, "source topic not re-created");
        std::thread::sleep(Duration::from_millis(200));
    }
    produce(&src, &records("new", NEW));
    (source, target, engine, old)
}

#[test]
fn a_topic_recreated_while_replicating_stops_the_flow_under_fail_and_nothing_new_is_copied() {
    let (_source, target, engine, old) = recreated_while_running("");
    let result = engine
        .wait(Duration::from_secs(60))
        .expect("the flow stops within 60 s");
    let err = result.expect_err("a stopped flow is an error of the engine");
    assert!(
        err.contains("topic re-creation") && err.contains("while replicating"),
        "{err}"
    );
    assert!(err.contains("on_topic_recreation = \"fail\""), "{err}");
    let got = read(&target.bootstrap(), TARGET);
    let copied_new: usize = got
        .values()
        .flatten()
        .filter(|v| v.starts_with("new-"))
        .count();
    eprintln!("re-created while replicating, policy fail: {err}; {copied_new} new records copied");
    assert_eq!(got, old, "the target holds the old topic's records only");
}

#[test]
fn a_topic_recreated_while_replicating_is_copied_from_its_start_under_skip() {
    let (_source, target, mut engine, old) =
        recreated_while_running("on_topic_recreation = \"skip\"");
    let want = expected(old, "new", NEW);
    let got = wait_for(&target.bootstrap(), &want);
    let incidents = engine.sum(
        "strait_incidents_total",
        &["topic=\"rc\"", "kind=\"topic_recreation\""],
    );
    let stopped = engine.stop(Duration::from_secs(30));
    eprintln!(
        "re-created while replicating, policy skip: {} records on the target, \
         {incidents} re-creation incident(s)",
        got.values().map(Vec::len).sum::<usize>()
    );
    assert_eq!(
        got, want,
        "per partition: the old records, then the new topic from its start, once each"
    );
    assert_eq!(incidents, 1.0, "found once, for the topic");
    assert!(matches!(stopped, Some(Ok(()))), "clean stop: {stopped:?}");
}
