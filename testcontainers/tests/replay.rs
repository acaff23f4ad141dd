//! `strait replay` against Apache Kafka (docs/replication.md, "Replay a time range"): a
//! source topic whose records carry explicit CreateTime timestamps, keys, values and
//! headers, produced by librdkafka in small batches so the range's first and last batch
//! must be cut. librdkafka reads the target as the independent reader and commits the
//! group positions that are translated.
//!
//! Kafka answers ListOffsets by timestamp from its time index (Tansu 0.6 answers 0, so
//! crates/cli/tests/replay.rs proves the fallback search): here the broker's answer must
//! be taken, checked and right. Kafka also keeps aborted records and markers in the log
//! and holds its last stable offset at an open transaction, which the range must respect.
//!
//! The tests share one pair of clusters; each has its own flow (so its own state topic),
//! topic and group. Every `strait` process a test starts in the background is killed on
//! drop, also when an assertion fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::Value;
use strait_kafka_scenarios::process::{self, log_tail};
use strait_kafka_scenarios::{Kafka, strait_binary};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, ConsumedRecord, ProduceOptions, Transaction};
use strait_testkit::{RecordHeader, TestRecord};

const PARTITIONS: i32 = 3;
const PER_PARTITION: i64 = 30;
/// CreateTime of record `i` of partition `p`: `BASE_MS + i s + p ms`.
const BASE_MS: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z

/// The source and target clusters every test of this file shares.
fn clusters() -> &'static (Kafka, Kafka) {
    static PAIR: OnceLock<(Kafka, Kafka)> = OnceLock::new();
    PAIR.get_or_init(Kafka::pair)
}

fn strait(args: &[&str]) -> Output {
    Command::new(strait_binary())
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn rfc3339(ms: i64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms as u64)).to_string()
}

/// One flow named `name` replicating `topic` and `ghost` (a topic the source lacks);
/// `extra` is appended (more subtables of the flow).
fn config(dir: &Path, name: &str, topic: &str, extra: &str) -> PathBuf {
    let (source, target) = clusters();
    let mut cfg = two_cluster_flow(&source.bootstrap(), &target.bootstrap(), "5s");
    cfg.push_str(&format!(
        "name = \"{name}\"\n[flows.topics]\ninclude = [\"{topic}\", \"ghost\"]\n{SYNC_OFF}{extra}\
         [metrics]\nenabled = false\n"
    ));
    let path = dir.join("strait.toml");
    std::fs::write(&path, cfg).expect("config");
    path
}

fn record(p: i32, i: i64) -> TestRecord {
    let mut r = TestRecord::new(format!("k{p}-{i}"), format!("v{p}-{i}"))
        .with_partition(p)
        .with_timestamp(BASE_MS + i * 1000 + i64::from(p));
    if i % 3 == 0 {
        r = r
            .with_header(RecordHeader::new("trace", format!("t{i}")))
            .with_header(RecordHeader::null("empty"));
    }
    r
}

/// `PER_PARTITION` records per partition of a new `topic`, in batches of four.
fn produce(bootstrap: &str, topic: &str) {
    rdkafka::create_topic(bootstrap, topic, PARTITIONS, &[]).expect("topic");
    let records: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| (0..PER_PARTITION).map(move |i| record(p, i)))
        .collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(4),
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, topic, &records, &opts).expect("produce");
}

fn read(bootstrap: &str, topic: &str) -> Vec<ConsumedRecord> {
    rdkafka::consume(bootstrap, topic, &ConsumeOptions::default()).expect("consume")
}

fn partition(records: &[ConsumedRecord], p: i32) -> Vec<&ConsumedRecord> {
    let mut got: Vec<&ConsumedRecord> = records.iter().filter(|r| r.partition == p).collect();
    got.sort_by_key(|r| r.offset);
    got
}

