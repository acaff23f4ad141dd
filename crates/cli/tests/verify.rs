//! `strait verify` between two Tansu brokers: a copy `strait run --once` made is reported
//! as matching record for record, with its consumer groups proven; every planted fault is
//! reported by name and offset, and the exit code tells a difference (1) from a copy
//! that has not caught up (5).
//!
//! The faults are planted in a topic the test writes on both sides itself, with the offset
//! map a replicator would have saved for that target (a record it never wrote, one it
//! wrote twice, one whose byte changed on the way), and in group offsets committed on the
//! target by hand (one past the translation, one at a record that differs).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;
use strait_client::{Client, ClientConfig};
use strait_mirror::state::{PartitionState, StateWriter};
use strait_offsets::OffsetMap;
use strait_testkit::TansuCluster;
use strait_testkit::TestRecord;
use strait_testkit::config::two_cluster_flow;
use strait_testkit::data::RecordHeader;
use strait_testkit::rdkafka::{self, ProduceOptions};

mod common;

use common::command::{output_text, strait};
use common::read::runtime;

/// Records per partition of `orders`.
const ORDERS: usize = 250;
/// Records of `planted`.
const PLANTED: usize = 100;

fn config(dir: &Path, source: &str, target: &str) -> PathBuf {
    let mut cfg = two_cluster_flow(source, target, "5s");
    cfg.push_str(
        "[flows.topics]\ninclude = [\"orders\", \"planted\"]\n\
         [flows.sync]\nheartbeats = false\ncheckpoints = false\n\
         [metrics]\nenabled = false\n",
    );
    let path = dir.join("strait.toml");
    std::fs::write(&path, cfg).expect("write config");
    path
}

/// Record `i` of partition `p` of `topic`: key, value, a header and a fixed CreateTime.
fn record(topic: &str, p: i32, i: usize) -> TestRecord {
    TestRecord::new(format!("{topic}-k{p}-{i}"), format!("{topic}-v{p}-{i}"))
        .with_partition(p)
        .with_header(RecordHeader::new("n", format!("{i}")))
        .with_timestamp(1_780_000_000_000 + (i as i64) * 10)
}

fn produce(bootstrap: &str, topic: &str, records: &[TestRecord]) {
    let opts = ProduceOptions {
        batch_num_messages: Some(16),
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, topic, records, &opts).expect("produce");
}

/// `strait verify` with `args`: its exit code and its JSON.
fn verify(cfg: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["verify", "-c", cfg.to_str().expect("utf-8"), "--json"];
    all.extend_from_slice(args);
    let out = strait(&all);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify's JSON: {e}\n{}", output_text(&out)));
    (out.status.code(), json)
}

