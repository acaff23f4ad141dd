//! Content-checked recovery, end to end on two Tansu brokers with librdkafka reading both
//! sides (docs/operations.md, "Stopping and restarting"): records found on the target past the
//! last state write are recorded only when they are the source's records, one by one; a
//! target that holds other records past the state is an incident, never absorbed — the
//! count-based rule this replaces skipped as many source records as it found, silently.
//! Also the incidents found at start, each governed by its own key: a target that lost what
//! was written (`on_target_mismatch`) and a source topic re-created (`on_topic_recreation`).
//! And a duplicate of our records appended to the target while the engine runs: recognised,
//! counted and mapped to nothing, not a target mismatch.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_mirror::Engine;
use strait_mirror::config::{Config, load_str};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};
use strait_testkit::{TansuCluster, TestRecord};

use common::Running;

const TOPIC: &str = "rec";
const TARGET: &str = "src.rec";

fn config(source: &str, target: &str, policy: &str) -> Config {
    config_with(
        source,
        target,
        &format!("on_target_mismatch = \"{policy}\""),
    )
}

/// The flow with `policies` (lines of `[flows.topics]`).
fn config_with(source: &str, target: &str, policies: &str) -> Config {
    let text = format!(
        "{}{SYNC_OFF}\n[flows.topics]\ninclude = [\"{TOPIC}\"]\n{policies}\n\
         [engine]\nfetch_max_wait = \"100ms\"\n[metrics]\nenabled = false\n",
        two_cluster_flow(source, target, "3s")
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

/// `n` records `prefix-i` on partition 0 with fixed timestamps, so the same records can
/// be written to both clusters.
fn records(prefix: &str, from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| {
            let mut r = TestRecord::new(
                Bytes::from(format!("k{i}")),
                Bytes::from(format!("{prefix}-{i}")),
            )
            .with_timestamp(1_700_000_000_000 + i as i64);
            r.partition = Some(0);
            r
        })
        .collect()
}

/// Produces `recs` in librdkafka batches of at most `batch` records.
fn produce(bootstrap: &str, topic: &str, recs: &[TestRecord], batch: u32) {
    let opts = ProduceOptions {
        linger_ms: 0,
        batch_num_messages: Some(batch),
        ..ProduceOptions::default()
    };
    let d = rdkafka::produce(bootstrap, topic, recs, &opts).expect("produce");
    assert!(d.iter().all(|d| d.error.is_none()), "{d:?}");
}

fn values(bootstrap: &str, topic: &str, n: usize) -> Vec<String> {
    let mut got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions {
            idle: Duration::from_secs(2),
            ..ConsumeOptions::count(n)
        },
    )
    .expect("consume");
    got.sort_by_key(|r| (r.partition, r.offset));
    got.into_iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

/// Replicates 40 records, then writes `tail` to the target partition behind Strait's back
/// (as if a crashed run had written it after its last state write) while the source gets
/// 30 more; returns the brokers.
fn crashed_with_tail(tail: &[TestRecord]) -> TansuCluster {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, &records("v", 0, 40), 7);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect("first run");
    // Source batches of 7 from offset 40: 40..47, 47..54, 54..61, …
    produce(&src, TOPIC, &records("v", 40, 30), 7);
    // The tail in batches of 3: other boundaries than the source's.
    produce(&dst, TARGET, tail, 3);
    cluster
}

#[test]
fn the_sources_records_found_past_the_state_are_recorded_not_written_again() {
    // The tail is exactly the next three source batches' records (same keys, values,
    // timestamps), stored in batches other than the source's.
    let cluster = crashed_with_tail(&records("v", 40, 21));
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect("recovering run");
    let want: Vec<String> = (0..70).map(|i| format!("v-{i}")).collect();
    assert_eq!(
        values(&dst, TARGET, 70),
        want,
        "every record once, in order: the 20 found were matched, not produced again"
    );
}