fn values(records: &[ConsumedRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

/// `strait offsets translate` rows of `topic`: (partition, source offset, translated).
fn translated(out: &Output, topic: &str) -> Vec<(i32, i64, Option<i64>)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 || f[0] != topic {
                return None;
            }
            Some((f[1].parse().ok()?, f[2].parse().ok()?, f[4].parse().ok()))
        })
        .collect()
}

#[test]
fn a_middle_range_is_copied_exactly_translates_and_is_not_copied_twice() {
    const TOPIC: &str = "events-mid";
    const TARGET_TOPIC: &str = "src.events-mid";
    const GROUP: &str = "replayers-mid";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    produce(&src, TOPIC);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "rp-mid", TOPIC, "");
    let cfg = cfg.to_str().expect("utf-8");

    // The flow copies the topic first: the replay then backfills into the same target
    // topic, after the flow's records.
    let run = strait(&["run", "--once", "-c", cfg]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    assert_eq!(read(&dst, TARGET_TOPIC).len(), (PER_PARTITION * 3) as usize);

    // Records 6..21 of each partition: --from between records 5 and 6, --until between
    // 20 and 21 (the batches of four are 4..8 and 20..24: both cut).
    let from = rfc3339(BASE_MS + 5_500);
    let until = rfc3339(BASE_MS + 20_500);
    let args = [
        "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--until", &until,
    ];
    let dry = strait(&args);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    let stdout = String::from_utf8_lossy(&dry.stdout);
    assert!(stdout.contains("dry run: nothing copied"), "{}", text(&dry));
    assert!(stdout.contains("6..21"), "{}", text(&dry));
    assert_eq!(read(&dst, TARGET_TOPIC).len(), (PER_PARTITION * 3) as usize);

    let mut exec: Vec<&str> = args.to_vec();
    exec.extend(["--execute", "--json"]);
    let out = strait(&exec);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["executed"], true, "{summary}");
    assert_eq!(summary["target_topic"], TARGET_TOPIC);
    let id = summary["replay"].as_str().expect("id").to_owned();
    for p in summary["partitions"].as_array().expect("partitions") {
        assert_eq!(p["source_start"], 6, "{p}");
        assert_eq!(p["source_end"], 21, "{p}");
        assert_eq!(p["records_copied"], 15, "{p}");
        assert_eq!(p["target_start"], PER_PARTITION, "{p}");
        assert_eq!(p["target_end"], PER_PARTITION + 15, "{p}");
        // Kafka answers ListOffsets by timestamp from its time index: the answer, checked
        // against the record it points at, is taken; no search.
        assert_eq!(p["from_found_by"]["method"], "list_offsets", "{p}");
        assert_eq!(p["until_found_by"]["method"], "list_offsets", "{p}");
    }

    // librdkafka reads exactly the records of the range after the flow's, in order,
    // byte for byte (key, value, headers, timestamp).
    let source = read(&src, TOPIC);
    let target = read(&dst, TARGET_TOPIC);
    for p in 0..PARTITIONS {
        let src_p = partition(&source, p);
        let dst_p = partition(&target, p);
        assert_eq!(dst_p.len(), (PER_PARTITION + 15) as usize, "partition {p}");
        let replayed: Vec<TestRecord> = dst_p[PER_PARTITION as usize..]
            .iter()
            .map(|r| r.to_test_record())
            .collect();
        let expected: Vec<TestRecord> = src_p[6..21].iter().map(|r| r.to_test_record()).collect();
        assert_eq!(replayed, expected, "partition {p}");
        let offsets: Vec<i64> = dst_p[PER_PARTITION as usize..]
            .iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(
            offsets,
            (PER_PARTITION..PER_PARTITION + 15).collect::<Vec<_>>()
        );
    }

    // Positions inside the range translate through the replay's map; the flow's own map
    // is untouched.
    for (p, o) in [(0, 10), (1, 6), (2, 21)] {
        rdkafka::commit_group_offsets(&src, GROUP, TOPIC, &[(p, o)]).expect("commit");
    }
    let t = strait(&[
        "offsets",
        "translate",
        "-c",
        cfg,
        "--group",
        GROUP,
        "--replay",
        &id,
    ]);
    assert_eq!(t.status.code(), Some(0), "{}", text(&t));
    assert_eq!(
        translated(&t, TOPIC),
        [(0, 10, Some(34)), (1, 6, Some(30)), (2, 21, Some(45))],
        "{}",
        text(&t)
    );
    let flow_t = strait(&["offsets", "translate", "-c", cfg, "--group", GROUP]);
    assert_eq!(flow_t.status.code(), Some(0), "{}", text(&flow_t));
    assert_eq!(
        translated(&flow_t, TOPIC),
        [(0, 10, Some(10)), (1, 6, Some(6)), (2, 21, Some(21))],
        "{}",
        text(&flow_t)
    );

    // The same replay again is refused and copies nothing.
    let again = strait(&exec[..exec.len() - 1]);
    assert_eq!(again.status.code(), Some(4), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already copied"),
        "{}",
        text(&again)
    );
    assert_eq!(
        read(&dst, TARGET_TOPIC).len(),
        ((PER_PARTITION + 15) * 3) as usize
    );

    // The flow goes on after a replay into its own target topic: its recovery finds the
    // replayed records repeat records it wrote (mapped to nothing), and new records land
    // after them.
    let more: Vec<TestRecord> = (PER_PARTITION..PER_PARTITION + 5)
        .map(|i| record(0, i))
        .collect();
    rdkafka::produce(&src, TOPIC, &more, &ProduceOptions::default()).expect("produce");
    let rerun = strait(&["run", "--once", "-c", cfg]);
    assert_eq!(rerun.status.code(), Some(0), "{}", text(&rerun));
    let target = read(&dst, TARGET_TOPIC);
    let dst_p0 = partition(&target, 0);
    assert_eq!(dst_p0.len(), (PER_PARTITION + 15 + 5) as usize);
    let tail: Vec<TestRecord> = dst_p0[(PER_PARTITION + 15) as usize..]
        .iter()
        .map(|r| r.to_test_record())
        .collect();
    let mut new: Vec<TestRecord> = more;
    for r in &mut new {
        r.partition = Some(0);
    }
    assert_eq!(tail, new);

    // A topic the flow would replicate but the source does not have.
    let ghost = strait(&["replay", "-c", cfg, "--topic", "ghost", "--from", &from]);
    assert_eq!(ghost.status.code(), Some(2), "{}", text(&ghost));
    assert!(
        String::from_utf8_lossy(&ghost.stderr).contains("topic ghost does not exist on the source"),
        "{}",
        text(&ghost)
    );
}

