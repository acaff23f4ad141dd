//! Exactly-once replication (`delivery.guarantee = "exactly_once"`, docs/replication.md
//! "Exactly-once") against Apache Kafka's own transaction coordinator, the real
//! `strait` binary between two clusters and a producer writing numbered records the whole
//! time. The judge is librdkafka reading the target with `isolation.level=read_committed`
//! (Kafka sends real aborted-transaction lists and last stable offsets, so no marker
//! resolving of our own is needed, unlike crates/cli/tests/exactly_once.rs on Tansu):
//!
//! - kill -9 of `strait run` at several moments under load, then a restart and a drain:
//!   every source record is on the target exactly once, in order, per partition; the
//!   committed offset maps translate every source record to the target record holding
//!   it; and once strait is stopped no transaction is left hanging (each target
//!   partition's last stable offset is its high watermark: a hanging transaction would
//!   block every read_committed consumer);
//! - a zombie: a `strait run` frozen with SIGSTOP while a replacement on the same config
//!   takes over is fenced by Kafka when resumed (the broker answers PRODUCER_FENCED; it
//!   exits non-zero saying it was fenced), and the target still holds every record
//!   exactly once;
//! - source transactions, committed and aborted (Kafka keeps the aborted records in the
//!   log): committed data once, aborted never (read committed and uncommitted alike), and
//!   a source group past the markers resumes on the target at the very record;
//! - a foreign writer on the target: the flow stops (`on_target_mismatch = "fail"`) and
//!   aborts its open transaction first, so no read_committed consumer is held at it;
//! - kill -9 and restart of the target broker (its transaction coordinator and every
//!   leader) mid-stream: every record once, nothing left open, maps exact;
//! - scale-out slots: two members share 6 slots; one of them is killed with kill -9 and
//!   started again, again and again, while the other's slots keep committing. Each
//!   restarted slot reads its own last commit past the other slots' open transactions
//!   (the state topic is read in commit order), so nothing is copied twice.
//!
//! The tests share one pair of clusters (a flow name, topic and transactional id each),
//! except the broker kill, which has its own; the JVMs die with the test process (the
//! testkit's watchdog).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use strait_client::{
    Client, ClientConfig, FetchOptions, IsolationLevel, PartitionConsumer, ProducerRecord,
    TransactionalConfig, TransactionalProducer,
};
use strait_kafka_scenarios::kafka::ends;
use strait_kafka_scenarios::process::{self, Strait, log_tail};
use strait_kafka_scenarios::{Kafka, runtime, wait};
use strait_testkit::TestRecord;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::load::NumberedProducer;
use strait_testkit::rdkafka::{
    self, ConsumeOptions, Isolation, ProduceOptions, StartOffset, Transaction,
};
use strait_testkit::verify;

const PARTITIONS: i32 = 3;
/// Records per partition in one producer call.
const PER_CALL: u64 = 20;
/// librdkafka `batch.num.messages` of the source producer.
const BATCH_RECORDS: u32 = 10;

/// The source and target clusters every test of this file shares.
fn clusters() -> &'static (Kafka, Kafka) {
    static PAIR: OnceLock<(Kafka, Kafka)> = OnceLock::new();
    PAIR.get_or_init(Kafka::pair)
}

/// One flow named `name` from `topic`, exactly-once, committing every 100 ms.
fn config(dir: &Path, name: &str, clusters: (&str, &str), topic: &str) -> PathBuf {
    config_with(dir, name, clusters, topic, SYNC_OFF)
}

