//! Scale-out against Apache Kafka: `strait run` processes with `[flows.scale_out]` share
//! one flow of 24 partitions under continuous load, through a `strait` group on the target
//! cluster. Who owns what is read from Kafka's group coordinator (DescribeGroups, the
//! assignments decoded with Strait's codec), not from the workers; their generation comes
//! from their own `/metrics`.
//!
//! - Three members own each partition once; one is killed with SIGKILL and, after its
//!   session timeout, the two survivors own all 24 and the moved partitions replicate
//!   again; a fourth process joins and partitions move to it. Stickiness yields to balance
//!   by measured load (the assignor's rules 2 and 3), so survivors may also swap a few.
//! - A rolling restart of three static members (SIGTERM and start again, within the
//!   session timeout, one after the other): every member owns the same partitions
//!   throughout; this is what static membership (KIP-345) is for, and Tansu cannot show
//!   it (docs/compatibility.md). Kafka may still run one rebalance for a restart (the
//!   restarted member's join metadata differs from its last); the generations are
//!   printed.
//!
//! After each, librdkafka proves per partition: nothing lost, source order kept (two
//! writers interleaving would break it), duplicates within one in-flight window per kill.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strait_client::IsolationLevel;
use strait_kafka_scenarios::group::{self, Group};
use strait_kafka_scenarios::kafka::{self, ends};
use strait_kafka_scenarios::metrics::{sample, scrape};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, Strait, process, wait};
use strait_testkit::broker::free_port;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::load::NumberedProducer;
use strait_testkit::rdkafka;

const TOPIC: &str = "wide";
const PARTITIONS: i32 = 24;
const FLOW: &str = "scale-test";
const GROUP: &str = "strait.scale-test.workers";
const BATCH_RECORDS: u32 = 10;
const PER_CALL: u64 = 5;
const MAX_IN_FLIGHT: usize = 5;

/// One `strait run` member.
struct Worker {
    name: String,
    port: u16,
    config: PathBuf,
    log: PathBuf,
    strait: Strait,
}

