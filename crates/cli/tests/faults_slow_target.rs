//! The fault suite, kernel-made faults (issue 12 item 6). A slow target: the target Tansu runs in a network
//! namespace whose veth link from the host is shaped to 1 MiB/s (`tc qdisc ... tbf rate
//! 8mbit burst 32kbit latency 400ms`; the kernel here has no `netem`), the source on the
//! host's loopback holds 16 MiB. `strait run` must replicate it all (librdkafka checks both
//! sides) while its memory stays bounded: peak RSS, sampled from /proc, at most
//! `engine.in_flight_memory` + 40 MiB (docs/operations.md "Sizing").
//!
//! The same namespace also makes a network partition: the target's link down for 10 s
//! (`ip link set ... down`), no RST or FIN, while the source is written.
//!
//! Needs root and iproute2; without them the test fails saying so (never a silent pass).
//! The namespace and both veth ends are deleted when the test ends, also on failure.

use std::time::{Duration, Instant};

use strait_testkit::netns::{Side, Tbf};
use strait_testkit::rdkafka;
use strait_testkit::rdkafka::Isolation;
use strait_testkit::verify::{check, read_to_end, read_to_end_if_exists};
use strait_testkit::{BrokerOptions, NetNs, TansuBroker};

mod common;
use common::Strait;
use common::faults::*;