/// [`config`] with another `[flows.sync]` table.
fn config_with(
    dir: &Path,
    name: &str,
    (src, dst): (&str, &str),
    topic: &str,
    sync: &str,
) -> PathBuf {
    let text = format!(
        r#"{}name = "{name}"
[flows.topics]
include = ["{topic}"]
{sync}[flows.delivery]
guarantee = "exactly_once"
transaction_interval = "100ms"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
        two_cluster_flow(src, dst, "5s")
    );
    let path = dir.join("strait.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// Records committed on `topic` (the sum of the last stable offsets; markers included).
fn committed_end(bootstrap: &str, topic: &str) -> i64 {
    ends(bootstrap, topic, PARTITIONS, IsolationLevel::ReadCommitted)
        .map_or(0, |e| e.values().sum())
}

/// Per partition, the values librdkafka reads with `isolation` (CRC-checked), in offset
/// order; stops early once `expect` records were read.
fn read(
    bootstrap: &str,
    topic: &str,
    isolation: Isolation,
    expect: Option<usize>,
) -> BTreeMap<i32, Vec<Bytes>> {
    let opts = ConsumeOptions {
        isolation,
        count: expect,
        idle: Duration::from_secs(5),
        max_time: Duration::from_secs(120),
        client: rdkafka::ClientConfig::new().set("check.crcs", "true"),
        ..ConsumeOptions::default()
    };
    let mut records = rdkafka::consume(bootstrap, topic, &opts)
        .unwrap_or_else(|e| panic!("consume {topic}: {e}"));
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut out: BTreeMap<i32, Vec<Bytes>> = BTreeMap::new();
    for r in records {
        out.entry(r.partition)
            .or_default()
            .push(r.value.unwrap_or_default());
    }
    out
}

/// How many records librdkafka reads with read_committed on `topic` (1 s without a
/// record ends the read).
fn committed_records(bootstrap: &str, topic: &str) -> usize {
    let opts = ConsumeOptions {
        isolation: Isolation::ReadCommitted,
        ..ConsumeOptions::until_idle(Duration::from_secs(1))
    };
    rdkafka::consume(bootstrap, topic, &opts).map_or(0, |r| r.len())
}

/// Waits until the read_committed view of the target holds as many records as the source
/// (librdkafka's count, so markers and aborted batches do not count).
fn wait_drained(src: (&str, &str), dst: (&str, &str), produced: u64, strait: &mut Strait) {
    let log = strait.log.clone();
    wait::until(
        "the target to commit every source record",
        Duration::from_secs(90),
        || {
            strait.assert_running();
            // The LSO is at least the committed records' count plus markers: a cheap
            // first test before librdkafka reads.
            if committed_end(dst.0, dst.1) < produced as i64 {
                return false;
            }
            let got: usize = read(
                dst.0,
                dst.1,
                Isolation::ReadCommitted,
                Some(produced as usize),
            )
            .values()
            .map(Vec::len)
            .sum();
            got as u64 >= produced
        },
        || {
            format!(
                "source {:?}, target LSO {:?} HW {:?}\n{}",
                ends(src.0, src.1, PARTITIONS, IsolationLevel::ReadUncommitted),
                ends(dst.0, dst.1, PARTITIONS, IsolationLevel::ReadCommitted),
                ends(dst.0, dst.1, PARTITIONS, IsolationLevel::ReadUncommitted),
                log_tail(&log)
            )
        },
    );
}

/// Every source record on the target exactly once, in order, per partition, for a
/// read_committed reader; `log` for the failure message.
fn assert_exactly_once(src: (&str, &str), dst: (&str, &str), produced: u64, log: &str) {
    let source = read(
        src.0,
        src.1,
        Isolation::ReadCommitted,
        Some(produced as usize),
    );
    let total: usize = source.values().map(Vec::len).sum();
    assert_eq!(total as u64, produced, "the source holds what was produced");
    let target = read(
        dst.0,
        dst.1,
        Isolation::ReadCommitted,
        Some(produced as usize),
    );
    let report = verify::check(&source, &target);
    println!("read_committed on the target: {report}");
    let problems = report.problems(0);
    assert!(problems.is_empty(), "{problems:#?}\n{log}");
    for p in 0..PARTITIONS {
        assert!(
            source.get(&p) == target.get(&p),
            "partition {p}: the target is not the source record for record\n{log}"
        );
    }
}

/// No transaction left open on the target topic: every partition's last stable offset is
/// its high watermark (Kafka holds read_committed readers at the first open transaction).
fn assert_no_hanging_transaction(dst: &str, topic: &str, log: &str) {
    let seen = std::cell::RefCell::new(None);
    wait::until(
        "the target's LSO to reach its high watermark",
        Duration::from_secs(10),
        || {
            let lso = ends(dst, topic, PARTITIONS, IsolationLevel::ReadCommitted);
            let hw = ends(dst, topic, PARTITIONS, IsolationLevel::ReadUncommitted);
            let done = lso.is_some() && lso == hw;
            *seen.borrow_mut() = Some((lso, hw));
            done
        },
        || format!("(LSO, HW) {:?}: a transaction hangs\n{log}", seen.borrow()),
    );
}

/// The committed offset maps (read from the state topic as `strait` reads them on start)
/// map every source record to the target offset holding the same record, and every source
/// record is mapped: translation is exact.
fn assert_maps_exact(cfg: &Path, (src, topic): (&str, &str), (dst, target): (&str, &str)) {
    let config = strait_mirror::config::load(cfg).expect("config");
    let flow = config.flows[0].clone();
    let registry = runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([dst]))
            .await
            .expect("connect");
        strait_mirror::state::load_maps(&client, &flow)
            .await
            .expect("load maps")
    });
    let by_offset = |bootstrap: &str, topic: &str| -> BTreeMap<i32, BTreeMap<i64, Bytes>> {
        let opts = ConsumeOptions {
            isolation: Isolation::ReadUncommitted,
            ..ConsumeOptions::until_idle(Duration::from_secs(3))
        };
        let mut out: BTreeMap<i32, BTreeMap<i64, Bytes>> = BTreeMap::new();
        for r in rdkafka::consume(bootstrap, topic, &opts).expect("consume") {
            out.entry(r.partition)
                .or_default()
                .insert(r.offset, r.value.unwrap_or_default());
        }
        out
    };
    let source = by_offset(src, topic);
    let on_target = by_offset(dst, target);
    for p in 0..PARTITIONS {
        let reader = registry.reader(topic, p).expect("a map per partition");
        let runs: Vec<(u64, u64, u64)> = reader.read(|m| {
            m.runs()
                .map(|r| (r.source_start(), r.target_start(), r.len()))
                .collect()
        });
        let (s, t) = (&source[&p], &on_target[&p]);
        let mut mapped = 0usize;
        for (ss, ts, len) in &runs {
            for i in 0..*len {
                let (so, to) = ((ss + i) as i64, (ts + i) as i64);
                assert_eq!(
                    s.get(&so),
                    t.get(&to),
                    "partition {p}: source offset {so} maps to target offset {to} (runs {runs:?})"
                );
                mapped += 1;
            }
        }
        assert_eq!(
            mapped,
            s.len(),
            "partition {p}: every source record is mapped"
        );
    }
}