#[test]
fn other_records_past_the_state_are_an_incident_never_absorbed() {
    // 21 records that are not the source's: the count-based rule took them for the next
    // 21 source records and never wrote those (silent loss).
    let cluster = crashed_with_tail(&records("foreign", 40, 21));
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let err = rt
        .block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect_err("policy fail stops the flow");
    let text = err.to_string();
    assert!(err.incident_kind().is_some(), "{err:?}");
    assert!(
        text.contains("does not hold the source's data at offset 40"),
        "{text}"
    );

    // Policy skip: the map restarts at the target's end and the source's records are all
    // written after the foreign ones: nothing lost.
    rt.block_on(Engine::new(config(&src, &dst, "skip")).run_once())
        .expect("skip run");
    let got = values(&dst, TARGET, 91);
    let mut want: Vec<String> = (0..40).map(|i| format!("v-{i}")).collect();
    want.extend((40..61).map(|i| format!("foreign-{i}")));
    want.extend((40..70).map(|i| format!("v-{i}")));
    assert_eq!(got, want);
}

#[test]
fn a_duplicate_at_the_end_of_the_tail_is_skipped_and_the_next_batch_lands_after_it() {
    // The crashed run wrote the next three source batches, then the last of them again (a
    // request re-sent under a new epoch landing after the original). Recovery matches the
    // three and skips the copy; the next batch then lands after the copy, where the map
    // must expect it (it expected it on the copy, and stopped with an ack mismatch).
    let mut tail = records("v", 40, 21);
    tail.extend(records("v", 54, 7));
    let cluster = crashed_with_tail(&tail);
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect("recovering run: no incident");
    let mut want: Vec<String> = (0..61).map(|i| format!("v-{i}")).collect();
    want.extend((54..70).map(|i| format!("v-{i}")));
    assert_eq!(
        values(&dst, TARGET, want.len()),
        want,
        "every source record, the one duplicate block, nothing lost"
    );
}

