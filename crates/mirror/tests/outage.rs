//! A target outage longer than the producer's delivery timeout (issue 12, "A long outage
//! hangs it"): the target's network stalls (connections open, no bytes moving) while the
//! engine replicates a source being written. The produce errors must surface promptly as
//! in-process restarts of the partitions (never a silent hang, never a stopped engine),
//! and once the network is back the same run catches up with nothing lost.
//!
//! The engine runs in-process with small timeouts (`engine.delivery_timeout = "3s"`,
//! request timeouts of 1 s); the target sits behind a [`FaultProxy`] it advertises, so
//! every connection to it goes through the stall. librdkafka writes the source and reads
//! both sides to their ends (`strait_testkit::verify`): per partition nothing lost, nothing
//! foreign, source order kept, and duplicates within the documented bound (one in-flight
//! window, `max_in_flight_per_partition` batches of at most [`BATCH_RECORDS`] records, per
//! event that can leave requests unanswered: docs/operations.md, "Stopping and restarting").

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_mirror::config::{Config, load_str};
use strait_testkit::rdkafka::{self, Isolation, ProduceOptions};
use strait_testkit::verify::{Report, check, read_to_end, read_to_end_if_exists};
use strait_testkit::{BrokerOptions, TansuBroker, TestRecord};

mod common;
use common::Running;

const TOPIC: &str = "outage";
const PARTITIONS: i32 = 2;
/// `engine.delivery_timeout` in the test config.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(3);
/// The stall: well past the delivery timeout and the request timeouts.
const STALL: Duration = Duration::from_secs(10);

/// `OUTAGE_SYNC=1` turns heartbeats and checkpoints on (more writers to the stalled
/// target, as in the issue's setup).
fn sync() -> &'static str {
    if std::env::var_os("OUTAGE_SYNC").is_some() {
        "heartbeats = true\ncheckpoints = true\n[flows.intervals]\ncheckpoint = \"1s\"\nheartbeat = \"1s\"\n"
    } else {
        "heartbeats = false\ncheckpoints = false\n[flows.intervals]\ncheckpoint = \"1s\"\n"
    }
}

