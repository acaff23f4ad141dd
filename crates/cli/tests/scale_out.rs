//! Scale-out (`[flows.scale_out]`, docs/operations.md "Scale-out") of the real `strait`
//! binary between two Tansu brokers: several `strait run` processes share one flow of 24
//! partitions through a group on the target, under a producer writing the whole time.
//!
//! Ownership is read off each member's `/metrics`: a member exports per-partition series
//! (`strait_lag_offsets`) only for the partitions it replicates, and drops them when it
//! releases one. At the end librdkafka reads both sides and `strait_testkit::verify`
//! proves per partition: nothing lost, order kept, duplicates within the bound of the
//! crashes the test caused.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{self, ProduceOptions};
use strait_testkit::verify::{check, read_partitions};
use strait_testkit::{BrokerOptions, TansuBroker, TestRecord};

mod common;
use common::Strait;

const TOPIC: &str = "orders";
const TARGET: &str = "src.orders";
const PARTITIONS: i32 = 24;
const BATCH_RECORDS: u32 = 10;
/// Strait's default in-flight batches per partition.
const MAX_IN_FLIGHT: usize = 5;
const SESSION: Duration = Duration::from_secs(6);

/// One member's process with its metrics port and working directory.
struct Member {
    name: String,
    port: u16,
    strait: Strait,
}

fn free_port() -> u16 {
    strait_testkit::broker::free_port().expect("free port")
}

