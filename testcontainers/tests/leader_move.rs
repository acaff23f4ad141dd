//! Partition leaders moving under `strait run` on Apache Kafka clusters of three nodes, with
//! a producer writing numbered records to the source the whole time
//! (`strait_testkit::load::NumberedProducer`).
//!
//! 1. Source of three nodes (topic replication factor 3, `min.insync.replicas` 2): the node
//!    leading partition 0 (read from metadata) is killed with SIGKILL, replication goes
//!    on, the node is started again and rejoins every ISR, then another node is stopped
//!    cleanly (controlled shutdown) and replication goes on again.
//! 2. Target of three nodes: the node leading a target partition is killed with SIGKILL
//!    while Strait writes to it, replication goes on, the node is started again.
//!
//! Each ends with librdkafka reading both sides (every batch's CRC checked): per partition
//! nothing lost, source order kept, nothing foreign, duplicates within the documented
//! bound of `max_in_flight_per_partition` batches (docs/operations.md, "Stopping
//! and restarting"), as testcontainers/tests/crash.rs computes it.

use std::time::Duration;

use strait_client::{Client, ClientConfig, NewTopic};
use strait_kafka_scenarios::kafka::{self, total};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, process, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::kafka::KafkaOptions;
use strait_testkit::load::NumberedProducer;

const PARTITIONS: i32 = 3;
/// librdkafka `batch.num.messages`: no source batch (so no forwarded batch) holds more.
const BATCH_RECORDS: u32 = 10;
const PER_CALL: u64 = 25;
/// The config's `engine.max_in_flight_per_partition` (Strait's default).
const MAX_IN_FLIGHT: usize = 5;

/// Creates `topic` with [`PARTITIONS`] partitions, replication factor 3 and
/// `min.insync.replicas` 2 through Strait's client (librdkafka's helper creates one
/// replica).
fn create_replicated(bootstrap: &str, topic: &str) {
    strait_kafka_scenarios::runtime().block_on(async {
        let client = Client::connect(ClientConfig::new(bootstrap.split(',')))
            .await
            .expect("connect");
        let mut t = NewTopic::new(topic, PARTITIONS);
        t.replication_factor = 3;
        t.configs = vec![("min.insync.replicas".into(), "2".into())];
        let results = client
            .create_topics(&[t], Duration::from_secs(30))
            .await
            .expect("create topic");
        assert!(
            results.iter().all(|(_, r)| r.is_ok()),
            "create {topic}: {results:?}"
        );
    })
}

/// Per partition of `topic`: (leader, ISR), from a fresh Metadata request; `None` when no
/// broker answers.
fn leaders(bootstrap: &str, topic: &str) -> Option<Vec<(i32, Vec<i32>)>> {
    strait_kafka_scenarios::runtime().block_on(async {
        let client = Client::connect(
            ClientConfig::new(bootstrap.split(','))
                .with_connect_timeout(Duration::from_secs(2))
                .with_request_timeout(Duration::from_secs(5)),
        )
        .await
        .ok()?;
        let meta = client.metadata(Some(&[topic])).await.ok()?;
        let t = meta.topics.get(topic)?;
        Some(
            (0..PARTITIONS)
                .map(|p| {
                    t.partitions
                        .get(&p)
                        .map_or((-1, vec![]), |m| (m.leader, m.isr.clone()))
                })
                .collect(),
        )
    })
}

/// The listener of one node of `kafka` other than node index `except`: the scenario
/// library's partition ends take a single `host:port`.
fn one_node(kafka: &Kafka, except: Option<usize>) -> String {
    let cluster = kafka.cluster().expect("the jar backend");
    let i = (0..cluster.nodes().len())
        .find(|i| Some(*i) != except)
        .expect("another node");
    cluster.node(i).bootstrap()
}

/// The index in the cluster of the node with Kafka node id `id`.
fn node_index(kafka: &Kafka, id: i32) -> usize {
    let cluster = kafka.cluster().expect("the jar backend");
    cluster
        .nodes()
        .iter()
        .position(|n| n.id() as i32 == id)
        .unwrap_or_else(|| panic!("no node {id}"))
}

/// Waits until every partition of `topic` has a leader and all three replicas in sync.
fn wait_full_isr(bootstrap: &str, topic: &str, log: &std::path::Path) {
    wait::until(
        "every partition's ISR back to three",
        Duration::from_secs(90),
        || {
            leaders(bootstrap, topic)
                .is_some_and(|l| l.iter().all(|(leader, isr)| *leader >= 0 && isr.len() == 3))
        },
        || format!("{:?}\n{}", leaders(bootstrap, topic), log_tail(log)),
    );
}