/// Committed records of the flow `name`'s state topic: (partition snapshots, map deltas,
/// delta tombstones), by the first key byte (`state::codec`, `state::delta`).
fn state_records(dst: &str, name: &str) -> (usize, usize, usize) {
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([dst]))
            .await
            .expect("connect");
        let opts = FetchOptions {
            max_wait: Duration::from_millis(50),
            ..FetchOptions::default()
        };
        let topic = format!("strait-state.{name}.internal");
        let mut c = PartitionConsumer::new(client, &topic, 0, 0)
            .with_options(opts)
            .resolving_markers();
        let (mut s, mut d, mut t) = (0, 0, 0);
        loop {
            for r in c.poll().await.expect("poll") {
                match (r.key.as_deref().and_then(|k| k.first()), r.value.is_some()) {
                    (Some(1), true) => s += 1,
                    (Some(3), true) => d += 1,
                    (Some(3), false) => t += 1,
                    _ => {}
                }
            }
            if c.high_watermark() >= 0 && c.position() >= c.high_watermark() {
                return (s, d, t);
            }
        }
    })
}

/// How many kill -9s: `STRAIT_EOS_KILLS`, else 6.
fn kills() -> usize {
    std::env::var("STRAIT_EOS_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

#[test]
fn kill_9_under_load_then_restart_commits_every_record_exactly_once_and_leaves_no_transaction_open()
{
    const TOPIC: &str = "eos-kill";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "eos-kill", (&src, &dst), TOPIC);
    let log = dir.path().join("strait.log");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let kills = kills();
    // A small xorshift: the moments differ per kill, the run is reproducible.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..kills {
        let before = committed_end(&dst, &target_topic);
        let mut strait = process::start(&cfg, &log);
        wait::until(
            "a commit after the start",
            Duration::from_secs(60),
            || {
                strait.assert_running();
                committed_end(&dst, &target_topic) > before
            },
            || log_tail(&log),
        );
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Anywhere within a few transaction intervals: mid-transaction, mid-commit, between.
        std::thread::sleep(Duration::from_millis(seed % 700));
        strait.kill9();
        println!(
            "kill {}/{kills} at {} committed on the target",
            i + 1,
            committed_end(&dst, &target_topic)
        );
    }
    let produced = producer.finish();
    let mut strait = process::start(&cfg, &log);
    wait_drained((&src, TOPIC), (&dst, &target_topic), produced, &mut strait);
    let status = process::stop(&mut strait, Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", log_tail(&log));
    let log_text = log_tail(&log);
    assert_no_hanging_transaction(&dst, &target_topic, &log_text);
    assert_exactly_once((&src, TOPIC), (&dst, &target_topic), produced, &log_text);
    assert_maps_exact(&cfg, (&src, TOPIC), (&dst, &target_topic));
    // The parity check agrees: every committed record paired once through the maps the
    // transactions wrote (Strait's own markers and aborted retries are map gaps).
    let (code, report) = process::verify(&cfg, &[]);
    assert_eq!(
        code,
        Some(0),
        "strait verify after {kills} kills:\n{report}"
    );
    let (snapshots, deltas, tombstones) = state_records(&dst, "eos-kill");
    println!(
        "{kills} kills on Apache Kafka: {produced} records, each committed once; state topic: \
         {snapshots} snapshots, {deltas} deltas, {tombstones} tombstones"
    );
    // Each run's first commit of a partition is a snapshot that tombstones the deltas of
    // the runs before (the maps checked above were rebuilt from what is left).
    assert!(
        deltas > 0 && tombstones > 0,
        "deltas {deltas}, tombstones {tombstones}"
    );
}

/// How many kill -9s of a slot member: `STRAIT_EOS_SLOT_KILLS`, else 5.
fn slot_kills() -> usize {
    std::env::var("STRAIT_EOS_SLOT_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

#[test]
fn kill_9_of_a_member_holding_several_slots_while_the_other_commits_duplicates_nothing() {
    const TOPIC: &str = "eos-slots";
    const NAME: &str = "eos-slots";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    // 6 partitions in 6 slots: each member holds three.
    rdkafka::create_topic(&src, TOPIC, 6, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let member = |name: &str| {
        let text = format!(
            r#"{}name = "{NAME}"
[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.delivery]
guarantee = "exactly_once"
transaction_interval = "100ms"
[flows.scale_out]
slots = 6
instance_id = "{name}"
session_timeout = "6s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
            two_cluster_flow(&src, &dst, "5s")
        );
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write config");
        (path, dir.path().join(format!("{name}.log")))
    };
    let (cfg_a, log_a) = member("a");
    let (cfg_b, log_b) = member("b");
    let logs = || {
        format!(
            "{}
{}",
            log_tail(&log_a),
            log_tail(&log_b)
        )
    };
    let total_committed = || -> i64 {
        ends(&dst, &target_topic, 6, IsolationLevel::ReadCommitted).map_or(0, |e| e.values().sum())
    };
    let producer = NumberedProducer::start(src.clone(), TOPIC, 6, PER_CALL, BATCH_RECORDS);
    let mut a = process::start(&cfg_a, &log_a);
    // Slots the running b started are counted from here (its log is appended to).
    let mut slots_before = 0;
    let mut b = process::start(&cfg_b, &log_b);
    let kills = slot_kills();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    // Slots b started, by its log (each run appends to the same file).
    let started_slots = || {
        std::fs::read_to_string(&log_b)
            .unwrap_or_default()
            .matches("starting the exactly-once slot")
            .count()
    };
    for i in 0..kills {
        let before = total_committed();
        wait::until(
            "b's slots started and both members committing",
            Duration::from_secs(90),
            || {
                a.assert_running();
                b.assert_running();
                started_slots() > slots_before && total_committed() > before + 60
            },
            logs,
        );
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // b commits several transactions of its slots, then dies at a random moment.
        std::thread::sleep(Duration::from_millis(800 + seed % 700));
        // The same static member starts again at once and takes its slots back, fencing
        // its dead self, while a's transactions (and b's other slots') are open.
        b.kill9();
        println!(
            "slot kill {}/{kills} at {} committed",
            i + 1,
            total_committed()
        );
        slots_before = started_slots();
        b = process::start(&cfg_b, &log_b);
    }
    let produced = producer.finish();
    let drained = (&dst, target_topic.as_str());
    wait::until(
        "the target to commit every source record",
        Duration::from_secs(120),
        || {
            a.assert_running();
            b.assert_running();
            total_committed() >= produced as i64
                && read(
                    drained.0,
                    drained.1,
                    Isolation::ReadCommitted,
                    Some(produced as usize),
                )
                .values()
                .map(Vec::len)
                .sum::<usize>() as u64
                    >= produced
        },
        logs,
    );
    for s in [&mut a, &mut b] {
        let status = process::stop(s, Duration::from_secs(30));
        assert_eq!(status.code(), Some(0), "{}", logs());
    }
    let text = logs();
    wait::until(
        "the target's LSO to reach its high watermark",
        Duration::from_secs(10),
        || {
            let lso = ends(&dst, &target_topic, 6, IsolationLevel::ReadCommitted);
            lso.is_some() && lso == ends(&dst, &target_topic, 6, IsolationLevel::ReadUncommitted)
        },
        || format!("a transaction hangs on the target\n{text}"),
    );
    let source = read(
        &src,
        TOPIC,
        Isolation::ReadCommitted,
        Some(produced as usize),
    );
    let on_target = read(
        &dst,
        &target_topic,
        Isolation::ReadCommitted,
        Some(produced as usize),
    );
    let report = verify::check(&source, &on_target);
    println!("{kills} slot kills on Apache Kafka, read_committed on the target: {report}");
    let problems = report.problems(0);
    assert!(
        problems.is_empty(),
        "{problems:#?}
{text}"
    );
}

#[test]
fn a_frozen_process_is_fenced_by_kafkas_coordinator_and_duplicates_nothing() {
    const TOPIC: &str = "eos-zombie";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "eos-zombie", (&src, &dst), TOPIC);
    let (old_log, new_log) = (dir.path().join("old.log"), dir.path().join("new.log"));
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut old = process::start(&cfg, &old_log);
    wait::until(
        "replication",
        Duration::from_secs(60),
        || {
            old.assert_running();
            committed_end(&dst, &target_topic) > 200
        },
        || log_tail(&old_log),
    );
    old.signal("STOP");
    // Records (not markers, which the LSO counts too) a read_committed reader sees.
    let frozen_at = committed_records(&dst, &target_topic);
    let mut new = process::start(&cfg, &new_log);
    wait::until(
        "the replacement to take over",
        Duration::from_secs(60),
        || {
            new.assert_running();
            committed_records(&dst, &target_topic) > frozen_at + 200
        },
        || log_tail(&new_log),
    );
    old.signal("CONT");
    let (status, _) = old.wait_exit(Duration::from_secs(60));
    let zombie = old.log_text();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the resumed process must stop with an error: {status:?}\n{}",
        old.log_tail()
    );
    // Whichever notices first stops it, each naming why: the broker or the transaction
    // coordinator (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: "fenced"), or the flow's
    // writer group, which gave the flow to the replacement while the zombie was frozen.
    // None of them lets it restart: that InitProducerId would fence the replacement.
    assert!(
        zombie.contains("fenced")
            || zombie.contains("gave the flow to another process")
            || zombie.contains("another process holds the flow's writer group"),
        "the resumed process says why it stopped:\n{}",
        old.log_tail()
    );
    assert_eq!(
        zombie.matches("transactional producer initialised").count(),
        1,
        "the zombie never initialised its producer again:\n{}",
        old.log_tail()
    );
    println!(
        "{frozen_at} records committed when the zombie froze; its last words: {}",
        zombie
            .lines()
            .rfind(|l| l.contains("strait: flow"))
            .unwrap_or_default()
    );
    let produced = producer.finish();
    wait_drained((&src, TOPIC), (&dst, &target_topic), produced, &mut new);
    let status = process::stop(&mut new, Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", new.log_tail());
    let log_text = new.log_tail();
    assert_no_hanging_transaction(&dst, &target_topic, &log_text);
    assert_exactly_once((&src, TOPIC), (&dst, &target_topic), produced, &log_text);
    assert_maps_exact(&cfg, (&src, TOPIC), (&dst, &target_topic));
}

/// Why a failed exactly-once run asks its group, never the transaction coordinator,
/// before it starts again (`eos_failure.rs`, rule 3): on Kafka an InitProducerId under an
/// older epoch of the same producer id aborts the open transaction of the producer that
/// holds the id now, and fences it. A process resumed from a freeze that asked so would
/// stop its replacement.
#[test]
fn a_probe_under_an_old_epoch_aborts_the_open_transaction_of_the_ids_new_holder() {
    const TOPIC: &str = "eos-probe";
    let (_, target) = clusters();
    let dst = target.bootstrap();
    rdkafka::create_topic(&dst, TOPIC, 1, &[]).expect("topic");
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new([dst.as_str()]))
            .await
            .expect("connect");
        let cfg = TransactionalConfig::new("strait.eos-probe");
        let old = TransactionalProducer::new(client.clone(), cfg.clone())
            .await
            .expect("the old holder");
        let new = TransactionalProducer::new(client.clone(), cfg)
            .await
            .expect("the new holder");
        new.begin().expect("begin");
        for ack in new
            .send_records(TOPIC, 0, &[ProducerRecord::new("k", "v")])
            .await
            .expect("send")
        {
            ack.wait().await.expect("written in the open transaction");
        }
        // Asked until it answers, as a restart would (CONCURRENT_TRANSACTIONS while the
        // coordinator aborts).
        let mut answer = old.probe_fenced(TOPIC, 0).await;
        for _ in 0..100 {
            if answer.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            answer = old.probe_fenced(TOPIC, 0).await;
        }
        assert!(
            answer.expect("an answer"),
            "the old holder is told the id is taken"
        );
        let e = new
            .commit()
            .await
            .expect_err("the new holder's transaction was aborted under it");
        assert!(e.is_fenced(), "the new holder is fenced: {e}");
    });
}

