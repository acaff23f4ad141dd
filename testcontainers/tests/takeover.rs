//! Taking over from a real MirrorMaker 2 on Apache Kafka (`start_position = "takeover"`,
//! docs/migrating-from-mm2.md): MM2 in dedicated mode replicates an lz4 topic written by
//! transactional producers that also abort, under load the whole time, and syncs a
//! consumer group's offsets; MM2 is stopped; more is written; `strait run` takes over
//! while the load goes on. librdkafka then finds every
//! committed source record on the target exactly once, in order (nothing MM2 copied is
//! copied again, nothing after it is missed); the group offsets MM2 wrote on the target are
//! kept; and `strait failover` of a group positioned after the takeover commits the exact
//! record.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strait_kafka_scenarios::kafka::total;
use strait_kafka_scenarios::process::{self, log_tail, strait_binary};
use strait_kafka_scenarios::{Kafka, wait};
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::kafka::mm2::{self, Mm2};
use strait_testkit::rdkafka::{
    self, Codec, ConsumeOptions, Isolation, ProduceOptions, StartOffset, Transaction,
};

const TOPIC: &str = "orders";
const TARGET_TOPIC: &str = "src.orders";
const PARTITIONS: i32 = 3;
/// Positioned inside what MM2 copied: its offsets on the target are MM2's and stay.
const GROUP_BEFORE: &str = "billing";
/// Positioned after the takeover: failed over by Strait, exactly.
const GROUP_AFTER: &str = "shipping";

/// `n` records `LABEL-P-I` per partition, lz4, in one transaction that commits or aborts.
fn produce(src: &str, label: &str, n: usize, transaction: Transaction) -> u64 {
    let records: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| {
            (0..n).map(move |i| {
                TestRecord::new(format!("k-{p}-{i}"), format!("{label}-{p}-{i}")).with_partition(p)
            })
        })
        .collect();
    let opts = ProduceOptions {
        codec: Codec::Lz4,
        transaction,
        transactional_id: Some(format!("tx-{label}")),
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(src, TOPIC, &records, &opts).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "{label}");
    match transaction {
        Transaction::Abort => 0,
        _ => records.len() as u64,
    }
}

/// A producer writing the whole time until `stop`: rounds of 10 lz4 records per
/// partition in a committed transaction, every fourth round followed by an aborted one of
/// 3. Returns the committed records it wrote.
fn load(src: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut committed = 0;
        let mut round = 0;
        while !stop.load(Ordering::Relaxed) {
            committed += produce(&src, &format!("load{round}"), 10, Transaction::Commit);
            if round % 4 == 3 {
                produce(&src, &format!("load{round}x"), 3, Transaction::Abort);
            }
            round += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        committed
    })
}

/// A group's committed offsets on `bootstrap`, by partition of `topic`.
fn committed(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    rdkafka::list_group_offsets(bootstrap, group)
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o.topic == topic)
        .map(|o| (o.partition, o.offset))
        .collect()
}

/// The source offset of the record with `value` in partition `p` (read_committed).
fn offset_of(src: &str, p: i32, value: &str) -> i64 {
    let opts = ConsumeOptions {
        partitions: Some(vec![p]),
        from: StartOffset::Beginning,
        ..ConsumeOptions::default()
    };
    rdkafka::consume(src, TOPIC, &opts)
        .expect("consume")
        .into_iter()
        .find(|r| r.value.as_deref() == Some(value.as_bytes()))
        .unwrap_or_else(|| panic!("{value} in partition {p}"))
        .offset
}

/// The value of the first record a read_committed consumer of `topic`-`p` gets from
/// `offset`.
fn value_at(bootstrap: &str, topic: &str, p: i32, offset: i64) -> Option<String> {
    strait_kafka_scenarios::history::next_record(bootstrap, topic, p, offset).map(|(_, v)| v)
}

/// Every record of `topic` per partition, as values in offset order, read by librdkafka
/// to the high watermarks.
fn values(bootstrap: &str, topic: &str, isolation: Isolation) -> BTreeMap<i32, Vec<String>> {
    let opts = ConsumeOptions {
        isolation,
        to_end: true,
        ..ConsumeOptions::default()
    };
    let mut records = rdkafka::consume(bootstrap, topic, &opts).expect("consume");
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for r in records {
        let v = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
        out.entry(r.partition).or_default().push(v);
    }
    out
}

fn strait(args: &[&str]) -> Output {
    Command::new(strait_binary())
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait")
}