fn config_text(src: &str, dst: &str, topic: &str) -> String {
    format!(
        r#"{}[flows.topics]
include = ["{topic}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "5s")
    )
}

/// Waits until the target holds `more` records beyond `from`, with Strait running.
fn progress(
    what: &str,
    strait: &mut strait_kafka_scenarios::Strait,
    (dst, topic): (&str, &str),
    from: i64,
    more: i64,
    log: &std::path::Path,
) {
    wait::until(
        what,
        Duration::from_secs(90),
        || {
            strait.assert_running();
            total(dst, topic, PARTITIONS) >= from + more
        },
        || log_tail(log),
    );
}

fn finish(
    producer: NumberedProducer,
    (src, topic): (&str, &'static str),
    (dst, target_topic): (&str, &str),
    log: &std::path::Path,
    what: &str,
) {
    let produced = producer.finish();
    kafka::wait_caught_up(
        (src, topic),
        (dst, target_topic),
        PARTITIONS,
        Duration::from_secs(90),
        || log_tail(log),
    );
    let report = kafka::compare((src, topic), (dst, target_topic), PARTITIONS, produced);
    println!("{what}: {produced} produced; {report}");
    let problems = report.problems(MAX_IN_FLIGHT * BATCH_RECORDS as usize);
    assert!(problems.is_empty(), "{problems:#?}\n{}", log_tail(log));
}

#[test]
fn source_leader_killed_restarted_and_another_node_stopped_loses_nothing() {
    const TOPIC: &str = "moves";
    let (mut source, target) = std::thread::scope(|s| {
        let a = s.spawn(|| Kafka::start_with(KafkaOptions::default().nodes(3)));
        let b = s.spawn(Kafka::start);
        (
            a.join().expect("start the source"),
            b.join().expect("start the target"),
        )
    });
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    create_replicated(&src, TOPIC);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    std::fs::write(&config, config_text(&src, &dst, TOPIC)).expect("write config");
    let log = dir.path().join("strait.log");
    let target_topic = format!("src.{TOPIC}");

    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut strait = process::start(&config, &log);
    progress(
        "replication before the kill",
        &mut strait,
        (&dst, &target_topic),
        0,
        300,
        &log,
    );

    let before = leaders(&src, TOPIC).expect("metadata");
    let killed_id = before[0].0;
    let killed = node_index(&source, killed_id);
    source.cluster_mut().node_mut(killed).kill9();
    let at_kill = total(&dst, &target_topic, PARTITIONS);
    progress(
        "replication after kill -9 of partition 0's leader",
        &mut strait,
        (&dst, &target_topic),
        at_kill,
        300,
        &log,
    );
    let after = leaders(&src, TOPIC).expect("metadata");
    assert_ne!(
        after[0].0, killed_id,
        "partition 0 has a new leader: {after:?}"
    );
    println!("kill -9 of node {killed_id}: leaders {before:?} -> {after:?}");

    source
        .cluster_mut()
        .node_mut(killed)
        .restart()
        .expect("restart the killed node");
    wait_full_isr(&src, TOPIC, &log);

    // A clean stop of another node: the leader of a partition the killed node does not lead.
    let now = leaders(&src, TOPIC).expect("metadata");
    let stopped_id = now
        .iter()
        .map(|(l, _)| *l)
        .find(|l| *l != killed_id)
        .expect("a leader other than the restarted node");
    let stopped = node_index(&source, stopped_id);
    source
        .cluster_mut()
        .node_mut(stopped)
        .stop(Duration::from_secs(30));
    let at_stop = total(&dst, &target_topic, PARTITIONS);
    progress(
        "replication after the clean stop of another node",
        &mut strait,
        (&dst, &target_topic),
        at_stop,
        300,
        &log,
    );
    println!(
        "clean stop of node {stopped_id}: leaders {now:?} -> {:?}",
        leaders(&src, TOPIC)
    );

    // The killed node is up again and was never stopped after.
    let src_one = source.cluster().expect("jars").node(killed).bootstrap();
    finish(
        producer,
        (&src_one, TOPIC),
        (&dst, &target_topic),
        &log,
        "source leader moves",
    );
    let status = process::stop(&mut strait, Duration::from_secs(30));
    assert!(status.success(), "strait: {status}\n{}", log_tail(&log));
}

#[test]
fn target_leader_killed_while_writing_loses_nothing() {
    const TOPIC: &str = "target-moves";
    let (source, mut target) = std::thread::scope(|s| {
        let a = s.spawn(Kafka::start);
        let b = s.spawn(|| Kafka::start_with(KafkaOptions::default().nodes(3)));
        (
            a.join().expect("start the source"),
            b.join().expect("start the target"),
        )
    });
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    strait_testkit::rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("strait.toml");
    std::fs::write(&config, config_text(&src, &dst, TOPIC)).expect("write config");
    let log = dir.path().join("strait.log");
    let target_topic = format!("src.{TOPIC}");

    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut strait = process::start(&config, &log);
    let dst_one = one_node(&target, None);
    progress(
        "replication before the kill",
        &mut strait,
        (&dst_one, &target_topic),
        0,
        300,
        &log,
    );
    let before = leaders(&dst, &target_topic).expect("metadata");
    assert!(
        before.iter().all(|(_, isr)| isr.len() == 3),
        "Strait's target topic has three replicas: {before:?}"
    );
    let killed_id = before[0].0;
    let killed = node_index(&target, killed_id);
    let dst_one = one_node(&target, Some(killed));
    target.cluster_mut().node_mut(killed).kill9();
    let at_kill = total(&dst_one, &target_topic, PARTITIONS);
    progress(
        "replication after kill -9 of the target's partition 0 leader",
        &mut strait,
        (&dst_one, &target_topic),
        at_kill,
        300,
        &log,
    );
    target
        .cluster_mut()
        .node_mut(killed)
        .restart()
        .expect("restart the killed node");
    println!(
        "kill -9 of target node {killed_id}: leaders {before:?} -> {:?}",
        leaders(&dst, &target_topic)
    );
    finish(
        producer,
        (&src, TOPIC),
        (&dst_one, &target_topic),
        &log,
        "target leader kill",
    );
    let status = process::stop(&mut strait, Duration::from_secs(30));
    assert!(status.success(), "strait: {status}\n{}", log_tail(&log));
}