#[test]
fn source_transactions_committed_once_aborted_never_and_a_group_translates_exactly() {
    const TOPIC: &str = "eos-txn";
    const GROUP: &str = "g-eos-txn";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    let dir = tempfile::tempdir().expect("temp dir");
    let sync = "[flows.sync]\ngroup_offsets = true\nheartbeats = false\ncheckpoints = false\n";
    let cfg = config_with(dir.path(), "eos-txn", (&src, &dst), TOPIC, sync);
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let batch = |tag: &str| -> Vec<TestRecord> {
        (0..PARTITIONS)
            .flat_map(|p| {
                (0..15)
                    .map(move |i| TestRecord::new("k", format!("{p}:{tag}{i}")).with_partition(p))
            })
            .collect()
    };
    for (tag, txn) in [
        ("plain", Transaction::None),
        ("committed", Transaction::Commit),
        ("aborted", Transaction::Abort),
        ("after", Transaction::Commit),
    ] {
        let opts = ProduceOptions {
            idempotence: true,
            transaction: txn,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &batch(tag), &opts).expect("produce");
    }
    // Kafka keeps the aborted records in the source log.
    let raw = read(&src, TOPIC, Isolation::ReadUncommitted, None);
    assert!(
        raw[&1].iter().any(|v| v.as_ref() == b"1:aborted3"),
        "the source log keeps the aborted records"
    );
    // A group on the source that has read up to `1:after3` (its next record), past the
    // markers and the aborted transaction.
    let on_source = rdkafka::consume(
        &src,
        TOPIC,
        &ConsumeOptions::until_idle(Duration::from_secs(2)),
    )
    .expect("consume");
    let at = on_source
        .iter()
        .find(|r| r.value.as_deref() == Some(b"1:after3".as_slice()))
        .expect("1:after3 on the source")
        .offset;
    rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(1, at)]).expect("group commit");
    let log = dir.path().join("strait.log");
    let status = process::once(&cfg, &log, Duration::from_secs(60));
    assert!(status.success(), "strait run --once: {}", log_tail(&log));
    let want: BTreeMap<i32, Vec<Bytes>> = (0..PARTITIONS)
        .map(|p| {
            let v = ["plain", "committed", "after"]
                .iter()
                .flat_map(|tag| (0..15).map(move |i| Bytes::from(format!("{p}:{tag}{i}"))))
                .collect();
            (p, v)
        })
        .collect();
    // read_committed and read_uncommitted alike: nothing aborted was copied at all.
    for isolation in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        assert_eq!(
            read(&dst, &target_topic, isolation, None),
            want,
            "{isolation:?}\n{}",
            log_tail(&log)
        );
    }
    assert_no_hanging_transaction(&dst, &target_topic, &log_tail(&log));
    // The target group resumes at the very record.
    let translated = rdkafka::list_group_offsets(&dst, GROUP)
        .expect("target group offsets")
        .into_iter()
        .find(|o| o.topic == target_topic && o.partition == 1)
        .unwrap_or_else(|| panic!("{GROUP} committed on the target\n{}", log_tail(&log)))
        .offset;
    let next = rdkafka::consume(
        &dst,
        &target_topic,
        &ConsumeOptions {
            partitions: Some(vec![1]),
            from: StartOffset::Offset(translated),
            ..ConsumeOptions::count(1)
        },
    )
    .expect("consume at the translated offset");
    assert_eq!(
        next.first().and_then(|r| r.value.clone()).as_deref(),
        Some(b"1:after3".as_slice()),
        "source offset {at} translated to target offset {translated}"
    );
    assert_eq!(
        next.first().map(|r| r.offset),
        Some(translated),
        "the translated offset is that record's"
    );
    // `strait verify` proves the same position by the same record, and finds the copy
    // complete.
    let (code, out) = process::verify(&cfg, &["--group", GROUP]);
    let report: serde_json::Value = serde_json::from_str(&out).expect("verify's JSON");
    assert_eq!(code, Some(0), "strait verify: {report:#}");
    let proven = report["flows"][0]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["partition"] == 1)
        .map(|g| (g["verdict"].clone(), g["target"].clone()));
    assert_eq!(
        proven,
        Some((serde_json::json!("proven"), serde_json::json!(translated))),
        "{report:#}"
    );
}

