//! The flow supervisor against real brokers (Tansu), librdkafka as the independent
//! reader and writer:
//!
//! - a source topic deleted while replicated: its partitions stop (state written), their
//!   metric series are pruned, the other topic keeps replicating, and the topic created
//!   again under the same name is picked up as a new topic (the topic re-creation policy);
//! - two flows, one stopped by an incident under policy `fail`: the other keeps
//!   replicating, `/health` names the failed flow, and the engine reports the failure
//!   when it stops;
//! - two flows, one whose target stalls past the delivery timeout: its partition is
//!   restarted in-process (and `/health` reports it restarting) while the other flow
//!   replicates untouched; after the stall both hold every record once.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use strait_mirror::Engine;
use strait_mirror::config::{Config, load_str};
use strait_testkit::rdkafka::{self, ProduceOptions};
use strait_testkit::{TansuBroker, TestRecord};

mod common;
use common::Running;

fn load(text: &str) -> Config {
    load_str(text, "test config", &|_| None).expect("valid config")
}

fn records(prefix: &str, n: usize, partitions: i32) -> Vec<TestRecord> {
    (0..n)
        .map(|i| {
            TestRecord::new(format!("k{i}"), format!("{prefix}-{i:04}"))
                .with_partition(i as i32 % partitions)
        })
        .collect()
}

fn values(records: &[TestRecord]) -> BTreeSet<String> {
    records
        .iter()
        .filter_map(|r| r.value.as_ref())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// The values a topic holds, every partition read to its end with librdkafka; empty while
/// the topic does not exist. A failed read fails the test (it is never "nothing").
fn read(bootstrap: &str, topic: &str) -> Vec<String> {
    strait_testkit::verify::read_to_end_if_exists(
        bootstrap,
        topic,
        strait_testkit::rdkafka::Isolation::ReadCommitted,
    )
    .unwrap_or_else(|e| panic!("read {topic}: {e}"))
    .into_values()
    .flatten()
    .map(|v| String::from_utf8_lossy(&v).into_owned())
    .collect()
}

/// Waits (at most 60 s) until `topic` holds every value of `want`; returns what it holds.
fn wait_for(bootstrap: &str, topic: &str, want: &BTreeSet<String>) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = read(bootstrap, topic);
        let have: BTreeSet<&String> = got.iter().collect();
        if want.iter().all(|v| have.contains(v)) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{topic} holds {} of {} wanted values after 60 s",
            want.iter().filter(|v| have.contains(v)).count(),
            want.len()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Waits (at most 60 s) until `cond` holds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "not within 60 s: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn produce(bootstrap: &str, topic: &str, recs: &[TestRecord]) {
    let d = rdkafka::produce(bootstrap, topic, recs, &ProduceOptions::default()).expect("produce");
    assert!(d.iter().all(|d| d.error.is_none()), "source writes");
}

fn delete_topic(bootstrap: &str, topic: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = strait_client::Client::connect(strait_client::ClientConfig::new([bootstrap]))
            .await
            .expect("connect");
        let results = client
            .delete_topics(&[topic], Duration::from_secs(10))
            .await
            .expect("delete topics");
        for (name, r) in results {
            r.unwrap_or_else(|e| panic!("delete {name}: {e}"));
        }
    });
}