impl Worker {
    /// Worker `name` (also its `instance_id`) with its own metrics port.
    fn start(dir: &Path, (src, dst): (&str, &str), name: &str, session: Duration) -> Worker {
        let port = free_port().expect("a free port");
        let text = format!(
            r#"{}name = "{FLOW}"
[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
[flows.scale_out]
group = "{GROUP}"
instance_id = "{name}"
session_timeout = "{}s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
listen = "127.0.0.1:{port}"
"#,
            two_cluster_flow(src, dst, "5s"),
            session.as_secs()
        );
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(&config, text).expect("write config");
        let log = dir.join(format!("{name}.log"));
        let strait = process::start(&config, &log);
        Worker {
            name: name.to_owned(),
            port,
            config,
            log,
            strait,
        }
    }

    /// The generation the member runs, from its `/metrics` (`None` while it does not say).
    fn generation(&self) -> Option<i64> {
        sample(&scrape(self.port), "strait_scale_generation", FLOW).map(|g| g as i64)
    }
}

/// Every worker's log tail, the stopped ones' too.
fn logs(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|l| format!("--- {}\n{}", l.display(), log_tail(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn describe(dst: &str) -> Option<Group> {
    group::describe(dst, GROUP)
}

/// Waits until the group is settled with `members` members (each partition owned once)
/// and every one of `running` is alive; returns who owns what.
fn settle(
    dst: &str,
    members: usize,
    running: &mut [&mut Worker],
    within: Duration,
    paths: &[PathBuf],
) -> BTreeMap<String, Vec<i32>> {
    wait::until(
        &format!("{members} members owning each partition once"),
        within,
        || {
            running.iter_mut().for_each(|w| w.strait.assert_running());
            describe(dst).is_some_and(|g| g.settled(TOPIC, PARTITIONS, members))
        },
        || format!("{:#?}\n{}", describe(dst), logs(paths)),
    );
    describe(dst).expect("the group").by_member(TOPIC)
}

/// Waits until every target partition has grown past `since` (all partitions when
/// `partitions` is `None`).
fn replicating(dst: &str, since: &BTreeMap<i32, i64>, partitions: &[i32], paths: &[PathBuf]) {
    let target_topic = format!("src.{TOPIC}");
    wait::until(
        "the partitions to replicate",
        Duration::from_secs(60),
        || {
            ends(
                dst,
                &target_topic,
                PARTITIONS,
                IsolationLevel::ReadUncommitted,
            )
            .is_some_and(|now| partitions.iter().all(|p| now[p] > since[p]))
        },
        || logs(paths),
    );
}

fn target_ends(dst: &str) -> BTreeMap<i32, i64> {
    ends(
        dst,
        &format!("src.{TOPIC}"),
        PARTITIONS,
        IsolationLevel::ReadUncommitted,
    )
    .unwrap_or_else(|| (0..PARTITIONS).map(|p| (p, 0)).collect())
}

/// Stops the load, waits for the target and checks every partition.
fn verify(src: &str, dst: &str, producer: NumberedProducer, kills: usize, paths: &[PathBuf]) {
    let produced = producer.finish();
    let target_topic = format!("src.{TOPIC}");
    kafka::wait_caught_up(
        (src, TOPIC),
        (dst, &target_topic),
        PARTITIONS,
        Duration::from_secs(90),
        || logs(paths),
    );
    let report = kafka::compare((src, TOPIC), (dst, &target_topic), PARTITIONS, produced);
    println!("scale-out against Apache Kafka: {produced} produced; {report}");
    // A killed member's partitions may see its last in-flight window again.
    let problems = report.problems(kills * MAX_IN_FLIGHT * BATCH_RECORDS as usize);
    assert!(problems.is_empty(), "{problems:#?}\n{}", logs(paths));
}

fn all_partitions() -> Vec<i32> {
    (0..PARTITIONS).collect()
}

#[test]
fn a_killed_members_partitions_move_and_a_joining_one_gets_some() {
    let session = Duration::from_secs(10);
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let start = |name: &str| Worker::start(dir.path(), (&src, &dst), name, session);
    let (mut w0, mut w1, mut w2) = (start("worker-0"), start("worker-1"), start("worker-2"));
    let mut paths = vec![w0.log.clone(), w1.log.clone(), w2.log.clone()];

    let three = settle(
        &dst,
        3,
        &mut [&mut w0, &mut w1, &mut w2],
        Duration::from_secs(120),
        &paths,
    );
    assert_eq!(describe(&dst).expect("group").protocol_type, "strait");
    assert_eq!(three.len(), 3, "every worker owns partitions: {three:?}");
    println!("3 workers: {three:?}");
    replicating(
        &dst,
        &BTreeMap::from_iter(all_partitions().into_iter().map(|p| (p, 0))),
        &all_partitions(),
        &paths,
    );

    // kill -9: the coordinator expels the member after its session timeout and the
    // survivors take its partitions over.
    let moved = three[&w1.name].clone();
    w1.strait.kill9();
    let killed = Instant::now();
    let two = settle(
        &dst,
        2,
        &mut [&mut w0, &mut w2],
        session + Duration::from_secs(60),
        &paths,
    );
    println!(
        "worker-1 killed: its {moved:?} moved within {:?}; now {two:?}",
        killed.elapsed()
    );
    assert!(!two.contains_key(&w1.name), "{two:?}");
    // Rule 3 of the assignor (sticky) yields to rule 2 (balanced by measured load: lag
    // and throughput): the orphans carry the lag of a session timeout, so survivors may
    // swap a few partitions too (crates/mirror/src/scale/assign.rs).
    let kept: usize = [&w0, &w2]
        .iter()
        .map(|w| {
            three[&w.name]
                .iter()
                .filter(|p| two[&w.name].contains(p))
                .count()
        })
        .sum();
    println!("{kept} of 16 survivor partitions kept their owner");
    replicating(&dst, &target_ends(&dst), &moved, &paths);

    // A fourth process joins: it gets partitions, the others only give some up.
    let mut w3 = start("worker-3");
    paths.push(w3.log.clone());
    let with_new = settle(
        &dst,
        3,
        &mut [&mut w0, &mut w2, &mut w3],
        Duration::from_secs(120),
        &paths,
    );
    println!("worker-3 joined: {with_new:?}");
    let gained = with_new.get(&w3.name).cloned().unwrap_or_default();
    assert!(
        !gained.is_empty(),
        "the new member owns partitions: {with_new:?}"
    );
    replicating(&dst, &target_ends(&dst), &gained, &paths);
    verify(&src, &dst, producer, 1, &paths);
}

#[test]
fn a_rolling_restart_of_static_members_reshuffles_nothing() {
    // Long enough that a stop and a start fit well inside it.
    let session = Duration::from_secs(30);
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut workers: Vec<Worker> = (0..3)
        .map(|i| Worker::start(dir.path(), (&src, &dst), &format!("worker-{i}"), session))
        .collect();
    let paths: Vec<PathBuf> = workers.iter().map(|w| w.log.clone()).collect();
    let before = settle(
        &dst,
        3,
        &mut workers.iter_mut().collect::<Vec<_>>(),
        Duration::from_secs(120),
        &paths,
    );
    assert_eq!(before.len(), 3, "every worker owns partitions: {before:?}");
    let mut generations = BTreeMap::new();
    wait::until(
        "every member to report its generation",
        Duration::from_secs(30),
        || {
            generations = workers
                .iter()
                .filter_map(|w| Some((w.name.clone(), w.generation()?)))
                .collect();
            generations.len() == workers.len() && generations.values().all(|g| *g >= 0)
        },
        || logs(&paths),
    );
    println!("before: {before:?}, generations {generations:?}");

    for i in 0..workers.len() {
        let ends_before = target_ends(&dst);
        let stopped = Instant::now();
        let status = process::stop(&mut workers[i].strait, Duration::from_secs(20));
        assert_eq!(
            status.code(),
            Some(0),
            "graceful stop of {}:\n{}",
            workers[i].name,
            log_tail(&workers[i].log)
        );
        workers[i].strait = process::start(&workers[i].config, &workers[i].log);
        let back = settle(
            &dst,
            3,
            &mut workers.iter_mut().collect::<Vec<_>>(),
            Duration::from_secs(60),
            &paths,
        );
        assert_eq!(
            back, before,
            "no partition moved for {}'s restart",
            workers[i].name
        );
        // The restarted member's partitions replicate again; nobody else rebalanced.
        let own = before[&workers[i].name].clone();
        replicating(&dst, &ends_before, &own, &paths);
        let name = workers[i].name.clone();
        wait::until(
            &format!("{name} to report its generation"),
            Duration::from_secs(30),
            || workers[i].generation().is_some_and(|g| g >= 0),
            || logs(&paths),
        );
        // Kafka answers a static member's rejoin without a rebalance only when its join
        // metadata is the one it last joined with; a restarted worker joins owning
        // nothing, so when it had joined again owning partitions (a later generation of
        // the two-phase hand-over), Kafka rebalances once. What must hold either way: no
        // partition moved (above) and nobody else lost anything.
        let after: BTreeMap<String, i64> = workers
            .iter()
            .filter_map(|w| Some((w.name.clone(), w.generation()?)))
            .collect();
        println!(
            "{name} replicating again {:?} after its stop: {back:?}; generations {generations:?} -> {after:?}",
            stopped.elapsed()
        );
        generations = after;
    }
    verify(&src, &dst, producer, 0, &paths);
}
