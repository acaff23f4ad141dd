//! End-to-end replication on two Tansu brokers (source and target) with the engine
//! in-process, checked by librdkafka reading both sides.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_mirror::Engine;
use strait_mirror::config::{Config, load_str};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::rdkafka::{
    self, Codec, ConsumeOptions, ConsumedRecord, ProduceOptions, Transaction,
};
use strait_testkit::{
    BrokerOptions, DataGen, Direction, FaultProxy, RecordSpec, TansuBroker, TansuCluster,
    TestRecord,
};

fn config(source: &str, target: &str, extra: &str) -> Config {
    let text = format!(
        r#"{}[flows.topics]
include = ["fid.*", "txn.*"]
{SYNC_OFF}[engine]
fetch_max_wait = "100ms"
{extra}
"#,
        two_cluster_flow(source, target, "3s")
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

/// Produces `records` with an idempotent librdkafka producer.
fn produce_idempotent(bootstrap: &str, topic: &str, records: &[TestRecord], codec: Codec) {
    let opts = ProduceOptions {
        codec,
        idempotence: true,
        ..ProduceOptions::default()
    };
    rdkafka::produce(bootstrap, topic, records, &opts).expect("produce");
}

/// Records per partition, in order, as (key, value, headers, timestamp).
fn by_partition(records: &[ConsumedRecord]) -> BTreeMap<i32, Vec<TestRecord>> {
    let mut m: BTreeMap<i32, Vec<(i64, TestRecord)>> = BTreeMap::new();
    for r in records {
        m.entry(r.partition)
            .or_default()
            .push((r.offset, r.to_test_record()));
    }
    m.into_iter()
        .map(|(p, mut v)| {
            v.sort_by_key(|(o, _)| *o);
            (p, v.into_iter().map(|(_, r)| r).collect())
        })
        .collect()
}

#[test]
fn librdkafka_data_of_every_codec_is_replicated_identically() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "fid", 6, &[("max.message.bytes", "2097152")]).expect("topic");
    let mut data = DataGen::new(7);
    let mut produced = 0;
    for (i, codec) in Codec::ALL.into_iter().enumerate() {
        let mut records = Vec::new();
        for p in 0..6 {
            records.extend(data.edge_cases(p));
            let spec = RecordSpec {
                partition: Some(p),
                compressible: i % 2 == 0,
                headers: 2,
                timestamp_base: Some(1_700_000_000_000 + i as i64 * 10_000),
                ..RecordSpec::default()
            };
            records.extend(data.records(300, &spec));
            records.push(
                TestRecord::new(Bytes::from_static(b"one-byte"), Bytes::from_static(b"x"))
                    .with_partition(p),
            );
        }
        // One record near 1 MB per codec, on a rotating partition (librdkafka's own
        // message.max.bytes of 1,000,000 refuses a whole MiB).
        records.push(
            TestRecord::new(Bytes::from_static(b"big"), data.bytes(999_000))
                .with_partition(i as i32 % 6),
        );
        produced += records.len();
        produce_idempotent(&src, "fid", &records, codec);
    }

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::new(config(&src, &dst, ""));
    let summary = runtime.block_on(engine.run_once()).expect("run --once");
    println!("{summary}");
    assert_eq!(summary.records(), produced as u64, "{summary}");
    assert_eq!(summary.partitions(), 6);

    let source = rdkafka::consume(&src, "fid", &ConsumeOptions::count(produced)).unwrap();
    let target = rdkafka::consume(&dst, "src.fid", &ConsumeOptions::count(produced)).unwrap();
    assert_eq!(source.len(), produced);
    let (s, t) = (by_partition(&source), by_partition(&target));
    assert_eq!(s.len(), 6);
    for (p, records) in &s {
        let copied = t.get(p).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(copied.len(), records.len(), "partition {p}");
        for (i, (a, b)) in records.iter().zip(copied).enumerate() {
            assert_eq!(a, b, "partition {p}, record {i}");
        }
    }
    // Forwarded batches keep their codec, so nothing was re-encoded: the fast path.
    let text = engine.metrics().render();
    assert!(!text.contains("strait_slow_path_batches_total{"), "{text}");

    // A second --once finds nothing new (state was saved and reloaded).
    let engine = Engine::new(config(&src, &dst, ""));
    let again = runtime.block_on(engine.run_once()).expect("second run");
    assert_eq!(again.records(), 0, "{again}");
}

