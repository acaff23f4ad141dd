//! `strait replay`, end to end (docs/replication.md, "Replay a time range"): two Tansu
//! brokers, a source topic of three partitions whose records carry explicit CreateTime
//! timestamps, keys, values and headers, produced by librdkafka in batches of four so the
//! range's first and last batch must be cut. librdkafka reads the target as the
//! independent reader and commits the group positions that are translated.
//!
//! Tansu 0.6 answers offset 0 to every ListOffsets by time, so these runs also prove the
//! fallback search by batch maxTimestamp finds the right offsets. Every `strait` process a
//! test starts in the background is killed on drop, also when an assertion fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ConsumeOptions, ConsumedRecord, ProduceOptions};
use strait_testkit::{RecordHeader, TansuCluster, TestRecord};

mod common;

use common::command::{output_text, rfc3339, strait};

const TOPIC: &str = "events";
const TARGET_TOPIC: &str = "src.events";
const PARTITIONS: i32 = 3;
const PER_PARTITION: i64 = 30;
/// CreateTime of record `i` of partition `p`: `BASE_MS + i s + p ms`.
const BASE_MS: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z
const GROUP: &str = "replayers";

fn config(dir: &Path, source: &str, target: &str) -> PathBuf {
    let mut cfg = two_cluster_flow(source, target, "5s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"{TOPIC}\", \"ghost\"]\n{SYNC_OFF}[metrics]\nenabled = false\n"
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

fn produce(bootstrap: &str) {
    let records: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| (0..PER_PARTITION).map(move |i| record(p, i)))
        .collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(4),
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, TOPIC, &records, &opts).expect("produce");
}

fn read(bootstrap: &str, topic: &str) -> Vec<ConsumedRecord> {
    rdkafka::consume(bootstrap, topic, &ConsumeOptions::default()).expect("consume")
}

fn partition(records: &[ConsumedRecord], p: i32) -> Vec<&ConsumedRecord> {
    let mut got: Vec<&ConsumedRecord> = records.iter().filter(|r| r.partition == p).collect();
    got.sort_by_key(|r| r.offset);
    got
}

/// `strait offsets translate` rows: (partition, source offset, translated).
fn translated(out: &Output) -> Vec<(i32, i64, Option<i64>)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 || f[0] != TOPIC {
                return None;
            }
            Some((f[1].parse().ok()?, f[2].parse().ok()?, f[4].parse().ok()))
        })
        .collect()
}