#[test]
fn a_deleted_source_topic_stops_its_partitions_and_a_recreated_one_is_picked_up() {
    common::init_logging();
    let source = TansuBroker::start().expect("source broker");
    let target = TansuBroker::start().expect("target broker");
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "keep", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "gone", 2, &[]).expect("topic");
    let keep1 = records("keep", 50, 1);
    let gone1 = records("gone", 50, 2);
    produce(&src, "keep", &keep1);
    produce(&src, "gone", &gone1);
    let cfg = load(&format!(
        r#"{}[flows.topics]
include = ["keep", "gone"]
on_topic_recreation = "skip"
{}[flows.intervals]
topic_refresh = "1s"
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        strait_testkit::config::two_cluster_flow(&src, &dst, "5s"),
        strait_testkit::config::SYNC_OFF
    ));
    let mut engine = Running::start(cfg);
    wait_for(&dst, "src.keep", &values(&keep1));
    wait_for(&dst, "src.gone", &values(&gone1));
    let series = |e: &Running| {
        e.metrics()
            .render()
            .lines()
            .filter(|l| l.contains("topic=\"gone\"") && l.contains("partition=\""))
            .count()
    };
    assert!(series(&engine) > 0, "the topic's partitions have series");

    delete_topic(&src, "gone");
    wait_until("the deleted topic's partition series are pruned", || {
        series(&engine) == 0
    });
    assert!(engine.wait(Duration::ZERO).is_none(), "the engine runs on");
    // The other topic keeps replicating.
    let keep2 = records("keep2", 30, 1);
    produce(&src, "keep", &keep2);
    let mut keep_all = values(&keep1);
    keep_all.extend(values(&keep2));
    let keep_got = wait_for(&dst, "src.keep", &keep_all);
    assert_eq!(keep_got.len(), keep_all.len(), "no duplicates in src.keep");

    // Created again: picked up as a new topic (policy skip: replicated from its start).
    rdkafka::create_topic(&src, "gone", 2, &[]).expect("topic again");
    let gone2 = records("again", 30, 2);
    produce(&src, "gone", &gone2);
    let mut gone_all = values(&gone1);
    gone_all.extend(values(&gone2));
    let gone_got = wait_for(&dst, "src.gone", &gone_all);
    let recreations = engine.sum(
        "strait_incidents_total",
        &["topic=\"gone\"", "kind=\"topic_recreation\""],
    );
    let stopped = engine.stop(Duration::from_secs(30));
    assert!(matches!(stopped, Some(Ok(()))), "clean stop: {stopped:?}");
    eprintln!(
        "deletion figures: src.keep {} records, src.gone {} records ({} before the \
         deletion, {} after the re-creation), {recreations} re-creation incident(s)",
        keep_got.len(),
        gone_got.len(),
        gone1.len(),
        gone2.len()
    );
    assert_eq!(gone_got.len(), gone_all.len(), "no duplicates in src.gone");
    assert!(
        recreations >= 1.0,
        "the re-created topic went through the topic re-creation policy"
    );
}

#[test]
fn a_flow_stopped_by_a_fail_incident_does_not_stop_the_other_flow() {
    common::init_logging();
    let source = TansuBroker::start().expect("source broker");
    let target = TansuBroker::start().expect("target broker");
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, "ta", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "tb", 1, &[]).expect("topic");
    let (a1, b1) = (records("a", 20, 1), records("b", 20, 1));
    produce(&src, "ta", &a1);
    produce(&src, "tb", &b1);
    let flow = |name: &str, topic: &str| {
        format!(
            r#"[[flows]]
name = "{name}"
source = "src"
target = "dst"
[flows.topics]
include = ["{topic}"]
{}"#,
            strait_testkit::config::SYNC_OFF
        )
    };
    let cfg = load(&format!(
        r#"
[clusters.src]
bootstrap_servers = "{src}"
[clusters.dst]
bootstrap_servers = "{dst}"
{}{}[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        flow("a", "ta"),
        flow("b", "tb")
    ));
    // A first run copies both and saves their state.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let summary = runtime
        .block_on(Engine::new(cfg.clone()).run_once())
        .expect("first run");
    assert_eq!(summary.records(), 40, "{summary}");
    drop(runtime);
    // Someone else writes flow a's target partition: its next run finds records past its
    // state that are not the source's (policy fail by default).
    produce(&dst, "src.ta", &records("foreign", 3, 1));
    let (a2, b2) = (records("a2", 20, 1), records("b2", 20, 1));
    produce(&src, "ta", &a2);
    produce(&src, "tb", &b2);

    let mut engine = Running::start(cfg);
    let mut want_b = values(&b1);
    want_b.extend(values(&b2));
    wait_until("flow a is reported failed", || {
        engine
            .metrics()
            .health()
            .is_err_and(|e| e.contains("flow a: failed"))
    });
    let b_got = wait_for(&dst, "src.tb", &want_b);
    assert_eq!(b_got.len(), want_b.len(), "flow b: every record once");
    assert!(
        engine.wait(Duration::ZERO).is_none(),
        "flow b keeps the engine running"
    );
    let health = engine
        .metrics()
        .health()
        .expect_err("503 while flow a is failed");
    assert!(!health.contains("flow b"), "flow b is healthy: {health}");
    // Flow b keeps replicating after flow a stopped.
    let b3 = records("b3", 10, 1);
    produce(&src, "tb", &b3);
    want_b.extend(values(&b3));
    wait_for(&dst, "src.tb", &want_b);
    let a_got = read(&dst, "src.ta");
    assert!(
        a2.iter()
            .filter_map(|r| r.value.as_ref())
            .all(|v| !a_got.contains(&String::from_utf8_lossy(v).into_owned())),
        "flow a wrote nothing past the incident"
    );
    let stopped = engine.stop(Duration::from_secs(30));
    let err = stopped
        .expect("the engine stops")
        .expect_err("a failed flow makes the run fail");
    eprintln!(
        "isolation: flow b replicated {} records; flow a: {err}",
        b_got.len() + b3.len()
    );
    assert!(
        err.contains("flow a") && err.contains("target mismatch"),
        "the error names the flow and the incident: {err}"
    );
}