/// The counter value of the first metric line containing every one of `parts`.
fn metric(text: &str, parts: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Tansu answers read_committed fetches with an empty aborted list and returns the records
/// of aborted transactions (they are stored, followed by an ABORT marker), so what a
/// librdkafka read_committed consumer sees on Tansu is NOT the truth: the truth is what
/// the producer committed. Strait must hold transactional data until its marker.
#[test]
fn committed_transactions_are_replicated_aborted_and_markers_are_not() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "txn", 1, &[]).expect("topic");
    let mut data = DataGen::new(3);
    let spec = RecordSpec::default();
    let plain1 = data.records(5, &spec);
    let first = data.records(20, &spec);
    let plain2 = data.records(4, &spec);
    let aborted = data.records(15, &spec);
    let plain3 = data.records(3, &spec);
    let second = data.records(10, &spec);
    let plain4 = data.records(2, &spec);
    for (records, transaction) in [
        (&plain1, Transaction::None),
        (&first, Transaction::Commit),
        (&plain2, Transaction::None),
        (&aborted, Transaction::Abort),
        (&plain3, Transaction::None),
        (&second, Transaction::Commit),
        (&plain4, Transaction::None),
    ] {
        let opts = ProduceOptions {
            transaction,
            // The aborted records reach the broker before the ABORT marker.
            flush_before_end: true,
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, "txn", records, &opts).expect("produce");
    }
    let read_all = ConsumeOptions {
        isolation: rdkafka::Isolation::ReadUncommitted,
        ..ConsumeOptions::until_idle(Duration::from_secs(2))
    };
    let source_all = rdkafka::consume(&src, "txn", &read_all).unwrap();
    let stored_aborted = aborted
        .iter()
        .filter(|r| source_all.iter().any(|s| s.value == r.value))
        .count();
    assert_eq!(
        stored_aborted,
        aborted.len(),
        "the source stores the aborted records (else this test proves nothing)"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::new(config(&src, &dst, ""));
    let summary = runtime.block_on(engine.run_once()).expect("run --once");
    let expected: Vec<Option<Bytes>> = [&plain1, &first, &plain2, &plain3, &second, &plain4]
        .into_iter()
        .flatten()
        .map(|r| r.value.clone())
        .collect();
    assert_eq!(summary.records(), expected.len() as u64, "{summary}");
    let target = rdkafka::consume(&dst, "src.txn", &read_all).unwrap();
    let values: Vec<Option<Bytes>> = target.iter().map(|r| r.value.clone()).collect();
    assert_eq!(
        values, expected,
        "exactly the committed and non-transactional records, in source order"
    );
    // Dense target offsets: no transaction marker was copied.
    assert_eq!(
        target.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..target.len() as i64).collect::<Vec<_>>()
    );
    let text = engine.metrics().render();
    let dropped_aborted = metric(
        &text,
        &[
            "strait_dropped_batches_total",
            "topic=\"txn\"",
            "kind=\"aborted\"",
        ],
    )
    .unwrap_or(0.0);
    assert!(
        dropped_aborted >= 1.0,
        "aborted batches are counted: {text}"
    );
    let dropped_control = metric(
        &text,
        &[
            "strait_dropped_batches_total",
            "topic=\"txn\"",
            "kind=\"control\"",
        ],
    )
    .unwrap_or(0.0);
    assert!(
        dropped_control >= 3.0,
        "three markers are counted as dropped: {text}"
    );
    println!(
        "source holds {} records ({stored_aborted} aborted); target {}; dropped batches: \
         {dropped_aborted} aborted, {dropped_control} control",
        source_all.len(),
        target.len()
    );
}

#[test]
fn unreachable_cluster_fails_fast_with_its_name_and_address() {
    let cluster = TansuCluster::start(1).expect("broker");
    let dead = format!("127.0.0.1:{}", strait_testkit::broker::free_port().unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::new(config(&cluster.broker(0).bootstrap(), &dead, ""));
    let started = Instant::now();
    let err = runtime.block_on(engine.run_once()).unwrap_err();
    let msg = err.to_string();
    assert!(started.elapsed() < Duration::from_secs(15), "{msg}");
    assert!(msg.contains("cluster dst") && msg.contains(&dead), "{msg}");
}

/// A backlog many times `engine.in_flight_memory`: fetches ask for no more than the budget
/// has room for, batches larger than a fetch's share still arrive whole (KIP-74), and
/// nothing is lost or stuck.
#[test]
fn a_backlog_far_larger_than_the_in_flight_budget_is_replicated_whole() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "fid.budget", 3, &[]).expect("topic");
    let mut data = DataGen::new(11);
    let mut produced = 0;
    for (i, codec) in [Codec::None, Codec::Lz4].into_iter().enumerate() {
        let mut records = Vec::new();
        for p in 0..3 {
            let spec = RecordSpec {
                partition: Some(p),
                compressible: i == 1,
                headers: 1,
                ..RecordSpec::default()
            };
            records.extend(data.records(1_500, &spec));
            // Larger than a fetch's share of the budget below.
            records.push(
                TestRecord::new(Bytes::from_static(b"big"), data.bytes(300_000)).with_partition(p),
            );
        }
        produced += records.len();
        produce_idempotent(&src, "fid.budget", &records, codec);
    }

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tight = "in_flight_memory = \"512KiB\"\nfetch_partition_max_bytes = \"128KiB\"\n";
    let engine = Engine::new(config(&src, &dst, tight));
    let summary = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(120), engine.run_once()).await })
        .expect("run --once finished (no budget deadlock)")
        .expect("run --once");
    assert_eq!(summary.records(), produced as u64, "{summary}");

    let source = rdkafka::consume(&src, "fid.budget", &ConsumeOptions::count(produced)).unwrap();
    let target =
        rdkafka::consume(&dst, "src.fid.budget", &ConsumeOptions::count(produced)).unwrap();
    let (s, t) = (by_partition(&source), by_partition(&target));
    assert_eq!(s.values().map(Vec::len).sum::<usize>(), produced);
    assert_eq!(
        s, t,
        "the target holds exactly the source's records, in order"
    );
}

