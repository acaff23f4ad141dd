//! `strait bench` end to end on two Tansu brokers: a drain copies what it loaded and its
//! verification says so; a verify run catches a target that differs from its source (exit
//! 1, the partition named); a live run reports every record received once.

mod common;

use common::command::{strait, text};
use serde_json::Value;
use strait_testkit::{TestRecord, rdkafka};

fn bench(src: &str, dst: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["bench", "--source", src, "--target", dst, "--json"];
    all.extend_from_slice(args);
    strait(&all)
}

fn report(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON report ({e}): {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

#[test]
fn a_drain_is_verified_and_a_target_that_differs_fails_verification() {
    let cluster = strait_testkit::TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let topic = ["--partitions", "2", "--topic", "bench-drain"];

    let out = bench(
        &src,
        &dst,
        &[&["--mode", "drain", "--total", "2MiB"][..], &topic].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["ok"], true, "{r}");
    let v = &r["verification"];
    assert_eq!(v["ok"], true, "{v}");
    let loaded = r["load"]["records"].as_u64().expect("records loaded");
    assert!(loaded > 0, "{r}");
    let sum = |side: &str| -> u64 {
        v["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|p| p[side].as_u64().expect("count"))
            .sum()
    };
    assert_eq!(sum("source_records"), loaded, "{v}");
    assert_eq!(sum("target_records"), loaded, "{v}");

    // One record more on the target than on the source: verification must fail.
    let target_topic = r["target_topic"].as_str().expect("target topic").to_owned();
    rdkafka::produce(
        &dst,
        &target_topic,
        &[TestRecord::new("k", "not from the source").with_partition(1)],
        &Default::default(),
    )
    .expect("produce");
    let out = bench(&src, &dst, &[&["--mode", "verify"][..], &topic].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r = report(&out);
    assert_eq!(r["ok"], false, "{r}");
    let partitions = r["verification"]["partitions"]
        .as_array()
        .expect("partitions");
    let bad: Vec<i64> = partitions
        .iter()
        .filter(|p| p["ok"] == false)
        .map(|p| p["partition"].as_i64().expect("partition"))
        .collect();
    assert_eq!(bad, [1], "{r}");
}

#[test]
fn a_live_run_receives_every_record_once() {
    let cluster = strait_testkit::TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    let out = bench(
        &src,
        &dst,
        &[
            "--mode",
            "live",
            "--rate",
            "1",
            "--duration",
            "3s",
            "--partitions",
            "2",
            "--topic",
            "bench-live",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(&out);
    let live = &r["live"];
    let produced = live["produced"].as_u64().expect("produced");
    assert!(produced > 0, "{r}");
    assert_eq!(live["received"].as_u64(), Some(produced), "{r}");
    assert_eq!(live["missing"].as_u64(), Some(0), "{r}");
    assert_eq!(live["duplicates"].as_u64(), Some(0), "{r}");
    assert_eq!(r["ok"], true, "{r}");
}