#[test]
fn strait_takes_over_from_a_stopped_mm2_under_load_without_copying_twice_and_groups_resume_exactly()
{
    let (source, target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let mut produced = produce(&src, "a", 40, Transaction::Commit);
    produced += produce(&src, "b", 10, Transaction::Abort);
    produced += produce(&src, "c", 40, Transaction::Commit);
    let before: Vec<(i32, i64)> = (0..PARTITIONS)
        .map(|p| (p, offset_of(&src, p, &format!("a-{p}-10"))))
        .collect();
    rdkafka::commit_group_offsets(&src, GROUP_BEFORE, TOPIC, &before).expect("commit");

    // MM2 as a transactional source needs it: only committed records are copied.
    let mut properties = mm2::dedicated_properties("src", &src, "dst", &dst, TOPIC);
    properties.push_str("src.consumer.isolation.level = read_committed\n");
    let mut mm2 = Mm2::start(&properties, Duration::from_secs(120)).expect("start MM2");
    // Under load from here until Strait has taken over.
    let stop_load = Arc::new(AtomicBool::new(false));
    let loader = load(src.clone(), Arc::clone(&stop_load));
    wait::until(
        "MM2 to copy the records written before it started",
        Duration::from_secs(120),
        || total(&dst, TARGET_TOPIC, PARTITIONS) as u64 >= produced,
        || mm2.log_tail(40),
    );
    wait::until(
        "MM2 to sync the group's offsets to the target",
        Duration::from_secs(90),
        || committed(&dst, GROUP_BEFORE, TARGET_TOPIC).len() == PARTITIONS as usize,
        || mm2.log_tail(40),
    );
    let mm2_version = mm2.version().to_owned();
    mm2.stop(Duration::from_secs(20));
    let by_mm2 = total(&dst, TARGET_TOPIC, PARTITIONS);
    let group_by_mm2 = committed(&dst, GROUP_BEFORE, TARGET_TOPIC);

    // Written while nothing replicates (and the load goes on).
    produced += produce(&src, "d", 30, Transaction::Commit);
    produced += produce(&src, "e", 5, Transaction::Abort);
    produced += produce(&src, "f", 30, Transaction::Commit);
    let after: Vec<(i32, i64)> = (0..PARTITIONS)
        .map(|p| (p, offset_of(&src, p, &format!("f-{p}-5"))))
        .collect();
    rdkafka::commit_group_offsets(&src, GROUP_AFTER, TOPIC, &after).expect("commit");

    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = two_cluster_flow(&src, &dst, "10s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"{TOPIC}\"]\nstart_position = \"takeover\"\n\
         [metrics]\nenabled = false\n"
    ));
    let cfg_path = dir.path().join("strait.toml");
    std::fs::write(&cfg_path, cfg).expect("write config");
    let log = dir.path().join("strait.log");
    let mut strait_run = process::start(&cfg_path, &log);
    wait::until(
        "Strait to take over",
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .filter(|l| {
                    l.contains("takeover: replication continues") && l.contains("topic=orders")
                })
                .count()
                == PARTITIONS as usize
        },
        || log_tail(&log),
    );
    std::thread::sleep(Duration::from_secs(3));
    stop_load.store(true, Ordering::Relaxed);
    produced += loader.join().expect("load");
    wait::until(
        "Strait to copy every committed record",
        Duration::from_secs(120),
        || total(&dst, TARGET_TOPIC, PARTITIONS) as u64 >= produced,
        || log_tail(&log),
    );
    let status = process::stop(&mut strait_run, Duration::from_secs(30));
    assert!(status.success(), "{}", log_tail(&log));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    // MM2's `heartbeats` topic (replicated by both) is taken over too.
    let orders = text
        .lines()
        .filter(|l| l.contains("takeover: replication continues") && l.contains("topic=orders"))
        .count();
    assert_eq!(orders, PARTITIONS as usize, "{}", log_tail(&log));

    // Read to the high watermarks, uncapped: the source as a read_committed consumer sees
    // it, the target whole (a record of an aborted transaction, a duplicate or a stray
    // record would show).
    let want = values(&src, TOPIC, Isolation::ReadCommitted);
    let got = values(&dst, TARGET_TOPIC, Isolation::ReadUncommitted);
    let copied_by_strait: usize = got.values().map(Vec::len).sum::<usize>() - by_mm2 as usize;
    println!(
        "MM2 {mm2_version} copied {by_mm2} records, then Strait took over and copied \
         {copied_by_strait}; {produced} committed on the source"
    );
    assert_eq!(want.values().map(Vec::len).sum::<usize>() as u64, produced);
    assert_eq!(
        got,
        want,
        "every committed source record once, in order\n{}",
        log_tail(&log)
    );

    // MM2's group offsets on the target are kept: positions before the takeover are not
    // Strait's to translate.
    assert_eq!(committed(&dst, GROUP_BEFORE, TARGET_TOPIC), group_by_mm2);
    // (MM2 4.x translates conservatively, to a record at or before the group's: printed,
    // not Strait's to judge.)
    for (p, offset) in &group_by_mm2 {
        println!(
            "{GROUP_BEFORE} (source a-{p}-10): MM2 left it at target offset {offset}, record {:?}",
            value_at(&dst, TARGET_TOPIC, *p, *offset)
        );
    }

    // A group positioned after the takeover fails over to the very record.
    let cfg = cfg_path.to_str().expect("utf-8 path");
    let out = strait(&["failover", "-c", cfg, "--group", GROUP_AFTER, "--execute"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let moved = committed(&dst, GROUP_AFTER, TARGET_TOPIC);
    assert_eq!(moved.len(), PARTITIONS as usize, "{moved:?}");
    for (p, offset) in moved {
        assert_eq!(
            value_at(&dst, TARGET_TOPIC, p, offset),
            Some(format!("f-{p}-5")),
            "{GROUP_AFTER} in partition {p} resumes at its next record"
        );
    }
}