/// The brokers of [`two_held_flows`]: the source behind a proxy that delays each answer.
struct HeldBrokers {
    _source: TansuBroker,
    _proxy: FaultProxy,
    target: TansuBroker,
}

/// Two flows (two fetchers, sharing one budget), each with a committed transaction of
/// ~0.9 MiB in topic `held.<flow>`: each partition holds less than the 1 MiB a partition
/// may hold before its COMMIT marker comes (Tansu: markers decide), but together more
/// than the 1 MiB every partition together may hold. The source answers through a proxy
/// that delays each answer by 40 ms once the data is written, so that reading either
/// transaction (about 15 fetches) takes long enough for the two flows to hold theirs at
/// the same time, whatever the scheduling.
fn two_held_flows() -> (HeldBrokers, Config, Vec<TestRecord>, Vec<TestRecord>) {
    let (source, proxy) =
        TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("source");
    let target = TansuBroker::start().expect("target");
    let (src, dst) = (proxy.bootstrap(), target.bootstrap());
    let mut data = DataGen::new(5);
    let mut produced = Vec::new();
    for topic in ["held.a", "held.b"] {
        rdkafka::create_topic(&src, topic, 1, &[]).expect("topic");
        let spec = RecordSpec {
            partition: Some(0),
            value_len: Some(4096),
            ..RecordSpec::default()
        };
        let opts = ProduceOptions {
            transaction: Transaction::Commit,
            batch_num_messages: Some(4),
            ..ProduceOptions::default()
        };
        let records = data.records(225, &spec);
        rdkafka::produce(&src, topic, &records, &opts).expect("produce");
        produced.push(records);
    }
    let flow = |name: &str| {
        format!(
            "[[flows]]\nname = \"{name}\"\nsource = \"src\"\ntarget = \"dst\"\n\
             [flows.topics]\ninclude = [\"held.{name}\"]\n{SYNC_OFF}"
        )
    };
    let text = format!(
        r#"
[clusters.src]
bootstrap_servers = "{src}"
request_timeout = "3s"
[clusters.dst]
bootstrap_servers = "{dst}"
request_timeout = "3s"
{}{}[engine]
fetch_max_wait = "100ms"
in_flight_memory = "2MiB"
fetch_max_bytes = "64KiB"
fetch_partition_max_bytes = "64KiB"
"#,
        flow("a"),
        flow("b")
    );
    let config = load_str(&text, "test config", &|_| None).expect("valid config");
    let b = produced.pop().unwrap_or_default();
    let a = produced.pop().unwrap_or_default();
    proxy.set_delay(Direction::Downstream, Duration::from_millis(40));
    let brokers = HeldBrokers {
        _source: source,
        _proxy: proxy,
        target,
    };
    (brokers, config, a, b)
}

/// `consume`, once the target topic exists (the engine creates it at its first refresh).
fn consume_when_created(
    bootstrap: &str,
    topic: &str,
    options: &ConsumeOptions,
) -> Vec<ConsumedRecord> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match rdkafka::consume(bootstrap, topic, options) {
            Ok(got) => return got,
            Err(e) if e.to_string().contains("no metadata") && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("consume {topic}: {e}"),
        }
    }
}