fn partitions(report: &Value) -> Vec<Value> {
    report["flows"][0]["partitions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn groups(report: &Value) -> Vec<Value> {
    report["flows"][0]["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The target topic `src.planted` as a replicator that lost source record 80, wrote
/// record 49 twice and changed a byte of record 37 would have left it, and the offset map
/// it would have saved (it paired what it wrote: the lost record is in a gap of the map's
/// source side, the second copy in a gap of its target side).
fn plant(src: &str, dst: &str, cfg: &Path) {
    rdkafka::create_topic(src, "planted", 1, &[]).expect("source topic");
    rdkafka::create_topic(dst, "src.planted", 1, &[]).expect("target topic");
    let source: Vec<TestRecord> = (0..PLANTED).map(|i| record("planted", 0, i)).collect();
    produce(src, "planted", &source);
    let mut target = Vec::new();
    for (i, r) in source.iter().enumerate() {
        match i {
            37 => {
                let mut changed = r.clone();
                changed.value = Some(Bytes::from("planted-v0-3X"));
                target.push(changed);
            }
            49 => {
                target.push(r.clone());
                target.push(r.clone());
            }
            80 => {}
            _ => target.push(r.clone()),
        }
    }
    produce(dst, "src.planted", &target);
    let mut map = OffsetMap::new();
    map.append_dense(0, 50, 0).expect("run");
    map.append_dense(50, 30, 51).expect("run");
    map.append_dense(81, 19, 81).expect("run");
    map.advance(100, 100).expect("advance");
    let config = strait_mirror::config::load(cfg).expect("config");
    let flow = config.flows[0].clone();
    runtime().block_on(async {
        let s = Client::connect(ClientConfig::new([src]))
            .await
            .expect("source");
        let meta = s
            .metadata(Some(&["planted"]))
            .await
            .expect("source metadata");
        let state = PartitionState {
            topic_id: meta.topics["planted"].id,
            target_topic: "src.planted".into(),
            snapshot: map.snapshot().bytes,
        };
        let d = Client::connect(ClientConfig::new([dst]))
            .await
            .expect("target");
        StateWriter::new(d, &flow)
            .write(&[(("planted".into(), 0), state)])
            .await
            .expect("state written");
    });
}

/// The first `n` summary lines of `strait status --watch 200ms` (stdout a pipe: one report
/// after another); the process is killed after them, and on any failure.
fn watch_status(cfg: &Path, n: usize) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args([
            "status",
            "-c",
            cfg.to_str().expect("utf-8"),
            "--watch",
            "200ms",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .spawn()
        .expect("strait status --watch");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().expect("stdout");
    let _guard = Kill(child);
    BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .filter(|l| l.starts_with("copied "))
        .take(n)
        .collect()
}

#[test]
fn a_copy_strait_made_matches_and_every_planted_fault_is_named_by_offset() {
    let cluster = TansuCluster::start(2).expect("tansu");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path(), &src, &dst);
    rdkafka::create_topic(&src, "orders", 2, &[]).expect("orders");
    for p in 0..2 {
        let records: Vec<TestRecord> = (0..ORDERS).map(|i| record("orders", p, i)).collect();
        produce(&src, "orders", &records);
    }
    rdkafka::commit_group_offsets(&src, "billing", "orders", &[(0, 120), (1, ORDERS as i64)])
        .expect("billing");
    rdkafka::commit_group_offsets(&src, "wrong", "orders", &[(0, 60)]).expect("wrong");
    let out = strait(&["run", "--once", "-c", cfg.to_str().expect("utf-8")]);
    assert!(out.status.success(), "run --once\n{}", output_text(&out));

    // `status --watch` sees the whole copy, refresh after refresh, until it is stopped.
    let watched = watch_status(&cfg, 2);
    assert!(
        watched
            .iter()
            .all(|l| l.starts_with("copied 500 of 500 source records (100%)")),
        "{watched:?}"
    );

    // The copy Strait made, and the group it synced.
    let (code, report) = verify(&cfg, &["--topic", "orders", "--group", "billing"]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["outcome"], "matches");
    let parts = partitions(&report);
    assert_eq!(parts.len(), 2);
    for p in &parts {
        assert_eq!(p["tally"]["matched"], ORDERS as u64, "{p:#}");
        assert_eq!(p["tally"]["source_records"], ORDERS as u64, "{p:#}");
        assert_eq!(p["tally"]["target_records"], ORDERS as u64, "{p:#}");
        assert_eq!(p["source_digest"], p["target_digest"], "{p:#}");
        assert_eq!(p["findings"].as_array().map(Vec::len), Some(0), "{p:#}");
        assert_eq!(p["lag"], 0);
    }
    let g = groups(&report);
    let verdicts: Vec<(i64, &str, Option<u64>)> = g
        .iter()
        .map(|x| {
            (
                x["partition"].as_i64().unwrap_or(-1),
                x["verdict"].as_str().unwrap_or(""),
                x["record"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        vec![(0, "proven", Some(120)), (1, "proven", None)],
        "{report:#}"
    );

    // A sample reads less and still matches.
    let (code, report) = verify(&cfg, &["--topic", "orders", "--sample", "40"]);
    assert_eq!(code, Some(0), "{report:#}");
    for p in partitions(&report) {
        assert_eq!(p["sampled"], true);
        assert_eq!(p["tally"]["matched"], 40, "{p:#}");
    }

    // A group whose target offset is one past the translation: a consumer would skip one.
    rdkafka::commit_group_offsets(&dst, "wrong", "src.orders", &[(0, 61)]).expect("commit");
    let (code, report) = verify(&cfg, &["--topic", "orders", "--group", "wrong"]);
    assert_eq!(code, Some(1), "{report:#}");
    let g = groups(&report);
    assert_eq!(g.len(), 1, "{report:#}");
    assert_eq!(g[0]["verdict"], "ahead");
    assert_eq!(
        (g[0]["expected"].as_u64(), g[0]["committed"].as_i64()),
        (Some(60), Some(61))
    );

    // Planted faults: each named, by offset.
    plant(&src, &dst, &cfg);
    rdkafka::commit_group_offsets(&src, "reads-37", "planted", &[(0, 37)]).expect("commit");
    rdkafka::commit_group_offsets(&dst, "reads-37", "src.planted", &[(0, 37)]).expect("commit");
    let (code, report) = verify(&cfg, &["--topic", "planted", "--group", "reads-37"]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["outcome"], "differs");
    let parts = partitions(&report);
    assert_eq!(parts.len(), 1);
    let findings = &parts[0]["findings"];
    assert_eq!(
        findings,
        &serde_json::json!([
            {"kind": "changed", "source": 37, "target": 37, "fields": ["value"],
             "holds_source": null},
            {"kind": "duplicate", "target": 50, "of_source": 49},
            {"kind": "missing", "source": 80, "target": null},
        ]),
        "{report:#}"
    );
    let tally = &parts[0]["tally"];
    assert_eq!(
        (
            tally["matched"].as_u64(),
            tally["changed"].as_u64(),
            tally["duplicate"].as_u64(),
            tally["missing"].as_u64()
        ),
        (Some(98), Some(1), Some(1), Some(1)),
        "{report:#}"
    );
    assert_ne!(parts[0]["source_digest"], parts[0]["target_digest"]);
    let g = groups(&report);
    assert_eq!(g.len(), 1, "{report:#}");
    assert_eq!(g[0]["verdict"], "content_differs", "{report:#}");
    assert_eq!(
        (
            g[0]["source_record"].as_u64(),
            g[0]["target_record"].as_u64()
        ),
        (Some(37), Some(37))
    );

    // The table names them too.
    let cfg_arg = cfg.to_str().expect("utf-8");
    let out = strait(&["verify", "-c", cfg_arg, "--topic", "planted"]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for line in [
        "changed: source offset 37 -> target offset 37: value differ",
        "duplicate: target offset 50 copies source offset 49 again",
        "missing: source offset 80 was never written to the target",
    ] {
        assert!(text.contains(line), "`{line}` not in\n{text}");
    }

    // Records the copy has not reached yet: nothing differs, but it is not complete.
    let more: Vec<TestRecord> = (ORDERS..ORDERS + 10)
        .map(|i| record("orders", 0, i))
        .collect();
    produce(&src, "orders", &more);
    let (code, report) = verify(&cfg, &["--topic", "orders", "--group", "billing"]);
    assert_eq!(code, Some(5), "{report:#}");
    assert_eq!(report["outcome"], "not_yet_replicated");
    assert_eq!(partitions(&report)[0]["lag"], 10);
}