#[test]
fn a_foreign_writer_on_the_target_is_a_target_mismatch_that_stops_the_flow_under_fail() {
    const TOPIC: &str = "eos-foreign";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "eos-foreign", (&src, &dst), TOPIC);
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let log = dir.path().join("strait.log");
    let mut strait = process::start(&cfg, &log);
    wait::until(
        "replication",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            committed_end(&dst, &target_topic) > 100
        },
        || log_tail(&log),
    );
    // Someone else writes into the target partition Strait owns (not our records).
    let foreign: Vec<TestRecord> = (0..5)
        .map(|i| TestRecord::new("x", format!("foreign-{i}")).with_partition(0))
        .collect();
    rdkafka::produce(&dst, &target_topic, &foreign, &ProduceOptions::default()).expect("produce");
    // The default on_target_mismatch is "fail": the flow stops, it is not restarted.
    let (status, _) = strait.wait_exit(Duration::from_secs(60));
    drop(producer);
    let text = strait.log_text();
    assert!(
        status.is_some_and(|s| !s.success()),
        "the flow stops: {status:?}\n{}",
        strait.log_tail()
    );
    assert!(
        text.contains("expected") && text.contains("only writer"),
        "the incident names it:\n{}",
        strait.log_tail()
    );
    assert!(
        !text.contains("restarting the flow from its last commit"),
        "a fail incident is not restarted:\n{}",
        strait.log_tail()
    );
    // Nothing strait wrote is left in a hanging transaction (the process stopped).
    assert_no_hanging_transaction(&dst, &target_topic, &strait.log_tail());
}

