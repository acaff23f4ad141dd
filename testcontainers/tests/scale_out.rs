//! Scale-out against Apache Kafka: three `strait run` processes with `[flows.scale_out]`
//! share one flow of 24 partitions under continuous load, through a `strait` group on the
//! target cluster. Kafka's group coordinator (DescribeGroups, assignments decoded with
//! Strait's codec) shows every partition owned by exactly one member; one member is killed
//! with SIGKILL; within its session timeout plus a rebalance the two survivors own all 24
//! partitions, each once, and the moved partitions replicate again. Once the target has
//! caught up, librdkafka proves per partition: nothing lost, source order kept (two
//! writers interleaving would break it), duplicates within one in-flight window.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use strait_client::IsolationLevel;
use strait_kafka_scenarios::group::{self, Group};
use strait_kafka_scenarios::kafka::{self, ends};
use strait_kafka_scenarios::process::log_tail;
use strait_kafka_scenarios::{Kafka, Strait, wait};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::load::NumberedProducer;
use strait_testkit::rdkafka;

const TOPIC: &str = "wide";
const PARTITIONS: i32 = 24;
const GROUP: &str = "strait.scale-test.workers";
const WORKERS: usize = 3;
const BATCH_RECORDS: u32 = 10;
const PER_CALL: u64 = 5;
const MAX_IN_FLIGHT: usize = 5;
/// `[flows.scale_out] session_timeout`.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Worker `i`'s config: the same flow, its own instance id.
fn config(dir: &std::path::Path, src: &str, dst: &str, i: usize) -> PathBuf {
    let text = format!(
        r#"{}name = "scale-test"
[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
[flows.scale_out]
group = "{GROUP}"
instance_id = "worker-{i}"
session_timeout = "{}s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "5s"),
        SESSION_TIMEOUT.as_secs()
    );
    let path = dir.join(format!("worker-{i}.toml"));
    std::fs::write(&path, text).expect("write config");
    path
}

fn describe(dst: &str) -> Option<Group> {
    group::describe(dst, GROUP)
}

#[test]
#[ignore = "needs a Docker engine: run scripts/test-kafka"]
fn three_workers_own_each_partition_once_and_a_killed_ones_partitions_move() {
    let (source, target) = (Kafka::start(), Kafka::start());
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let target_topic = format!("src.{TOPIC}");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut workers: BTreeMap<usize, Strait> = (0..WORKERS)
        .map(|i| {
            let cfg = config(dir.path(), &src, &dst, i);
            (
                i,
                Strait::start(&cfg, &dir.path().join(format!("worker-{i}.log"))),
            )
        })
        .collect();
    let log_paths: Vec<PathBuf> = workers.values().map(|w| w.log.clone()).collect();
    // Every worker's log tail, the killed one's too.
    let logs = || {
        log_paths
            .iter()
            .map(|l| format!("--- {}\n{}", l.display(), log_tail(l)))
            .collect::<Vec<_>>()
            .join("\n")
    };

    // Three members; each partition owned once; everyone has a share.
    wait::until(
        "three members owning each partition once",
        Duration::from_secs(120),
        || {
            workers.values_mut().for_each(Strait::assert_running);
            describe(&dst).is_some_and(|g| g.settled(TOPIC, PARTITIONS, WORKERS))
        },
        || format!("{:#?}\n{}", describe(&dst), logs()),
    );
    let before = describe(&dst).expect("the group");
    assert_eq!(before.protocol_type, "strait");
    let shares = before.by_member(TOPIC);
    assert_eq!(
        shares.len(),
        WORKERS,
        "every worker owns partitions: {shares:?}"
    );
    println!("3 workers: {shares:?}");
    wait::until(
        "replication by all three",
        Duration::from_secs(60),
        || {
            let e = ends(
                &dst,
                &target_topic,
                PARTITIONS,
                IsolationLevel::ReadUncommitted,
            );
            e.is_some_and(|e| e.values().all(|n| *n > 0))
        },
        logs,
    );

    // kill -9 one member: the coordinator expels it after its session timeout and the
    // survivors take its partitions.
    let victim = 1;
    let moved = shares[&format!("worker-{victim}")].clone();
    workers.get_mut(&victim).expect("worker").kill9();
    workers.remove(&victim);
    let killed = Instant::now();
    wait::until(
        "two members owning each partition once",
        SESSION_TIMEOUT + Duration::from_secs(60),
        || {
            workers.values_mut().for_each(Strait::assert_running);
            describe(&dst).is_some_and(|g| g.settled(TOPIC, PARTITIONS, WORKERS - 1))
        },
        || format!("{:#?}\n{}", describe(&dst), logs()),
    );
    let after = describe(&dst).expect("the group").by_member(TOPIC);
    println!(
        "worker-{victim} killed: its {moved:?} moved within {:?}; now {after:?}",
        killed.elapsed()
    );
    assert!(!after.contains_key(&format!("worker-{victim}")));

    // The moved partitions replicate again.
    let at_move = ends(
        &dst,
        &target_topic,
        PARTITIONS,
        IsolationLevel::ReadUncommitted,
    )
    .expect("ends");
    wait::until(
        "the moved partitions to replicate again",
        Duration::from_secs(60),
        || {
            let now = ends(
                &dst,
                &target_topic,
                PARTITIONS,
                IsolationLevel::ReadUncommitted,
            );
            now.is_some_and(|now| moved.iter().all(|p| now[p] > at_move[p]))
        },
        logs,
    );
    let produced = producer.finish();

    kafka::wait_caught_up(
        (&src, TOPIC),
        (&dst, &target_topic),
        PARTITIONS,
        Duration::from_secs(90),
        logs,
    );
    let report = kafka::compare((&src, TOPIC), (&dst, &target_topic), PARTITIONS, produced);
    println!("scale-out against Apache Kafka: {produced} produced; {report}");
    // One kill: a moved partition may see its last in-flight window again.
    let problems = report.problems(MAX_IN_FLIGHT * BATCH_RECORDS as usize);
    assert!(problems.is_empty(), "{problems:#?}\n{}", logs());
}