const TOPIC: &str = "slow";
/// Records per partition, of ~1 KiB each: 16 MiB in all.
const PER_PARTITION: usize = 8 * 1024;
const IN_FLIGHT_MIB: u64 = 8;
/// docs/operations.md: plan for `in_flight_memory` + ~40 MiB.
const RSS_BOUND_MIB: u64 = IN_FLIGHT_MIB + 40;

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[test]
fn a_1_mib_per_s_target_gets_everything_and_memory_stays_bounded() {
    let started = Instant::now();
    let ns = NetNs::create().unwrap_or_else(|e| panic!("the slow-target test cannot run: {e}"));
    // Dropped before the namespace.
    let target = TansuBroker::start_with(BrokerOptions {
        netns: Some(ns.place()),
        ..BrokerOptions::default()
    })
    .expect("target broker in the namespace");
    let source = TansuBroker::start().expect("source broker");
    rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    for chunk in 0..8 {
        let n = PER_PARTITION / 8;
        produce_now(&source.bootstrap(), TOPIC, chunk * n, n, 1000);
    }
    let produced = Instant::now();
    ns.limit_rate(Side::Host, &Tbf::one_mib_per_second())
        .expect("tbf on the host end");

    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("strait.toml");
    std::fs::write(
        &config,
        format!(
            r#"{}[flows.topics]
include = ["{TOPIC}"]
{}[flows.intervals]
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
in_flight_memory = "{IN_FLIGHT_MIB}MiB"
[metrics]
enabled = false
"#,
            strait_testkit::config::two_cluster_flow(
                &source.bootstrap(),
                &target.bootstrap(),
                "10s"
            ),
            strait_testkit::config::SYNC_OFF,
        ),
    )
    .expect("config");
    let mut strait = Strait::start(&config, &dir.path().join("strait.log"));
    let pid = strait.pid();
    let want = PER_PARTITION * PARTITIONS as usize;
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(150);
    let mut last_check = Instant::now();
    let report = loop {
        strait.assert_running();
        peak = peak.max(rss_kib(pid).unwrap_or(0));
        if last_check.elapsed() > Duration::from_secs(5) {
            last_check = Instant::now();
            let target_topic = format!("src.{TOPIC}");
            let t = read_to_end_if_exists(
                &target.bootstrap(),
                &target_topic,
                Isolation::ReadUncommitted,
            )
            .unwrap_or_else(|e| panic!("read {target_topic} on the target: {e}"));
            if t.values().map(Vec::len).sum::<usize>() >= want {
                let s = read_to_end(&source.bootstrap(), TOPIC, Isolation::ReadUncommitted)
                    .expect("source");
                break check(&s, &t);
            }
        }
        assert!(
            Instant::now() < deadline,
            "not replicated within 150 s at 1 MiB/s:\n{}",
            strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = produced.elapsed();
    let (status, _) = strait.terminate(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "clean stop");
    let peak_mib = peak as f64 / 1024.0;
    println!(
        "fault suite: slow target (1 MiB/s tbf): {report}; drained 16 MiB in {took:?}; peak \
         RSS {peak_mib:.1} MiB (bound {RSS_BOUND_MIB} MiB, in_flight_memory {IN_FLIGHT_MIB} \
         MiB) ({:?} wall)",
        started.elapsed()
    );
    assert!(report.problems(0).is_empty(), "{report}");
    // 16 MiB through 1 MiB/s (tbf's burst is 4 KiB) cannot take less than about 16 s;
    // faster means the link was not throttled, and the memory bound below proves nothing.
    assert!(
        took >= Duration::from_secs(14),
        "drained 16 MiB in {took:?}: faster than 1 MiB/s allows"
    );
    assert!(
        peak <= RSS_BOUND_MIB * 1024,
        "peak RSS {peak_mib:.1} MiB > {RSS_BOUND_MIB} MiB"
    );
    drop(target);
    drop(ns);
}

/// The target's link down for 10 s (`ip link set ... down`: packets dropped, no RST, no
/// FIN — a network partition as the kernel makes it) while the source is written; then
/// up. Strait keeps running and the target gets everything.
#[test]
fn the_target_link_down_for_10s_loses_nothing() {
    let started = Instant::now();
    let ns = NetNs::create().unwrap_or_else(|e| panic!("the link-down test cannot run: {e}"));
    let target = TansuBroker::start_with(BrokerOptions {
        netns: Some(ns.place()),
        ..BrokerOptions::default()
    })
    .expect("target broker in the namespace");
    let source = TansuBroker::start().expect("source broker");
    rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("strait.toml");
    std::fs::write(
        &config,
        format!(
            r#"{}[flows.topics]
include = ["{TOPIC}"]
{}[flows.intervals]
checkpoint = "1s"
[engine]
fetch_max_wait = "50ms"
[metrics]
enabled = false
"#,
            strait_testkit::config::two_cluster_flow(
                &source.bootstrap(),
                &target.bootstrap(),
                "2s"
            ),
            strait_testkit::config::SYNC_OFF,
        ),
    )
    .expect("config");
    let producer = Producer::start(source.bootstrap(), &[TOPIC], 25, Duration::from_millis(100));
    let mut strait = Strait::start(&config, &dir.path().join("strait.log"));
    std::thread::sleep(Duration::from_secs(3));
    strait.assert_running();
    ns.set_link(false).expect("link down");
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(10) {
        strait.assert_running();
        std::thread::sleep(Duration::from_millis(200));
    }
    ns.set_link(true).expect("link up");
    std::thread::sleep(Duration::from_secs(2));
    let produced = producer.finish();
    let target_topic = format!("src.{TOPIC}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let report = loop {
        strait.assert_running();
        let s =
            read_to_end(&source.bootstrap(), TOPIC, Isolation::ReadUncommitted).expect("source");
        let t = read_to_end_if_exists(
            &target.bootstrap(),
            &target_topic,
            Isolation::ReadUncommitted,
        )
        .unwrap_or_else(|e| panic!("read {target_topic} on the target: {e}"));
        let report = check(&s, &t);
        if report.total().lost == 0 || Instant::now() > deadline {
            break report;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let (status, _) = strait.terminate(Duration::from_secs(30));
    println!(
        "fault suite: target link down 10 s: {produced} produced; {report}; stop {status:?} \
         ({:?} wall)",
        started.elapsed()
    );
    assert!(status.is_some_and(|s| s.success()), "clean stop");
    assert!(report.problems(PER_EVENT_BOUND).is_empty(), "{report}");
    drop(target);
    drop(ns);
}