#[test]
fn a_middle_range_is_copied_exactly_translates_and_is_not_copied_twice() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce(&src);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
    let cfg = cfg.to_str().expect("utf-8");

    // The flow copies the topic first: the replay then backfills into the same target
    // topic, after the flow's records.
    let run = strait(&["run", "--once", "-c", cfg]);
    assert_eq!(run.status.code(), Some(0), "{}", output_text(&run));
    assert_eq!(read(&dst, TARGET_TOPIC).len(), (PER_PARTITION * 3) as usize);

    // Records 6..21 of each partition: --from between records 5 and 6, --until between
    // 20 and 21 (the batches of four are 4..8 and 20..24: both cut).
    let from = rfc3339(BASE_MS + 5_500);
    let until = rfc3339(BASE_MS + 20_500);
    let args = [
        "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--until", &until,
    ];
    let dry = strait(&args);
    assert_eq!(dry.status.code(), Some(0), "{}", output_text(&dry));
    let stdout = String::from_utf8_lossy(&dry.stdout);
    assert!(
        stdout.contains("dry run: nothing copied"),
        "{}",
        output_text(&dry)
    );
    assert!(stdout.contains("6..21"), "{}", output_text(&dry));
    assert_eq!(read(&dst, TARGET_TOPIC).len(), (PER_PARTITION * 3) as usize);

    let mut exec: Vec<&str> = args.to_vec();
    exec.extend(["--execute", "--json"]);
    let out = strait(&exec);
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
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
        // Tansu answers 0 to ListOffsets by time: the search found them.
        assert_eq!(p["from_found_by"]["method"], "search", "{p}");
        assert_eq!(p["until_found_by"]["method"], "search", "{p}");
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
    assert_eq!(t.status.code(), Some(0), "{}", output_text(&t));
    assert_eq!(
        translated(&t),
        [(0, 10, Some(34)), (1, 6, Some(30)), (2, 21, Some(45))],
        "{}",
        output_text(&t)
    );
    let flow_t = strait(&["offsets", "translate", "-c", cfg, "--group", GROUP]);
    assert_eq!(flow_t.status.code(), Some(0), "{}", output_text(&flow_t));
    assert_eq!(
        translated(&flow_t),
        [(0, 10, Some(10)), (1, 6, Some(6)), (2, 21, Some(21))],
        "{}",
        output_text(&flow_t)
    );

    // The same replay again is refused and copies nothing.
    let again = strait(&exec[..exec.len() - 1]);
    assert_eq!(again.status.code(), Some(4), "{}", output_text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already copied"),
        "{}",
        output_text(&again)
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
    assert_eq!(rerun.status.code(), Some(0), "{}", output_text(&rerun));
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
    assert_eq!(ghost.status.code(), Some(2), "{}", output_text(&ghost));
    assert!(
        String::from_utf8_lossy(&ghost.stderr).contains("topic ghost does not exist on the source"),
        "{}",
        output_text(&ghost)
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    // No broker is reached: every mistake is found before connecting.
    let cfg = config(dir.path(), "127.0.0.1:1", "127.0.0.1:2");
    let cfg = cfg.to_str().expect("utf-8");
    let from = rfc3339(BASE_MS + 10_000);
    let before = rfc3339(BASE_MS);

    let out = strait(&["replay", "-c", cfg, "--topic", TOPIC, "--from", "yesterday"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an RFC 3339 time"),
        "{}",
        output_text(&out)
    );

    let out = strait(&[
        "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--until", &before,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must be before --until"),
        "{}",
        output_text(&out)
    );

    let out = strait(&["replay", "-c", cfg, "--topic", "payments", "--from", &from]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("topic payments is not replicated by any enabled flow"),
        "{}",
        output_text(&out)
    );

    let out = strait(&[
        "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--flow", "nope",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no enabled flow named nope"),
        "{}",
        output_text(&out)
    );
}

/// A `strait replay --execute` running in the background, killed (SIGKILL) and reaped on
/// drop, also when an assertion fails.
struct Background(std::process::Child);

impl Background {
    fn start(args: &[&str]) -> Background {
        let child = Command::new(env!("CARGO_BIN_EXE_strait"))
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
/// state reader Strait uses).
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

#[test]
fn an_interrupted_replay_resumes_from_its_map_and_copies_each_record_once() {
    const N: i64 = 400;
    let source = strait_testkit::TansuBroker::start().expect("source");
    let (target, proxy) = strait_testkit::TansuBroker::start_behind_proxy(Default::default())
        .expect("target behind a proxy");
    let (src, dst) = (source.bootstrap(), proxy.bootstrap());
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
    let mut cfg = two_cluster_flow(&src, &dst, "5s");
    cfg.push_str(&format!(
        "[flows.topics]\ninclude = [\"{TOPIC}\"]\n{SYNC_OFF}[flows.intervals]\n\
         checkpoint = \"100ms\"\n[metrics]\nenabled = false\n"
    ));
    let cfg_path = dir.path().join("strait.toml");
    std::fs::write(&cfg_path, cfg).expect("config");
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
        "replayed",
        "--execute",
        "--json",
    ];

    // Every answer 50 ms late: the copy takes seconds, and is killed once its
    // saved map shows it part-way.
    proxy.set_delay(
        strait_testkit::Direction::Downstream,
        Duration::from_millis(20),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = strait_mirror::config::load(&cfg_path).expect("config");
    let flow = config.enabled_flows().next().expect("a flow").clone();
    // The state is read from the target directly, not through the slow proxy.
    let client = rt
        .block_on(strait_client::Client::connect(
            strait_client::ClientConfig::new([target.bootstrap()]),
        ))
        .expect("client");
    let mut first = Background::start(&args);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let progress = saved_progress(&rt, &client, &flow);
        if progress
            .iter()
            .any(|(_, next, start, end)| *next as i64 > *start && (*next as i64) < *end)
        {
            break;
        }
        assert!(
            !first.exited(),
            "the replay ended before it was seen part-way: {progress:?}"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no progress saved: {progress:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(first);
    proxy.set_delay(strait_testkit::Direction::Downstream, Duration::ZERO);

    let resumed = strait(&args);
    assert_eq!(resumed.status.code(), Some(0), "{}", output_text(&resumed));
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
    let target = read(&dst, "replayed");
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
    assert_eq!(again.status.code(), Some(0), "{}", output_text(&again));
    let summary: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(
        (summary["decision"].as_str(), summary["run"].as_u64()),
        (Some("start"), Some(2))
    );
    assert_eq!(read(&dst, "replayed").len(), 2 * 300 * PARTITIONS as usize);
}

#[test]
fn aborted_transactions_and_markers_in_the_range_are_left_out() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    // Records 0..10 plain, 10..15 aborted, 15..20 committed, 20..30 plain; record i at
    // BASE_MS + i s.
    let rec = |i: i64| {
        TestRecord::new(format!("k{i}"), format!("v{i}"))
            .with_partition(0)
            .with_timestamp(BASE_MS + i * 1000)
    };
    for (range, transaction) in [
        (0..10, rdkafka::Transaction::None),
        (10..15, rdkafka::Transaction::Abort),
        (15..20, rdkafka::Transaction::Commit),
        (20..30, rdkafka::Transaction::None),
    ] {
        let records: Vec<TestRecord> = range.map(rec).collect();
        let opts = ProduceOptions {
            transaction,
            batch_num_messages: Some(3),
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
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
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let values: Vec<String> = read(&dst, TARGET_TOPIC)
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    let expected: Vec<String> = (5..10)
        .chain(15..20)
        .chain(20..25)
        .map(|i| format!("v{i}"))
        .collect();
    assert_eq!(values, expected, "{}", output_text(&out));
}

#[test]
fn a_replay_into_the_target_topic_of_a_running_flow_leaves_the_flow_replicating() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    produce(&src);
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg_path = config(dir.path(), &src, &dst);
    let cfg = cfg_path.to_str().expect("utf-8");
    let mut flow = common::Strait::start(&cfg_path, &dir.path().join("run.log"));
    let wait = |n: usize, what: &str, flow: &mut common::Strait| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            // The topic may not exist yet: the flow creates it.
            let got = rdkafka::consume(&dst, TARGET_TOPIC, &ConsumeOptions::default())
                .map_or(0, |r| r.len());
            if got >= n {
                return got;
            }
            flow.assert_running();
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: {got} of {n} records on the target\n{}",
                flow.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait((PER_PARTITION * 3) as usize, "the flow's copy", &mut flow);
    let (from, until) = (rfc3339(BASE_MS + 5_500), rfc3339(BASE_MS + 20_500));
    // A replay into the flow's topic waits for the flow's saved state to pass the range
    // (rule 19 of replay::guard): the dry run says so until the next checkpoint.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let dry = strait(&[
            "replay", "-c", cfg, "--topic", TOPIC, "--from", &from, "--until", &until,
        ]);
        if dry.status.success() {
            break;
        }
        assert!(
            output_text(&dry).contains("saved state has not reached the start of the range"),
            "{}",
            output_text(&dry)
        );
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            output_text(&dry)
        );
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
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    // New records while the flow runs, after the replayed ones.
    let more: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| (PER_PARTITION..PER_PARTITION + 5).map(move |i| record(p, i)))
        .collect();
    rdkafka::produce(&src, TOPIC, &more, &ProduceOptions::default()).expect("produce");
    wait(
        ((PER_PARTITION + 15 + 5) * 3) as usize,
        "the flow after the replay",
        &mut flow,
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

#[test]
fn a_transaction_still_open_is_left_out_the_range_ends_at_the_last_stable_offset() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, TOPIC, 1, &[]).expect("topic");
    let rec = |i: i64| {
        TestRecord::new(format!("k{i}"), format!("v{i}"))
            .with_partition(0)
            .with_timestamp(BASE_MS + i * 1000)
    };
    for (range, transaction) in [
        (0..10, rdkafka::Transaction::None),
        (10..15, rdkafka::Transaction::Open),
    ] {
        let records: Vec<TestRecord> = range.map(rec).collect();
        let opts = ProduceOptions {
            transaction,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, TOPIC, &records, &opts).expect("produce");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config(dir.path(), &src, &dst);
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
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["partitions"][0]["source_end"], 10, "{summary}");
    let values: Vec<String> = read(&dst, TARGET_TOPIC)
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    let expected: Vec<String> = (2..10).map(|i| format!("v{i}")).collect();
    assert_eq!(values, expected);
}