#[test]
fn the_target_broker_killed_and_restarted_mid_stream_keeps_every_record_exactly_once() {
    const TOPIC: &str = "eos-broker";
    // A pair of its own: the target's node (its transaction coordinator, the leader of
    // every partition and of the state topic) is killed.
    let (source, mut target) = Kafka::pair();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    let target_topic = format!("src.{TOPIC}");
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "eos-broker", (&src, &dst), TOPIC);
    let log = dir.path().join("strait.log");
    let producer = NumberedProducer::start(src.clone(), TOPIC, PARTITIONS, PER_CALL, BATCH_RECORDS);
    let mut strait = process::start(&cfg, &log);
    wait::until(
        "replication",
        Duration::from_secs(60),
        || {
            strait.assert_running();
            committed_records(&dst, &target_topic) > 200
        },
        || log_tail(&log),
    );
    // kill -9 mid-transaction: the open transaction, in-flight Produce requests and EndTxn
    // die with the broker; it comes back on the same port and log directory.
    let node = target.cluster_mut().node_mut(0);
    node.kill9();
    std::thread::sleep(Duration::from_secs(2));
    node.restart().expect("restart the target broker");
    let back_at = committed_records(&dst, &target_topic);
    wait::until(
        "replication after the target broker came back",
        Duration::from_secs(90),
        || {
            strait.assert_running();
            committed_records(&dst, &target_topic) > back_at + 200
        },
        || log_tail(&log),
    );
    let produced = producer.finish();
    wait_drained((&src, TOPIC), (&dst, &target_topic), produced, &mut strait);
    let status = process::stop(&mut strait, Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "{}", log_tail(&log));
    let log_text = log_tail(&log);
    assert_no_hanging_transaction(&dst, &target_topic, &log_text);
    assert_exactly_once((&src, TOPIC), (&dst, &target_topic), produced, &log_text);
    assert_maps_exact(&cfg, (&src, TOPIC), (&dst, &target_topic));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    println!(
        "target broker kill -9 and restart: {produced} records once; flow restarts: {}",
        text.matches("restarting the flow from its last commit")
            .count()
    );
}