/// Held bytes count against one limit for the whole process, not only per partition.
/// Under `--once` (which does not read ahead past the end seen at start, so cannot spill)
/// the partition holding the most fails with a clear error naming its transaction,
/// rather than the budget running out with no error.
#[test]
fn transactions_held_over_half_the_budget_together_fail_with_a_clear_error_under_once() {
    let (_cluster, config, _, _) = two_held_flows();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::new(config);
    let err = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(120), engine.run_once()).await })
        .expect("no stall: finished")
        .expect_err("over the held limit");
    let text = err.to_string();
    assert!(text.contains("held."), "names the partition: {text}");
    assert!(text.contains("the most of any partition"), "{text}");
    assert!(
        text.contains("producer id"),
        "names the transaction: {text}"
    );
    assert!(text.contains("open since source offset 0"), "{text}");
    assert!(
        text.contains("engine.in_flight_memory"),
        "says what to change: {text}"
    );
}

/// The same held bytes with the engine running: the partition holding the most spills
/// (also when the other partition is the one that finds the limit exceeded) and re-reads
/// its transaction once decided; both transactions reach the targets whole.
#[test]
fn transactions_held_over_half_the_budget_together_are_replicated_by_spilling() {
    let (brokers, config, a, b) = two_held_flows();
    let dst = brokers.target.bootstrap();
    let engine = Engine::new(config);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = runtime.spawn(async move {
        engine
            .run(async {
                let _ = stop_rx.await;
            })
            .await
    });
    for (topic, want) in [("src.held.a", &a), ("src.held.b", &b)] {
        let got = consume_when_created(
            &dst,
            topic,
            &ConsumeOptions {
                idle: Duration::from_secs(20),
                max_time: Duration::from_secs(90),
                ..ConsumeOptions::count(want.len())
            },
        );
        let got: Vec<TestRecord> = got.iter().map(|r| r.to_test_record()).collect();
        assert!(
            &got == want,
            "{topic}: {} of {} records, in order",
            got.len(),
            want.len()
        );
    }
    assert!(!running.is_finished(), "no flow failed");
    let _ = stop_tx.send(());
    let stopped = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), running).await })
        .expect("stops")
        .expect("task");
    assert!(stopped.is_ok(), "{stopped:?}");
}

/// A committed transaction larger than half the budget in one partition (more than it may
/// hold before its marker, Tansu: markers decide) no longer fails the partition on every
/// restart: its held batches are dropped, the partition reads ahead for the marker and
/// re-reads them decided. An aborted one as large is dropped the same way, never
/// forwarded. librdkafka checks the target holds exactly the committed records, in order.
#[test]
fn a_transaction_larger_than_half_the_budget_is_replicated_by_reading_it_again() {
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "txn.big", 1, &[]).expect("topic");
    let mut data = DataGen::new(9);
    let big = RecordSpec {
        partition: Some(0),
        value_len: Some(4096),
        ..RecordSpec::default()
    };
    let small = RecordSpec {
        partition: Some(0),
        ..RecordSpec::default()
    };
    let mut want = Vec::new();
    for (records, transaction) in [
        (data.records(10, &small), Transaction::None),
        // ~1.5 MiB: more than the 1 MiB a partition may hold of the 2 MiB budget.
        (data.records(380, &big), Transaction::Commit),
        (data.records(10, &small), Transaction::None),
        (data.records(380, &big), Transaction::Abort),
        (data.records(10, &small), Transaction::None),
    ] {
        let opts = ProduceOptions {
            transaction,
            flush_before_end: true,
            batch_num_messages: Some(4),
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, "txn.big", &records, &opts).expect("produce");
        if transaction != Transaction::Abort {
            want.extend(records);
        }
    }
    let tight = "in_flight_memory = \"2MiB\"\nfetch_max_bytes = \"64KiB\"\nfetch_partition_max_bytes = \"64KiB\"\n";
    let engine = Engine::new(config(&src, &dst, tight));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = runtime.spawn(async move {
        engine
            .run(async {
                let _ = stop_rx.await;
            })
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut got = Vec::new();
    while Instant::now() < deadline && got.len() < want.len() && !running.is_finished() {
        got = rdkafka::consume(
            &dst,
            "src.txn.big",
            &ConsumeOptions {
                idle: Duration::from_secs(2),
                max_time: Duration::from_secs(20),
                ..ConsumeOptions::count(want.len())
            },
        )
        .unwrap_or_default();
    }
    assert!(!running.is_finished(), "the flow did not fail");
    let _ = stop_tx.send(());
    let stopped = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), running).await })
        .expect("stops")
        .expect("task");
    assert!(stopped.is_ok(), "{stopped:?}");
    let got: Vec<TestRecord> = got.iter().map(|r| r.to_test_record()).collect();
    assert_eq!(
        got.len(),
        want.len(),
        "every committed record, no aborted one"
    );
    assert!(got == want, "the committed records in order, byte for byte");
}
