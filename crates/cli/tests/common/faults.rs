//! What the fault-suite tests share (docs/evidence.md "Fault suite"): two Tansu brokers
//! each behind a testkit `FaultProxy` they advertise (so every connection `strait run`
//! makes goes through a proxy; librdkafka's connections, by their client id, are spared
//! the faults), a
//! background producer of numbered records, the `strait run` config, a `/metrics` scrape,
//! and the final check: librdkafka reads both sides and `strait_testkit::verify` proves
//! per partition that nothing was lost, order was kept and duplicates stayed in bound.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::{Client, ClientConfig, IsolationLevel};
use strait_mirror::datapath::probe::bounds;
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::Isolation;
use strait_testkit::rdkafka::{self, ProduceOptions};
use strait_testkit::verify::{Report, check, read_to_end, read_to_end_if_exists};
use strait_testkit::{BrokerOptions, FaultProxy, TansuBroker, TestRecord};

use super::Strait;
use super::read::runtime;

/// Partitions of every test topic.
pub const PARTITIONS: i32 = 2;
/// librdkafka `batch.num.messages`: no source batch holds more records.
pub const BATCH_RECORDS: usize = 10;
/// Strait's default `engine.max_in_flight_per_partition`.
pub const MAX_IN_FLIGHT: usize = 5;
/// The documented duplicate bound for one event that can leave requests in flight
/// unanswered (a crash, a cut connection, a stop that gave up): per partition, at most
/// what was in flight, `max_in_flight_per_partition` batches of at most `BATCH_RECORDS`.
pub const PER_EVENT_BOUND: usize = MAX_IN_FLIGHT * BATCH_RECORDS;
/// The `client.id` of the testkit's librdkafka clients.
pub const RDKAFKA_CLIENT_ID: &str = "strait-testkit-rdkafka";
/// `request_timeout` of both clusters in the test configs.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The documented stop bound: 2 × the target's request timeout + 5 s.
pub fn stop_bound() -> Duration {
    REQUEST_TIMEOUT * 2 + Duration::from_secs(5)
}

/// A source and a target broker, each behind a proxy (proxies dropped first).
pub struct Net {
    pub source_proxy: FaultProxy,
    pub target_proxy: FaultProxy,
    pub source: TansuBroker,
    pub target: TansuBroker,
}

impl Net {
    /// Starts both brokers behind their proxies and creates `topics` on the source.
    pub fn start(topics: &[&str]) -> Net {
        let (source, source_proxy) =
            TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("source broker");
        let (target, target_proxy) =
            TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
        // librdkafka (the test's producer and reader) follows the same advertised
        // address as strait: spare its connections, so the source is written and both
        // sides are read whatever the fault.
        for proxy in [&source_proxy, &target_proxy] {
            proxy.exempt_client_id(RDKAFKA_CLIENT_ID);
        }
        for t in topics {
            rdkafka::create_topic(&source.bootstrap(), t, PARTITIONS, &[]).expect("topic");
        }
        Net {
            source_proxy,
            target_proxy,
            source,
            target,
        }
    }