#[test]
fn a_flow_whose_target_stalls_restarts_its_partitions_while_the_other_flow_replicates() {
    common::init_logging();
    let source = TansuBroker::start().expect("source broker");
    let (stalled, proxy) =
        TansuBroker::start_behind_proxy(strait_testkit::BrokerOptions::default())
            .expect("target a");
    let healthy = TansuBroker::start().expect("target b");
    let src = source.bootstrap();
    rdkafka::create_topic(&src, "ta", 1, &[]).expect("topic");
    rdkafka::create_topic(&src, "tb", 1, &[]).expect("topic");
    let flow = |name: &str, target: &str, topic: &str| {
        format!(
            r#"[[flows]]
name = "{name}"
source = "src"
target = "{target}"
[flows.topics]
include = ["{topic}"]
{}"#,
            strait_testkit::config::SYNC_OFF
        )
    };
    let cluster = |name: &str, bootstrap: &str| {
        format!(
            "[clusters.{name}]\nbootstrap_servers = \"{bootstrap}\"\nconnect_timeout = \
             \"1s\"\nrequest_timeout = \"1s\"\n"
        )
    };
    let cfg = load(&format!(
        "{}{}{}{}{}[engine]\nfetch_max_wait = \"50ms\"\ndelivery_timeout = \"3s\"\n\
         [metrics]\nenabled = false\n",
        cluster("src", &src),
        cluster("dsta", &proxy.bootstrap()),
        cluster("dstb", &healthy.bootstrap()),
        flow("a", "dsta", "ta"),
        flow("b", "dstb", "tb"),
    ));
    let (a1, b1) = (records("a", 50, 1), records("b", 50, 1));
    produce(&src, "ta", &a1);
    produce(&src, "tb", &b1);
    let mut engine = Running::start(cfg);
    wait_for(&stalled.bootstrap(), "src.ta", &values(&a1));
    wait_for(&healthy.bootstrap(), "src.tb", &values(&b1));

    proxy.stall();
    engine.metrics().set_stalled_after(Duration::from_secs(1));
    let (a2, b2) = (records("a2", 100, 1), records("b2", 100, 1));
    produce(&src, "ta", &a2);
    produce(&src, "tb", &b2);
    let mut want_b = values(&b1);
    want_b.extend(values(&b2));
    // Flow b replicates while flow a's target is stalled.
    let b_got = wait_for(&healthy.bootstrap(), "src.tb", &want_b);
    let restarts = |flow: &str| {
        engine.sum(
            "strait_partition_restarts_total",
            &[&format!("flow=\"{flow}\"")],
        )
    };
    wait_until("flow a's partition is restarted", || restarts("a") >= 1.0);
    wait_until("/health reports flow a's partition restarting", || {
        engine
            .metrics()
            .health()
            .is_err_and(|h| h.contains("flow a: partition ta-0") && h.contains("restart(s) in"))
    });
    let health = engine.metrics().health().unwrap_err();
    assert!(!health.contains("flow b"), "flow b is healthy: {health}");
    assert!(
        !health.contains("flow a: failed"),
        "flow a is not stopped: {health}"
    );
    assert!(engine.wait(Duration::ZERO).is_none(), "the engine runs on");
    let a_restarts = restarts("a");
    proxy.unstall();

    let mut want_a = values(&a1);
    want_a.extend(values(&a2));
    let a_got = wait_for(&stalled.bootstrap(), "src.ta", &want_a);
    let b3 = records("b3", 10, 1);
    produce(&src, "tb", &b3);
    want_b.extend(values(&b3));
    let b_got_after = wait_for(&healthy.bootstrap(), "src.tb", &want_b);
    assert_eq!(restarts("b"), 0.0, "flow b never restarted");
    let stopped = engine.stop(Duration::from_secs(30));
    assert!(matches!(stopped, Some(Ok(()))), "clean stop: {stopped:?}");
    eprintln!(
        "isolation under a stall: flow a {} records ({a_restarts} restart(s) during the \
         stall), flow b {} records during the stall, {} in all",
        a_got.len(),
        b_got.len(),
        b_got_after.len()
    );
    assert_eq!(a_got.len(), want_a.len(), "flow a: every record once");
    assert_eq!(b_got_after.len(), want_b.len(), "flow b: every record once");
}