/// `OUTAGE_SCALE=N` multiplies the timeouts and the stall (N = 10: about the issue's
/// 120 s delivery timeout and 30 s request timeouts).
fn scale() -> u32 {
    std::env::var("OUTAGE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}
/// librdkafka `batch.num.messages` for the source writes: no source batch, so no forwarded
/// batch, holds more records.
const BATCH_RECORDS: u32 = 10;

/// Source writes in batches of at most [`BATCH_RECORDS`] (`pace`: one record at a time).
fn batched(pace: Option<Duration>) -> ProduceOptions {
    ProduceOptions {
        batch_num_messages: Some(BATCH_RECORDS),
        pace,
        timeout: Duration::from_secs(600),
        ..ProduceOptions::default()
    }
}

/// Generous bound on catching up once the stall ended (correctness, not speed: restarts
/// back off to at most 30 s).
const CATCH_UP_BOUND: Duration = Duration::from_secs(60);

fn config(source: &str, target: &str) -> Config {
    let n = scale();
    let text = format!(
        r#"
[clusters.src]
bootstrap_servers = "{source}"
connect_timeout = "{n}s"
request_timeout = "{n}s"
[clusters.dst]
bootstrap_servers = "{target}"
connect_timeout = "{n}s"
request_timeout = "{n}s"
[[flows]]
source = "src"
target = "dst"
[flows.sync]
group_offsets = false
{}[engine]
fetch_max_wait = "100ms"
delivery_timeout = "{}s"
[metrics]
enabled = false
"#,
        sync(),
        DELIVERY_TIMEOUT.as_secs() * u64::from(n)
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

fn records(from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| {
            TestRecord::new(
                Bytes::from(format!("k{i}")),
                Bytes::from(format!("v{i:06}")),
            )
            .with_partition(i as i32 % PARTITIONS)
        })
        .collect()
}

/// Both sides of `topic` read to their ends (the target's, `target_topic`, may not exist
/// yet: nothing replicated, which the report counts as lost), compared per partition. A
/// failed read fails the test.
fn compare(source: &str, topic: &str, target: &str, target_topic: &str) -> Report {
    let source = read_to_end(source, topic, Isolation::ReadUncommitted)
        .unwrap_or_else(|e| panic!("read {topic} on the source: {e}"));
    let target = read_to_end_if_exists(target, target_topic, Isolation::ReadUncommitted)
        .unwrap_or_else(|e| panic!("read {target_topic} on the target: {e}"));
    check(&source, &target)
}

/// Waits (at most `bound`) until the target holds every source record of `topic`, then
/// until its count stays the same over one more read (late duplicates have landed); returns
/// the last comparison, complete or not.
fn wait_replicated(source: &str, topic: &str, target: &str, bound: Duration) -> Report {
    let deadline = Instant::now() + bound;
    let target_topic = format!("src.{topic}");
    let mut last: Option<usize> = None;
    loop {
        let report = compare(source, topic, target, &target_topic);
        let t = report.total();
        if t.lost == 0 && last == Some(t.target) || Instant::now() > deadline {
            return report;
        }
        last = (t.lost == 0).then_some(t.target);
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_stall_longer_than_the_delivery_timeout_restarts_the_partitions_and_loses_nothing() {
    common::init_logging();
    // OUTAGE_STALL_SECS overrides the (scaled) stall.
    let stall = std::env::var("OUTAGE_STALL_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(STALL * scale(), Duration::from_secs);
    let delivery_timeout = DELIVERY_TIMEOUT * scale();
    let started = Instant::now();
    let source = TansuBroker::start().expect("source broker");
    let (target, proxy) =
        TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
    let (src, dst_direct) = (source.bootstrap(), target.bootstrap());
    rdkafka::create_topic(&src, TOPIC, PARTITIONS, &[]).expect("topic");
    let before = records(0, 100);
    rdkafka::produce(&src, TOPIC, &before, &batched(None)).expect("produce");

    let cfg = config(&src, &proxy.bootstrap());
    // The duplicate bound below counts in the engine's own window.
    let max_in_flight = usize::from(cfg.engine.max_in_flight_per_partition);
    let mut engine = Running::start(cfg);
    let report = wait_replicated(&src, TOPIC, &dst_direct, Duration::from_secs(30));
    assert_eq!(
        report.total().lost,
        0,
        "replicating before the stall: {report}"
    );

    // The source keeps being written through the stall (paced over ~6 s).
    let during = records(100, 300);
    let writer = {
        let src = src.clone();
        std::thread::spawn(move || {
            rdkafka::produce(
                &src,
                TOPIC,
                &during,
                &batched(Some(Duration::from_millis(20) * scale())),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    proxy.stall();
    let stalled_at = Instant::now();
    // The engine survives the stall: it neither stops nor fails.
    let early = engine.wait(stall);
    assert!(
        early.is_none(),
        "the engine stopped during a {stall:?} stall: {early:?}"
    );
    let restarts = engine.sum("strait_partition_restarts_total", &[]);
    let produce_errors = engine.sum("strait_produce_errors_total", &[]);
    eprintln!(
        "during the stall ({:?}): {restarts} partition restart(s), {produce_errors} produce \
         error(s)",
        stalled_at.elapsed()
    );
    assert!(
        restarts >= 1.0,
        "a produce past the delivery timeout ({delivery_timeout:?}) restarts its partition"
    );
    proxy.unstall();
    let delivered = writer.join().expect("writer").expect("source writes");
    assert!(
        delivered.iter().all(|d| d.error.is_none()),
        "every source write delivered"
    );

    // The same run catches up once the network is back.
    let caught_up_from = Instant::now();
    let caught = wait_replicated(&src, TOPIC, &dst_direct, CATCH_UP_BOUND);
    let caught_up = caught_up_from.elapsed();
    assert_eq!(
        caught.total().lost,
        0,
        "caught up within {CATCH_UP_BOUND:?}, in the same run: {caught}"
    );
    // Every restart of a partition (during the stall, and any after it) can leave one
    // window of its requests unanswered that the broker appends after the restart read the
    // target: per partition, the duplicate bound.
    let bounds: BTreeMap<i32, (usize, usize)> = (0..PARTITIONS)
        .map(|p| {
            let label = format!("partition=\"{p}\"");
            let restarts = engine.sum("strait_partition_restarts_total", &[&label]) as usize;
            (
                p,
                (restarts, restarts * max_in_flight * BATCH_RECORDS as usize),
            )
        })
        .collect();
    let stopped = engine.stop(Duration::from_secs(30));
    assert!(
        matches!(stopped, Some(Ok(()))),
        "the engine stops cleanly after the outage: {stopped:?}"
    );
    // Both sides again, after the stop: anything still travelling has landed.
    let report = compare(&src, TOPIC, &dst_direct, &format!("src.{TOPIC}"));
    eprintln!(
        "outage figures: stall {stall:?}, delivery timeout {delivery_timeout:?}, {report}, \
         (restarts, duplicate bound) per partition {bounds:?}, caught up {caught_up:?} \
         after the stall ({:?} wall)",
        started.elapsed()
    );
    assert_eq!(
        report.total().source,
        400,
        "the source holds every record written"
    );
    // Per partition: nothing lost (in the same run), nothing foreign, source order kept...
    let problems = report.problems(usize::MAX);
    assert!(problems.is_empty(), "{problems:#?}\n{report}");
    // ...and at most one in-flight window of duplicates per restart of that partition.
    for (p, c) in &report.partitions {
        let (restarts, bound) = bounds.get(p).copied().unwrap_or_default();
        assert!(
            c.duplicates <= bound,
            "partition {p}: {} duplicates, more than the bound {bound} ({restarts} \
             restart(s)): {report}",
            c.duplicates
        );
    }
}

fn batch(i: usize) -> strait_records::Batch {
    let mut b = strait_records::BatchBuilder::new(strait_records::Compression::None);
    let value = format!("v{i:06}");
    b.push(0, Some(b"k"), Some(value.as_bytes()), &[])
        .expect("record");
    b.build().expect("batch")
}

/// The client layer alone: batches queued while the target is stalled — the first sent
/// and timing out, the later ones waiting behind it for a new epoch, which no response
/// would ever check — all fail within their delivery timeout, and none is written after
/// the stall (a later batch written without the failed one would leave a gap).
#[test]
fn batches_queued_behind_a_stalled_one_fail_at_their_deadline_and_are_never_written() {
    use strait_client::{Client, ClientConfig, IdempotentProducer, ProducerConfig};
    let (target, proxy) =
        TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
    rdkafka::create_topic(&target.bootstrap(), "gap", 1, &[]).expect("topic");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let timeout = Duration::from_secs(2);
    let results = runtime.block_on(async {
        let client = Client::connect(
            ClientConfig::new([proxy.bootstrap()])
                .with_request_timeout(Duration::from_secs(1))
                .with_connect_timeout(Duration::from_secs(1))
                .with_retry_timeout(Duration::from_secs(1)),
        )
        .await
        .expect("connect");
        let cfg = ProducerConfig {
            delivery_timeout: timeout,
            request_timeout: Duration::from_secs(1),
            ..ProducerConfig::default()
        };
        let producer = IdempotentProducer::new(client, cfg)
            .await
            .expect("producer");
        // One acknowledged batch first: the connection and metadata are warm.
        let first = producer.send("gap", 0, batch(0)).await.expect("queued");
        first.wait().await.expect("acknowledged before the stall");
        proxy.stall();
        let mut acks = Vec::new();
        for i in 1..=4 {
            acks.push(producer.send("gap", 0, batch(i)).await.expect("queued"));
        }
        let started = Instant::now();
        let mut out = Vec::new();
        for ack in acks {
            let r = tokio::time::timeout(Duration::from_secs(60), ack.wait())
                .await
                .expect("every ack resolves (no silent wait)");
            out.push((r.map(|_| ()).map_err(|e| e.to_string()), started.elapsed()));
        }
        proxy.unstall();
        // Give anything still travelling the time to land.
        tokio::time::sleep(Duration::from_secs(3)).await;
        drop(producer);
        out
    });
    for (r, at) in &results {
        eprintln!("{at:?}: {r:?}");
        assert!(r.is_err(), "stalled past the delivery timeout: {r:?}");
    }
    let first = results[0].0.as_ref().expect_err("failed");
    assert!(first.contains("delivery timeout"), "{first}");
    let on_target = read_to_end(&target.bootstrap(), "gap", Isolation::ReadUncommitted)
        .expect("read the target to its end");
    let values: Vec<String> = on_target
        .get(&0)
        .into_iter()
        .flatten()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    // What landed is a prefix of what was sent: the batch before the stall and, at most,
    // the stalled requests the broker got once the stall ended — never a later batch
    // without the ones before it.
    let want: Vec<String> = (0..values.len()).map(|i| format!("v{i:06}")).collect();
    assert_eq!(values, want, "a gap-free prefix on the target");
}

#[test]
fn delivery_timeout_is_configurable_and_bounded() {
    let load = |extra: &str| {
        load_str(
            &format!(
                "{}[engine]\n{extra}\n[metrics]\nenabled = false\n",
                strait_testkit::config::two_cluster_flow("a:9092", "b:9092", "3s")
            ),
            "test config",
            &|_| None,
        )
    };
    let default = load("").expect("valid");
    assert_eq!(default.engine.delivery_timeout, Duration::from_secs(120));
    let set = load("delivery_timeout = \"5s\"").expect("valid");
    assert_eq!(set.engine.delivery_timeout, Duration::from_secs(5));
    for bad in ["0s", "500ms", "25h"] {
        let err = load(&format!("delivery_timeout = \"{bad}\""))
            .expect_err("out of range")
            .to_string();
        assert!(err.contains("engine.delivery_timeout"), "{bad}: {err}");
    }
}

/// Two flows from one source share the process's in-flight budget: `healthy` to one
/// target, `stuck` to another behind a fault proxy.
fn two_flow_config(source: &str, good: &str, bad: &str) -> Config {
    let text = format!(
        r#"
[clusters.src]
bootstrap_servers = "{source}"
connect_timeout = "2s"
request_timeout = "2s"
[clusters.good]
bootstrap_servers = "{good}"
connect_timeout = "2s"
request_timeout = "2s"
[clusters.bad]
bootstrap_servers = "{bad}"
connect_timeout = "2s"
request_timeout = "2s"
[[flows]]
name = "healthy"
source = "src"
target = "good"
[flows.topics]
include = ["healthy"]
[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[[flows]]
name = "stuck"
source = "src"
target = "bad"
[flows.topics]
include = ["stuck"]
[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[engine]
fetch_max_wait = "100ms"
in_flight_memory = "2MiB"
fetch_partition_max_bytes = "64KiB"
coalesce_max_bytes = "64KiB"
delivery_timeout = "10m"
[metrics]
enabled = false
"#
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

/// `n` records of about 4 KiB each, values `{prefix}{i:06}` then padding.
fn big_records(prefix: &str, from: usize, n: usize) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| {
            let mut v = format!("{prefix}{i:06}").into_bytes();
            v.resize(4096, b'.');
            TestRecord::new(Bytes::from(format!("k{i}")), Bytes::from(v))
        })
        .collect()
}

/// Batches of 4 records (16 KiB): far smaller than the 2 MiB budget, as real batches
/// (`max.message.bytes`, 1 MiB by default) are far smaller than the default 24 MiB. A
/// partition over its quota may still bring one fetch, and a fetch brings at least one
/// whole batch (KIP-74).
fn small_batches() -> ProduceOptions {
    ProduceOptions {
        batch_num_messages: Some(4),
        ..ProduceOptions::default()
    }
}

/// "No stalls" (issue 12): a target partition that accepts no writes must not soak up the
/// in-flight budget. Here the `stuck` flow's target stalls (connections open, nothing
/// answered) while its source topic receives four times the budget; the `healthy` flow,
/// written after that, must still replicate everything (checked by librdkafka on its
/// target), and once the stall ends the stuck flow catches up too (never starved).
#[test]
fn a_target_that_does_not_acknowledge_holds_only_its_share_and_the_other_flow_keeps_replicating() {
    let source = TansuBroker::start().expect("source broker");
    let good = TansuBroker::start().expect("healthy target");
    let (bad, proxy) = TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target");
    let src = source.bootstrap();
    for t in ["healthy", "stuck"] {
        rdkafka::create_topic(&src, t, 1, &[]).expect("topic");
    }
    let first_h = big_records("h", 0, 10);
    let first_s = big_records("s", 0, 10);
    rdkafka::produce(&src, "healthy", &first_h, &small_batches()).expect("produce");
    rdkafka::produce(&src, "stuck", &first_s, &small_batches()).expect("produce");

    let mut engine = Running::start(two_flow_config(&src, &good.bootstrap(), &proxy.bootstrap()));
    let bound = Duration::from_secs(60);
    let (good_at, bad_at) = (good.bootstrap(), bad.bootstrap());
    for (topic, target) in [("healthy", &good_at), ("stuck", &bad_at)] {
        let report = wait_replicated(&src, topic, target, bound);
        assert_eq!(report.total().lost, 0, "{topic} before the stall: {report}");
    }

    // The stuck flow's target stops answering; its source gets 4× the 2 MiB budget.
    proxy.stall();
    let stuck_more = big_records("s", 10, 2000);
    rdkafka::produce(&src, "stuck", &stuck_more, &small_batches()).expect("produce");
    // Give its fetcher time to take what the budget lets it.
    std::thread::sleep(Duration::from_secs(3));
    let healthy_more = big_records("h", 10, 500);
    rdkafka::produce(&src, "healthy", &healthy_more, &small_batches()).expect("produce");
    let report = wait_replicated(&src, "healthy", &good_at, Duration::from_secs(90));
    assert_eq!(report.total().source, first_h.len() + healthy_more.len());
    // No partition restarts here (the delivery timeout is 10 minutes): a request is only
    // ever retried under its sequence number, which the broker does not append twice, so
    // the bound is no duplicate at all; and nothing lost, nothing foreign, order kept.
    let problems = report.problems(0);
    assert!(
        problems.is_empty(),
        "every healthy record, in order, while the other target stalls: {problems:#?}\n{report}"
    );
    assert!(
        engine.wait(Duration::ZERO).is_none(),
        "the engine is still running"
    );

    // The stall ends: the stuck flow is fetched again and catches up.
    proxy.unstall();
    let report = wait_replicated(&src, "stuck", &bad_at, Duration::from_secs(120));
    assert_eq!(report.total().source, first_s.len() + stuck_more.len());
    assert_eq!(
        engine.sum("strait_partition_restarts_total", &[]),
        0.0,
        "no partition restarted"
    );
    let problems = report.problems(0);
    assert!(
        problems.is_empty(),
        "the stuck flow caught up, in order: {problems:#?}\n{report}"
    );
    let stopped = engine.stop(Duration::from_secs(60)).expect("stops");
    assert!(stopped.is_ok(), "{stopped:?}");
}