    /// Writes the `strait run` config: the flow through both proxies, data only, `topics`
    /// included, checkpoints every second, metrics on `metrics_port` (`/health` names a
    /// partition restarting or stalled for 10 s); `flow_topics` and
    /// `engine` are appended to `[flows.topics]` and `[engine]`.
    pub fn config(
        &self,
        dir: &Path,
        topics: &[&str],
        flow_topics: &str,
        engine: &str,
        metrics_port: u16,
    ) -> PathBuf {
        let include: Vec<String> = topics.iter().map(|t| format!("{t:?}")).collect();
        let level = std::env::var("FAULTS_TEST_LOG").unwrap_or_else(|_| "info".into());
        let text = format!(
            r#"{}[flows.topics]
include = [{}]
{flow_topics}
{SYNC_OFF}[flows.intervals]
checkpoint = "1s"
topic_refresh = "2s"
[engine]
fetch_max_wait = "50ms"
max_in_flight_per_partition = {MAX_IN_FLIGHT}
{engine}
[metrics]
listen = "127.0.0.1:{metrics_port}"
# A partition restarting (or stalled) this long is named by /health.
stalled_after = "10s"
[logging]
level = "{level}"
"#,
            two_cluster_flow(
                &self.source_proxy.bootstrap(),
                &self.target_proxy.bootstrap(),
                &format!("{}s", REQUEST_TIMEOUT.as_secs())
            ),
            include.join(", ")
        );
        let path = dir.join("strait.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    strait_testkit::broker::free_port().expect("free port")
}

/// A background librdkafka producer of numbered records (`"<topic>/<partition>:<seq>"`)
/// to the source, directly (never through a proxy); stopped and joined on drop.
pub struct Producer {
    stop: Arc<AtomicBool>,
    produced: Arc<AtomicU64>,
    handle: Option<JoinHandle<Result<u64, String>>>,
}

impl Producer {
    /// Starts writing `per_call` records per partition and topic per librdkafka call
    /// (a call takes about half a second), pausing `pause` between calls.
    pub fn start(bootstrap: String, topics: &[&str], per_call: usize, pause: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let produced = Arc::new(AtomicU64::new(0));
        let (flag, count) = (Arc::clone(&stop), Arc::clone(&produced));
        let topics: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        let handle = std::thread::spawn(move || {
            let opts = ProduceOptions {
                idempotence: true,
                batch_num_messages: Some(BATCH_RECORDS as u32),
                ..ProduceOptions::default()
            };
            let mut next: BTreeMap<(String, i32), u64> = BTreeMap::new();
            let mut total = 0;
            while !flag.load(Ordering::Acquire) {
                for t in &topics {
                    let mut records = Vec::new();
                    for p in 0..PARTITIONS {
                        let seq = next.entry((t.clone(), p)).or_default();
                        for _ in 0..per_call {
                            records.push(
                                TestRecord::new("k", format!("{t}/{p}:{seq}")).with_partition(p),
                            );
                            *seq += 1;
                        }
                    }
                    let delivered = rdkafka::produce(&bootstrap, t, &records, &opts)
                        .map_err(|e| e.to_string())?;
                    if let Some(d) = delivered.iter().find(|d| d.error.is_some()) {
                        return Err(format!("delivery failed: {d:?}"));
                    }
                    total += records.len() as u64;
                    count.store(total, Ordering::Release);
                }
                std::thread::sleep(pause);
            }
            Ok(total)
        });
        Producer {
            stop,
            produced,
            handle: Some(handle),
        }
    }

    /// Records produced so far.
    pub fn produced(&self) -> u64 {
        self.produced.load(Ordering::Acquire)
    }

    /// Stops and returns how many records were produced.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        let handle = self.handle.take().expect("running");
        match handle.join() {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => panic!("producer: {e}"),
            Err(_) => panic!("producer thread panicked"),
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

/// Writes `n` numbered records per partition to `topic` on the source (`from` = first
/// sequence number); `value_len` > 0 appends `:` and that many bytes to each value.
pub fn produce_now(bootstrap: &str, topic: &str, from: usize, n: usize, value_len: usize) {
    let pad = "x".repeat(value_len);
    let records: Vec<TestRecord> = (0..PARTITIONS)
        .flat_map(|p| {
            let pad = pad.clone();
            (from..from + n).map(move |s| {
                let value = if pad.is_empty() {
                    format!("{topic}/{p}:{s}")
                } else {
                    format!("{topic}/{p}:{s}:{pad}")
                };
                TestRecord::new("k", value).with_partition(p)
            })
        })
        .collect();
    let opts = ProduceOptions {
        batch_num_messages: Some(BATCH_RECORDS as u32),
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(bootstrap, topic, &records, &opts).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "source writes");
}

/// Records on the target's `src.<topic>` (the sum of its partitions' high watermarks,
/// from Fetch: fast, no librdkafka), for progress checks while the source is being
/// written; 0 while it does not exist.
pub fn target_end(net: &Net, topic: &str) -> i64 {
    let rt = runtime();
    let bootstrap = net.target.bootstrap();
    rt.block_on(async {
        let Ok(client) = Client::connect(ClientConfig::new([bootstrap])).await else {
            return 0;
        };
        let partitions: Vec<i32> = (0..PARTITIONS).collect();
        let target_topic = format!("src.{topic}");
        let read = bounds(
            &client,
            &target_topic,
            &partitions,
            IsolationLevel::ReadUncommitted,
        );
        match tokio::time::timeout(Duration::from_secs(10), read).await {
            Ok(Ok(b)) => b.values().map(|b| b.end).sum(),
            _ => 0,
        }
    })
}

/// Waits (at most `bound`) until the target's end passes `above`, while `strait` runs.
pub fn wait_progress(net: &Net, topic: &str, above: i64, strait: &mut Strait, what: &str) {
    let t = Instant::now();
    while target_end(net, topic) <= above {
        strait.assert_running();
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{what}: the target stayed at {} records for 60 s:\n{}",
            target_end(net, topic),
            strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Reads both sides of `topic` (the source must not be being written) (the target's is `src.<topic>`) and compares them.
pub fn compare(net: &Net, topic: &str) -> Report {
    let source = read_to_end(&net.source.bootstrap(), topic, Isolation::ReadUncommitted)
        .expect("read the source to its end");
    // Uncapped: every record up to each partition's high watermark, so a duplicate or a
    // foreign record anywhere is counted, not cut off at the source's count.
    let target_topic = format!("src.{topic}");
    // Not created yet: nothing replicated, which `lost` reports. Any other failure to read
    // fails the test.
    let target = read_to_end_if_exists(
        &net.target.bootstrap(),
        &target_topic,
        Isolation::ReadUncommitted,
    )
    .unwrap_or_else(|e| panic!("read {target_topic} on the target: {e}"));
    check(&source, &target)
}

/// Waits (at most `bound`) until the target holds every source record of `topic` and
/// nothing more arrives for a moment, while `strait` keeps running; returns the final
/// comparison.
pub fn wait_replicated(net: &Net, topic: &str, strait: &mut Strait, bound: Duration) -> Report {
    let deadline = Instant::now() + bound;
    let mut last: Option<usize> = None;
    loop {
        strait.assert_running();
        let report = compare(net, topic);
        let t = report.total();
        if t.lost == 0 {
            // Stable: the same count twice in a row (late duplicates have landed).
            if last == Some(t.target) {
                return report;
            }
            last = Some(t.target);
            std::thread::sleep(Duration::from_millis(500));
            continue;
        }
        last = None;
        assert!(
            Instant::now() < deadline,
            "{topic}: not replicated within {bound:?}: {report}\n{}",
            strait.log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `GET path` on the metrics endpoint: the body (empty if it does not answer).
pub fn http_get(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The sum of every sample of metric `name` whose labels contain all of `labels`
/// (`key="value"` strings).
pub fn metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            (n == name && labels.iter().all(|want| rest.contains(want)))
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .fold(0.0, |a, b| a + b)
}

/// The value bytes as text.
pub fn text(v: &Bytes) -> String {
    String::from_utf8_lossy(v).into_owned()
}