#[test]
fn a_target_that_lost_what_was_written_is_a_target_mismatch_and_skip_continues_at_its_end() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, &records("v", 0, 40), 7);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect("first run");
    // The target topic is deleted and created again, empty: the 40 records written are gone.
    rt.block_on(async {
        let client = strait_client::Client::connect(
            strait_client::ClientConfig::new([dst.clone()])
                .with_request_timeout(Duration::from_secs(3))
                .with_connect_timeout(Duration::from_secs(2)),
        )
        .await
        .expect("connect");
        client
            .delete_topics(&[TARGET], Duration::from_secs(3))
            .await
            .expect("delete");
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rdkafka::create_topic(&dst, TARGET, 1, &[]).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "target topic not re-created"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    produce(&src, TOPIC, &records("v", 40, 30), 7);

    let err = rt
        .block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect_err("policy fail stops the flow");
    let text = err.to_string();
    assert_eq!(
        err.incident_kind(),
        Some(strait_mirror::error::IncidentKind::TargetMismatch),
        "{text}"
    );
    assert!(
        text.contains("ends at 0 but 40 records were written"),
        "{text}"
    );
    assert!(text.contains("on_target_mismatch = \"skip\""), "{text}");
    assert!(!text.contains("on_topic_recreation"), "{text}");

    // Skip: the map's target side restarts at the target's end and replication continues
    // from the map's source position (the lost records are not copied again).
    rt.block_on(Engine::new(config(&src, &dst, "skip")).run_once())
        .expect("skip run");
    let want: Vec<String> = (40..70).map(|i| format!("v-{i}")).collect();
    assert_eq!(values(&dst, TARGET, 30), want);
}

#[test]
fn a_source_topic_recreated_since_the_last_run_is_governed_by_on_topic_recreation_only() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    produce(&src, TOPIC, &records("v", 0, 40), 7);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(config(&src, &dst, "fail")).run_once())
        .expect("first run");
    rt.block_on(async {
        let client = strait_client::Client::connect(
            strait_client::ClientConfig::new([src.clone()])
                .with_request_timeout(Duration::from_secs(3))
                .with_connect_timeout(Duration::from_secs(2)),
        )
        .await
        .expect("connect");
        client
            .delete_topics(&[TOPIC], Duration::from_secs(3))
            .await
            .expect("delete");
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rdkafka::create_topic(&src, TOPIC, 1, &[]).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "source topic not re-created"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    produce(&src, TOPIC, &records("new", 0, 10), 7);

    // on_target_mismatch = "skip" does not cover the source: on_topic_recreation (default
    // fail) stops the flow.
    let err = rt
        .block_on(Engine::new(config(&src, &dst, "skip")).run_once())
        .expect_err("on_topic_recreation = fail stops the flow");
    let text = err.to_string();
    assert_eq!(
        err.incident_kind(),
        Some(strait_mirror::error::IncidentKind::TopicRecreation),
        "{text}"
    );
    assert!(text.contains("since the last run"), "{text}");
    assert!(text.contains("on_topic_recreation = \"skip\""), "{text}");

    // on_topic_recreation = "skip": the map restarts and the new topic is copied from its
    // start, after what was copied of the old one.
    rt.block_on(Engine::new(config_with(&src, &dst, "on_topic_recreation = \"skip\"")).run_once())
        .expect("skip run");
    let mut want: Vec<String> = (0..40).map(|i| format!("v-{i}")).collect();
    want.extend((0..10).map(|i| format!("new-{i}")));
    assert_eq!(values(&dst, TARGET, 50), want);
}

/// The target's values once it holds at least `n` records (within 30 s; the topic may
/// not exist yet when the engine has just started).
fn wait_values(bootstrap: &str, topic: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let opts = ConsumeOptions {
            idle: Duration::from_secs(2),
            ..ConsumeOptions::count(n)
        };
        let mut got = rdkafka::consume(bootstrap, topic, &opts).unwrap_or_default();
        if got.len() >= n || Instant::now() > deadline {
            got.sort_by_key(|r| (r.partition, r.offset));
            return got
                .into_iter()
                .map(|r| {
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_duplicate_of_our_records_appended_while_running_is_counted_not_a_mismatch() {
    common::init_logging();
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    // Source batches of 7: the last of the first 40 records is 35..40.
    produce(&src, TOPIC, &records("v", 0, 40), 7);
    let mut engine = Running::start(config(&src, &dst, "fail"));
    let first: Vec<String> = (0..40).map(|i| format!("v-{i}")).collect();
    assert_eq!(wait_values(&dst, TARGET, 40), first);

    // A request of ours appended again (as a producer that gave up on it and re-sent it
    // would leave it): a copy of records 35..40 lands at target offsets 40..45, between
    // the engine's batches. The next batch of ours is then acknowledged at 45, not 40.
    produce(&dst, TARGET, &records("v", 35, 5), 7);
    produce(&src, TOPIC, &records("v", 40, 30), 7);
    let mut want = first.clone();
    want.extend((35..70).map(|i| format!("v-{i}")));
    assert_eq!(
        wait_values(&dst, TARGET, want.len()),
        want,
        "every source record after the copy, in order, nothing lost"
    );
    assert!(
        engine.wait(Duration::ZERO).is_none(),
        "on_target_mismatch = \"fail\" did not stop the engine"
    );
    let duplicates = engine.sum(
        "strait_dropped_batches_total",
        &["kind=\"duplicate_on_target\""],
    );
    let incidents = engine.sum("strait_incidents_total", &[]);
    let stopped = engine.stop(Duration::from_secs(30));
    assert!(matches!(stopped, Some(Ok(()))), "clean stop: {stopped:?}");
    eprintln!(
        "live duplicate figures: {} duplicate record(s) counted, {} incident(s)",
        duplicates as u64, incidents as u64
    );
    assert_eq!(duplicates, 5.0, "the copy's five records are counted");
    assert_eq!(incidents, 0.0, "no incident");

    // The map is exact past the copy: a group at source offset 50 fails over to the
    // target offset holding the same record (50 + the 5 duplicate offsets).
    let g = "g-after-dup";
    rdkafka::commit_group_offsets(&src, g, TOPIC, &[(0, 50)]).expect("commit");
    let flow = format!(
        "[flows.sync]\ngroup_offsets = true\nheartbeats = false\ncheckpoints = false\n\
         [flows.topics]\ninclude = [\"{TOPIC}\"]\n"
    );
    let text = format!(
        "{}{flow}[engine]\nfetch_max_wait = \"100ms\"\n[metrics]\nenabled = false\n",
        two_cluster_flow(&src, &dst, "3s")
    );
    let cfg = load_str(&text, "test config", &|_| None).expect("valid config");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(Engine::new(cfg).run_once())
        .expect("group translation run");
    let translated = rdkafka::list_group_offsets(&dst, g)
        .expect("list group offsets")
        .into_iter()
        .find(|o| o.topic == TARGET && o.partition == 0)
        .map(|o| o.offset);
    assert_eq!(translated, Some(55), "source offset 50 is target offset 55");
}