fn config(dir: &Path, name: &str, source: &str, target: &str, port: u16) -> PathBuf {
    let level = std::env::var("SCALE_TEST_LOG").unwrap_or_else(|_| "info".into());
    let text = format!(
        r#"{}[flows.topics]
include = ["{TOPIC}"]
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
topic_refresh = "2s"
[flows.scale_out]
# Dynamic members: Tansu's static membership is unreliable (docs/compatibility.md).
instance_id = ""
session_timeout = "{}s"
rebalance_timeout = "20s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
[metrics]
listen = "127.0.0.1:{port}"
[logging]
level = "{level}"
"#,
        two_cluster_flow(source, target, "3s"),
        SESSION.as_secs()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write config");
    path
}

fn start(dir: &Path, name: &str, source: &str, target: &str) -> Member {
    let port = free_port();
    let cfg = config(dir, name, source, target, port);
    let strait = Strait::start(&cfg, &dir.join(format!("{name}.log")));
    Member {
        name: name.into(),
        port,
        strait,
    }
}

/// `GET /metrics` of a member (empty while it does not answer).
fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// The partitions a member replicates now, from its per-partition series.
fn owned(port: u16) -> BTreeSet<i32> {
    scrape(port)
        .lines()
        .filter(|l| l.starts_with("strait_lag_offsets{"))
        .filter(|l| l.contains(&format!("topic=\"{TOPIC}\"")))
        .filter_map(|l| {
            let rest = l.split("partition=\"").nth(1)?;
            rest.split('"').next()?.parse().ok()
        })
        .collect()
}

/// Waits until the members' partitions are disjoint and together all 24, each member
/// owning at least one; returns who owns what.
fn settled(members: &mut [&mut Member], within: Duration) -> BTreeMap<String, BTreeSet<i32>> {
    let deadline = Instant::now() + within;
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();
    let mut last = BTreeMap::new();
    let mut stable_since: Option<Instant> = None;
    loop {
        let mut now = BTreeMap::new();
        for m in members.iter_mut() {
            m.strait.assert_running();
            now.insert(m.name.clone(), owned(m.port));
        }
        let union: BTreeSet<i32> = now.values().flatten().copied().collect();
        let total: usize = now.values().map(BTreeSet::len).sum();
        let ok = union == all && total == all.len() && now.values().all(|s| !s.is_empty());
        if ok && now == last {
            // The same answer for 3 s: no hand-over in progress.
            if stable_since.is_some_and(|t| t.elapsed() >= Duration::from_secs(3)) {
                return now;
            }
        } else {
            stable_since = ok.then(Instant::now);
        }
        last = now;
        if Instant::now() > deadline {
            let logs: Vec<String> = members
                .iter()
                .map(|m| format!("--- {}:\n{}", m.name, m.strait.log_tail()))
                .collect();
            panic!(
                "ownership never settled within {within:?}: {last:?}\n{}",
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A background librdkafka producer of numbered records (`"<p>:<seq>"`) to every
/// partition; stopped and joined on drop.
struct Producer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64, String>>>,
}

impl Producer {
    fn start(bootstrap: String) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let opts = ProduceOptions {
                idempotence: true,
                batch_num_messages: Some(BATCH_RECORDS),
                ..ProduceOptions::default()
            };
            let mut next = vec![0u64; PARTITIONS as usize];
            let mut total = 0;
            while !flag.load(Ordering::Acquire) {
                let mut records = Vec::new();
                for p in 0..PARTITIONS {
                    for _ in 0..10 {
                        let seq = &mut next[p as usize];
                        records.push(TestRecord::new("k", format!("{p}:{seq}")).with_partition(p));
                        *seq += 1;
                    }
                }
                let delivered = rdkafka::produce(&bootstrap, TOPIC, &records, &opts)
                    .map_err(|e| e.to_string())?;
                if let Some(d) = delivered.iter().find(|d| d.error.is_some()) {
                    return Err(format!("delivery failed: {d:?}"));
                }
                total += records.len() as u64;
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(total)
        });
        Producer {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(Ok(n))) => n,
            Some(Ok(Err(e))) => panic!("producer: {e}"),
            _ => panic!("producer thread failed"),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Waits until the target holds every source record (as many or more, none lost), then
/// checks per partition: nothing lost, order kept, at most `max_dup` duplicates.
fn verify_all(
    source: &str,
    target: &str,
    produced: u64,
    max_dup: usize,
    members: &mut [&mut Member],
) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let src = read_partitions(
            source,
            TOPIC,
            Some(produced as usize),
            Duration::from_secs(2),
        )
        .expect("read source");
        let dst =
            read_partitions(target, TARGET, None, Duration::from_secs(2)).expect("read target");
        let report = check(&src, &dst);
        let t = report.total();
        assert_eq!(
            t.source as u64, produced,
            "the source holds what was produced"
        );
        if t.lost == 0 {
            let problems = report.problems(max_dup);
            assert!(problems.is_empty(), "{problems:#?}\n{report}");
            return;
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = members
                .iter()
                .map(|m| format!("--- {}:\n{}", m.name, m.strait.log_tail()))
                .collect();
            panic!("not replicated: {report}\n{}", logs.join("\n"));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn three_members_share_a_flow_through_a_crash_a_join_and_a_rolling_restart() {
    let source = TansuBroker::start_with(BrokerOptions::default()).expect("source broker");
    let target = TansuBroker::start_with(BrokerOptions::default()).expect("target broker");
    rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, t) = (source.bootstrap(), target.bootstrap());
    let producer = Producer::start(s.clone());

    // Three members: every partition owned by exactly one.
    let mut a = start(dir.path(), "a", &s, &t);
    let mut b = start(dir.path(), "b", &s, &t);
    let mut c = start(dir.path(), "c", &s, &t);
    let three = settled(&mut [&mut a, &mut b, &mut c], Duration::from_secs(120));
    eprintln!("three members: {three:?}");

    // kill -9 one: its partitions move to the others.
    c.strait.kill9();
    let two = settled(&mut [&mut a, &mut b], Duration::from_secs(90));
    eprintln!("after kill -9 of c: {two:?}");
    for (name, before) in three.iter().filter(|(n, _)| *n != "c") {
        assert!(
            before.is_subset(&two[name]),
            "{name} kept its partitions: {before:?} -> {:?}",
            two[name]
        );
    }

    // A fourth: partitions move to it; the others only give some up.
    let mut d = start(dir.path(), "d", &s, &t);
    let three_again = settled(&mut [&mut a, &mut b, &mut d], Duration::from_secs(120));
    eprintln!("after d joined: {three_again:?}");
    for name in ["a", "b"] {
        assert!(
            three_again[name].is_subset(&two[name]),
            "{name} gained nothing while d joined: {:?} -> {:?}",
            two[name],
            three_again[name]
        );
    }

    // Rolling restart of every member (dynamic members on Tansu: a restarted member's
    // partitions move to the others and some come back; nobody loses what it kept).
    for name in ["a", "b", "d"] {
        let m = match name {
            "a" => &mut a,
            "b" => &mut b,
            _ => &mut d,
        };
        let (status, _) = m.strait.terminate(Duration::from_secs(20));
        assert!(status.is_some_and(|s| s.success()), "{name} stops cleanly");
        *m = start(dir.path(), name, &s, &t);
        let after = settled(&mut [&mut a, &mut b, &mut d], Duration::from_secs(120));
        eprintln!("after restarting {name}: {after:?}");
    }

    let produced = producer.finish();
    // One kill -9: at most what was in flight per partition is repeated.
    verify_all(
        &s,
        &t,
        produced,
        MAX_IN_FLIGHT * BATCH_RECORDS as usize,
        &mut [&mut a, &mut b, &mut d],
    );
    for m in [&mut a, &mut b, &mut d] {
        let (status, _) = m.strait.terminate(Duration::from_secs(20));
        assert!(
            status.is_some_and(|s| s.success()),
            "{} stops cleanly",
            m.name
        );
    }
}

/// Rule 5 of `scale::reconcile` (rejoin once nothing is being released) is carried out
/// when the last release finishes, not at the next topic refresh: with the refresh ten
/// minutes away, a joining member still gets its partitions within a minute (on Tansu:
/// two joins of about half the session timeout each, plus the flushes).
#[test]
fn released_partitions_move_without_waiting_for_a_topic_refresh() {
    let source = TansuBroker::start_with(BrokerOptions::default()).expect("source broker");
    let target = TansuBroker::start_with(BrokerOptions::default()).expect("target broker");
    rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, t) = (source.bootstrap(), target.bootstrap());
    let producer = Producer::start(s.clone());
    let slow_refresh = |name: &str| {
        let port = free_port();
        let path = config(dir.path(), name, &s, &t, port);
        let text = std::fs::read_to_string(&path).expect("config");
        let text = text.replace("topic_refresh = \"2s\"", "topic_refresh = \"10m\"");
        std::fs::write(&path, text).expect("write config");
        let strait = Strait::start(&path, &dir.path().join(format!("{name}.log")));
        Member {
            name: name.into(),
            port,
            strait,
        }
    };
    let mut a = slow_refresh("a");
    let mut b = slow_refresh("b");
    let two = settled(&mut [&mut a, &mut b], Duration::from_secs(120));
    let mut c = slow_refresh("c");
    let three = settled(&mut [&mut a, &mut b, &mut c], Duration::from_secs(60));
    eprintln!("before the join: {two:?}; after: {three:?}");
    for name in ["a", "b"] {
        assert!(
            three[name].is_subset(&two[name]),
            "{name} only gave partitions up: {:?} -> {:?}",
            two[name],
            three[name]
        );
    }
    let produced = producer.finish();
    // Every hand-over was graceful: nothing is repeated.
    verify_all(&s, &t, produced, 0, &mut [&mut a, &mut b, &mut c]);
    for m in [&mut a, &mut b, &mut c] {
        let (status, _) = m.strait.terminate(Duration::from_secs(20));
        assert!(
            status.is_some_and(|s| s.success()),
            "{} stops cleanly",
            m.name
        );
    }
}

/// Per target partition, the producer ids of its batches in offset order, runs of one
/// writer collapsed (`[x, y]`: x wrote, then y; `[x, y, x]`: interleaved).
fn writers(target: &str, partitions: &BTreeSet<i32>) -> BTreeMap<i32, Vec<i64>> {
    use strait_client::{Client, ClientConfig, IsolationLevel};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        // Spared by the proxy, like the data path.
        let client = Client::connect(ClientConfig::new([target]).with_client_id("data-test"))
            .await
            .expect("connect");
        let ps: Vec<i32> = partitions.iter().copied().collect();
        let b = strait_mirror::datapath::probe::bounds(
            &client,
            TARGET,
            &ps,
            IsolationLevel::ReadUncommitted,
        )
        .await
        .expect("bounds");
        let mut out = BTreeMap::new();
        for p in ps {
            let end = b.get(&p).map_or(0, |b| b.end);
            let batches = strait_mirror::datapath::tail::read_tail(
                &client,
                TARGET,
                p,
                0,
                end,
                &strait_records::Limits::default(),
            )
            .await
            .expect("read target batches");
            let mut runs: Vec<i64> = Vec::new();
            for batch in &batches {
                let pid = batch.header().producer_id;
                if runs.last() != Some(&pid) {
                    runs.push(pid);
                }
            }
            out.insert(p, runs);
        }
        out
    })
}

fn member_config(dir: &Path, name: &str, source: &str, target: &str) -> Member {
    let port = free_port();
    let path = config(dir, name, source, target, port);
    let text = std::fs::read_to_string(&path).expect("config");
    // The data path's client id: spared by the proxy (only the group's is not).
    let text = text.replace(
        "[clusters.dst]\n",
        &format!("[clusters.dst]\nclient_id = \"data-{name}\"\n"),
    );
    std::fs::write(&path, text).expect("write config");
    let strait = Strait::start(&path, &dir.join(format!("{name}.log")));
    Member {
        name: name.into(),
        port,
        strait,
    }
}

#[test]
fn a_member_cut_off_from_the_coordinator_stops_writing_before_its_partitions_move() {
    let source = TansuBroker::start_with(BrokerOptions::default()).expect("source broker");
    let (target, proxy) =
        TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
    // Every connection is spared but x's group membership (its coordinator calls and
    // keep-alives): x still reaches the target's data, it just cannot heartbeat.
    proxy.exempt_client_ids(&["strait-testkit-rdkafka", "data-", "strait-group.data-y"]);
    rdkafka::create_topic(&source.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, t) = (source.bootstrap(), target.bootstrap());
    let producer = Producer::start(s.clone());

    let mut x = member_config(dir.path(), "x", &s, &t);
    settled(&mut [&mut x], Duration::from_secs(120));
    let mut y = member_config(dir.path(), "y", &s, &t);
    let both = settled(&mut [&mut x, &mut y], Duration::from_secs(120));
    let xs = both["x"].clone();
    eprintln!("before the stall: {both:?}");

    let stalled = Instant::now();
    proxy.stall();
    // x must give everything up before y gets any of it.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut x_empty_at = None;
    loop {
        x.strait.assert_running();
        y.strait.assert_running();
        let (ox, oy) = (owned(x.port), owned(y.port));
        if ox.is_empty() && x_empty_at.is_none() {
            x_empty_at = Some(stalled.elapsed());
        }
        let shared: Vec<_> = ox.intersection(&oy).collect();
        assert!(shared.is_empty(), "two owners of {shared:?}");
        if oy.len() == PARTITIONS as usize {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "y never took over: x {ox:?}, y {oy:?}\n{}\n{}",
            x.strait.log_tail(),
            y.strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let took_over = stalled.elapsed();
    let x_empty = x_empty_at.expect("x released everything before y owned it all");
    eprintln!("x released everything {x_empty:?} after the stall; y owned all after {took_over:?}");
    // The self-fence: session timeout minus the fence margin (a third of it), plus the
    // time to flush.
    assert!(
        x_empty < SESSION,
        "x stopped writing within the session timeout: {x_empty:?}"
    );
    assert!(
        x.strait.log_text().contains("self-fence"),
        "x says why it stopped:\n{}",
        x.strait.log_tail()
    );
    // On the target, every partition x owned was written by x, then by y: never both.
    let runs = writers(&t, &xs);
    for (p, w) in &runs {
        assert!(w.len() <= 2, "partition {p}: interleaved writers {w:?}");
    }

    proxy.unstall();
    settled(&mut [&mut x, &mut y], Duration::from_secs(120));
    let produced = producer.finish();
    // Every hand-over here was graceful: nothing is repeated.
    verify_all(&s, &t, produced, 0, &mut [&mut x, &mut y]);
    for m in [&mut x, &mut y] {
        let (status, _) = m.strait.terminate(Duration::from_secs(20));
        assert!(
            status.is_some_and(|s| s.success()),
            "{} stops cleanly",
            m.name
        );
    }
}