#[test]
fn aborted_transactions_and_markers_in_the_range_are_left_out() {
    const TOPIC: &str = "events-txn";
    const TARGET_TOPIC: &str = "src.events-txn";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    // Records 0..10 plain, 10..15 aborted, 15..20 committed, 20..30 plain; record i at
    // BASE_MS + i s. Kafka keeps the aborted records and both markers at their offsets.
    let rec = |i: i64| {
        TestRecord::new(format!("k{i}"), format!("v{i}"))
            .with_partition(0)
            .with_timestamp(BASE_MS + i * 1000)
    };
    for (range, transaction) in [
        (0..10, Transaction::None),
        (10..15, Transaction::Abort),
        (15..20, Transaction::Commit),
        (20..30, Transaction::None),
    ] {
        let records: Vec<TestRecord> = range.map(rec).collect();
        let opts = ProduceOptions {
            transaction,
            batch_num_messages: Some(3),
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    }
    let raw = rdkafka::consume(
        &src,
        TOPIC,
        &ConsumeOptions {
            isolation: rdkafka::Isolation::ReadUncommitted,
            ..ConsumeOptions::default()
        },
    )
    .expect("consume");
    assert!(
        values(&raw).contains(&"v12".to_owned()),
        "the source log keeps the aborted records: {:?}",
        values(&raw)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "rp-txn", TOPIC, "");
    let cfg = cfg.to_str().expect("utf-8");
    // From record 5 to record 25 (excluded), across both transactions.
    let (from, until) = (rfc3339(BASE_MS + 5_000), rfc3339(BASE_MS + 25_000));
    let out = strait(&[
        "replay",
        "-c",
        cfg,
        "--topic",
        TOPIC,
        "--from",
        &from,
        "--until",
        &until,
        "--execute",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let expected: Vec<String> = (5..10)
        .chain(15..20)
        .chain(20..25)
        .map(|i| format!("v{i}"))
        .collect();
    assert_eq!(
        values(&read(&dst, TARGET_TOPIC)),
        expected,
        "{}",
        text(&out)
    );
    // Read uncommitted too: no aborted record was copied at all.
    let raw_target = rdkafka::consume(
        &dst,
        TARGET_TOPIC,
        &ConsumeOptions {
            isolation: rdkafka::Isolation::ReadUncommitted,
            ..ConsumeOptions::default()
        },
    )
    .expect("consume");
    assert_eq!(values(&raw_target), expected, "{}", text(&out));
}

#[test]
fn a_transaction_still_open_is_left_out_the_range_ends_at_the_last_stable_offset() {
    const TOPIC: &str = "events-open";
    const TARGET_TOPIC: &str = "src.events-open";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    let rec = |i: i64| {
        TestRecord::new(format!("k{i}"), format!("v{i}"))
            .with_partition(0)
            .with_timestamp(BASE_MS + i * 1000)
    };
    for (range, transaction) in [(0..10, Transaction::None), (10..15, Transaction::Open)] {
        let records: Vec<TestRecord> = range.map(rec).collect();
        let opts = ProduceOptions {
            transaction,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), "rp-open", TOPIC, "");
    let cfg = cfg.to_str().expect("utf-8");
    let from = rfc3339(BASE_MS + 2_000);
    let out = strait(&[
        "replay",
        "-c",
        cfg,
        "--topic",
        TOPIC,
        "--from",
        &from,
        "--execute",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["partitions"][0]["source_end"], 10, "{summary}");
    let expected: Vec<String> = (2..10).map(|i| format!("v{i}")).collect();
    assert_eq!(values(&read(&dst, TARGET_TOPIC)), expected);
}

#[test]
fn a_replay_into_the_target_topic_of_a_running_flow_leaves_the_flow_replicating() {
    const TOPIC: &str = "events-live";
    const TARGET_TOPIC: &str = "src.events-live";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    produce(&src, TOPIC);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg_path = config(dir.path(), "rp-live", TOPIC, "");
    let cfg = cfg_path.to_str().expect("utf-8");
    let log = dir.path().join("run.log");
    let mut flow = process::start(&cfg_path, &log);
    let mut wait = |n: usize, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // The topic may not exist yet: the flow creates it.
            let got = rdkafka::consume(&dst, TARGET_TOPIC, &ConsumeOptions::default())
                .map_or(0, |r| r.len());
            if got >= n {
                return got;
            }
            flow.assert_running();
            assert!(
                Instant::now() < deadline,
                "{what}: {got} of {n} records on the target\n{}",
                log_tail(&log)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait((PER_PARTITION * 3) as usize, "the flow's copy");
    let (from, until) = (rfc3339(BASE_MS + 5_500), rfc3339(BASE_MS + 20_500));
    // A replay into the flow's topic waits for the flow's saved state to pass the range
    // (rule 19 of replay::guard): the dry run says so until the next checkpoint.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let dry = strait(&[
            "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--until", &until,
        ]);
        if dry.status.success() {
            break;
        }
        assert!(
            text(&dry).contains("saved state has not reached the start of the range"),
            "{}",
            text(&dry)
        );
        assert!(Instant::now() < deadline, "{}", text(&dry));
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = strait(&[
        "replay",
        "-c",
        cfg,
        "--topic",
        TOPIC,
        "--from",
        &from,
        "--until",
        &until,
        "--execute",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // New records while the flow runs, after the replayed ones.
    let more: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| (PER_PARTITION..PER_PARTITION + 5).map(move |i| record(p, i)))
        .collect();
    rdkafka::produce(&src, TOPIC, &more, &ProduceOptions::default()).expect("produce");
    wait(
        ((PER_PARTITION + 15 + 5) * 3) as usize,
        "the flow after the replay",
    );
    flow.assert_running();
    let source = read(&src, TOPIC);
    let target = read(&dst, TARGET_TOPIC);
    for p in 0..PARTITIONS {
        let src_p: Vec<TestRecord> = partition(&source, p)
            .iter()
            .map(|r| r.to_test_record())
            .collect();
        let dst_p: Vec<TestRecord> = partition(&target, p)
            .iter()
            .map(|r| r.to_test_record())
            .collect();
        // The flow's 30, the replay's 15, then the flow's 5 new ones: nothing lost,
        // nothing else duplicated.
        let mut expected = src_p[..30].to_vec();
        expected.extend_from_slice(&src_p[6..21]);
        expected.extend_from_slice(&src_p[30..35]);
        assert_eq!(dst_p, expected, "partition {p}");
    }
    // The running flow took the replayed records for repeats of its own (its live
    // duplicate check) and said so.
    assert!(
        flow.log_text()
            .contains("the target holds a duplicate of records of ours at offsets 30..45"),
        "{}",
        flow.log_tail()
    );
}

/// A `strait replay --execute` running in the background, killed (SIGKILL) and reaped on
/// drop, also when an assertion fails.
struct Background(std::process::Child);

impl Background {
    fn start(args: &[&str]) -> Background {
        let child = Command::new(strait_binary())
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start strait");
        Background(child)
    }

    fn exited(&mut self) -> bool {
        self.0.try_wait().expect("try_wait").is_some()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The source offsets the replay's saved maps reached, per partition (read with the
/// state reader Strait uses): (partition, next source offset, range start, range end).
fn saved_progress(
    rt: &tokio::runtime::Runtime,
    client: &strait_client::Client,
    flow: &strait_mirror::config::Flow,
) -> Vec<(i32, u64, i64, i64)> {
    use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap, Side};
    let saved = rt
        .block_on(strait_mirror::state::read_replays(client, flow))
        .unwrap_or_default();
    saved
        .iter()
        .map(|(k, s)| {
            let map = OffsetMap::from_snapshot(&s.snapshot, DEFAULT_RUN_BUDGET).expect("map");
            (k.partition, map.next(Side::Source), s.start, s.end)
        })
        .collect()
}

/// Sets (`Some(bytes per second)`) or removes Kafka's `producer_byte_rate` quota of the
/// clients named `client_id` on the cluster at `bootstrap`, with Kafka's own
/// `ConfigCommand` (the broker then throttles their Produce requests).
fn producer_quota(bootstrap: &str, client_id: &str, rate: Option<u64>) {
    let install = strait_testkit::kafka::install::broker().expect("the Kafka install");
    let mut cmd = Command::new(&install.java);
    cmd.args([
        "-cp",
        &install.classpath(),
        "org.apache.kafka.tools.ConfigCommand",
    ])
    .args(["--bootstrap-server", bootstrap, "--alter"])
    .args(["--entity-type", "clients", "--entity-name", client_id]);
    match rate {
        Some(r) => cmd.args(["--add-config", &format!("producer_byte_rate={r}")]),
        None => cmd.args(["--delete-config", "producer_byte_rate"]),
    };
    let out = cmd.output().expect("run kafka ConfigCommand");
    assert!(out.status.success(), "kafka ConfigCommand: {}", text(&out));
}

#[test]
fn an_interrupted_replay_resumes_from_its_map_and_copies_each_record_once() {
    const TOPIC: &str = "events-resume";
    const INTO: &str = "replayed-resume";
    const N: i64 = 400;
    /// The replay's client id on the target, which Kafka throttles.
    const SLOW_CLIENT: &str = "strait-replay-throttled";
    let (source, target) = clusters();
    let (src, dst) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let records: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| {
            (0..N).map(move |i| {
                TestRecord::new(format!("k{p}-{i}"), format!("v{p}-{i}"))
                    .with_partition(p)
                    .with_timestamp(BASE_MS + i * 100)
            })
        })
        .collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(2),
        ..ProduceOptions::default()
    };
    rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg_path = config(
        dir.path(),
        "rp-resume",
        TOPIC,
        "[flows.intervals]\ncheckpoint = \"100ms\"\n",
    );
    // The target connection of every strait run of this config carries SLOW_CLIENT.
    let text_cfg = std::fs::read_to_string(&cfg_path).expect("config");
    let text_cfg = text_cfg.replacen(
        "[clusters.dst]\n",
        &format!("[clusters.dst]\nclient_id = \"{SLOW_CLIENT}\"\n"),
        1,
    );
    std::fs::write(&cfg_path, text_cfg).expect("config");
    let cfg = cfg_path.to_str().expect("utf-8");
    // Records 51..351 of each partition into a topic the replay creates.
    let (from, until) = (rfc3339(BASE_MS + 5_050), rfc3339(BASE_MS + 35_050));
    let args = [
        "replay",
        "-c",
        cfg,
        "--topic",
        TOPIC,
        "--from",
        &from,
        "--until",
        &until,
        "--to",
        INTO,
        "--execute",
        "--json",
    ];

    // Kafka throttles the replay's writes to 2 kB/s: the copy takes many seconds, and is
    // killed once its saved map shows it part-way.
    producer_quota(&dst, SLOW_CLIENT, Some(2_000));
    let rt = strait_kafka_scenarios::runtime();
    let config = strait_mirror::config::load(&cfg_path).expect("config");
    let flow = config.enabled_flows().next().expect("a flow").clone();
    let client = rt
        .block_on(strait_client::Client::connect(
            strait_client::ClientConfig::new([dst.as_str()]),
        ))
        .expect("client");
    let mut first = Background::start(&args);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let progress = saved_progress(&rt, &client, &flow);
        if progress
            .iter()
            .any(|(_, next, start, end)| *next as i64 > *start && (*next as i64) < *end)
        {
            println!("killed part-way: {progress:?}");
            break;
        }
        assert!(
            !first.exited(),
            "the replay ended before it was seen part-way: {progress:?}"
        );
        assert!(Instant::now() < deadline, "no progress saved: {progress:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(first);
    producer_quota(&dst, SLOW_CLIENT, None);

    let resumed = strait(&args);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    let summary: Value = serde_json::from_slice(&resumed.stdout).expect("json");
    assert_eq!(summary["decision"], "resume", "{summary}");
    for p in summary["partitions"].as_array().expect("partitions") {
        // The whole run's target range, also what the killed execution copied.
        assert_eq!(
            (&p["target_start"], &p["target_end"]),
            (&Value::from(0), &Value::from(300)),
            "{p}"
        );
    }
    let source = read(&src, TOPIC);
    let target = read(&dst, INTO);
    for p in 0..PARTITIONS {
        let got: Vec<TestRecord> = partition(&target, p)
            .iter()
            .map(|r| r.to_test_record())
            .collect();
        let expected: Vec<TestRecord> = partition(&source, p)[51..351]
            .iter()
            .map(|r| r.to_test_record())
            .collect();
        assert_eq!(got.len(), expected.len(), "partition {p}: {summary}");
        assert!(
            got == expected,
            "partition {p}: not the range, once, in order"
        );
    }

    // --again copies the range once more, as a new run.
    let mut again_args = args.to_vec();
    again_args.push("--again");
    let again = strait(&again_args);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let summary: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(
        (summary["decision"].as_str(), summary["run"].as_u64()),
        (Some("start"), Some(2))
    );
    assert_eq!(read(&dst, INTO).len(), 2 * 300 * PARTITIONS as usize);
}
