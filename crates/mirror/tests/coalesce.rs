//! Coalescing on a high-latency link: the target behind a fault proxy adding 25 ms each
//! way, many small source batches on several partitions. The engine must merge queued
//! batches (fewer, larger batches on the target), copy every record exactly, and keep the
//! offset maps exact.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::{
    Client, ClientConfig, FetchOptions, FetchPosition, IdempotentProducer, ProducerConfig,
};
use strait_mirror::Engine;
use strait_mirror::config::{Config, load_str};
use strait_offsets::{Precision, Translation};
use strait_records::{BatchBuilder, Compression, Limits, Record, split};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::{BrokerOptions, Direction, TansuBroker, rdkafka};

const TOPIC: &str = "co";
const PARTITIONS: i32 = 4;
const BATCHES: usize = 100;
const PER_BATCH: usize = 20;

fn config(source: &str, target: &str) -> Config {
    let text = format!(
        r#"{}[flows.topics]
include = ["co"]
{SYNC_OFF}[engine]
fetch_max_wait = "50ms"
coalesce_max_bytes = "256KiB"
[metrics]
enabled = false
"#,
        two_cluster_flow(source, target, "5s")
    );
    load_str(&text, "test config", &|_| None).expect("valid config")
}

async fn client(bootstrap: &str) -> Client {
    Client::connect(
        ClientConfig::new([bootstrap.to_owned()])
            .with_request_timeout(Duration::from_secs(5))
            .with_connect_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect")
}

/// A stored record: (offset, key, value, timestamp).
type Stored = (i64, Option<Bytes>, Option<Bytes>, i64);

/// Every batch of a partition, read raw: (batches, records).
async fn read_raw(c: &Client, topic: &str, partition: i32) -> (usize, Vec<Stored>) {
    let (leader, _) = c.leader_for(topic, partition).await.expect("leader");
    let opts = FetchOptions {
        max_wait: Duration::from_millis(10),
        ..FetchOptions::default()
    };
    let limits = Limits::default();
    let (mut batches, mut records, mut offset) = (0, Vec::new(), 0i64);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut pos = FetchPosition::new(topic, partition, offset);
        pos.max_bytes = 8 << 20;
        let res = c.fetch(leader, &[pos], &opts).await.expect("fetch");
        let p = res.partitions.into_iter().next().expect("partition");
        assert!(p.error().is_none(), "{:?}", p.error());
        for b in split(p.records, &limits).expect("split").batches {
            if b.header().next_offset() <= offset {
                continue;
            }
            batches += 1;
            for r in b.records(&limits).expect("records") {
                let r = r.expect("record");
                records.push((r.offset, r.key, r.value, r.timestamp));
            }
            offset = b.header().next_offset();
        }
        if offset >= p.high_watermark {
            return (batches, records);
        }
        assert!(Instant::now() < deadline, "reading {topic}/{partition}");
    }
}

fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn small_batches_behind_a_50ms_rtt_are_coalesced_exactly() {
    let src = TansuBroker::start().expect("source broker");
    let (dst, proxy) =
        TansuBroker::start_behind_proxy(BrokerOptions::default()).expect("target broker");
    rdkafka::create_topic(&src.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // Many small uncompressed batches on every partition.
    runtime.block_on(async {
        let c = client(&src.bootstrap()).await;
        let producer = IdempotentProducer::new(c, ProducerConfig::default())
            .await
            .expect("producer");
        let mut acks = Vec::new();
        for b in 0..BATCHES {
            for p in 0..PARTITIONS {
                let mut builder = BatchBuilder::new(Compression::None);
                for i in 0..PER_BATCH {
                    let n = b * PER_BATCH + i;
                    builder
                        .push_record(&Record {
                            offset: 0,
                            timestamp: 1_700_000_000_000 + n as i64,
                            key: Some(Bytes::from(format!("p{p}-k{n}"))),
                            value: Some(Bytes::from(format!("p{p}-v{n}-{}", "x".repeat(n % 90)))),
                            headers: Vec::new(),
                        })
                        .expect("record");
                }
                let batch = builder.build().expect("batch");
                acks.push(producer.send(TOPIC, p, batch).await.expect("send"));
            }
        }
        for a in acks {
            a.wait().await.expect("ack");
        }
    });

    proxy.set_delay(Direction::Upstream, Duration::from_millis(25));
    proxy.set_delay(Direction::Downstream, Duration::from_millis(25));
    let cfg = config(&src.bootstrap(), &proxy.bootstrap());
    let flow = cfg.flows[0].clone();
    let engine = Engine::new(cfg);
    let started = Instant::now();
    let summary = runtime.block_on(engine.run_once()).expect("run_once");
    let took = started.elapsed();
    let metrics = engine.metrics().render();
    assert_eq!(
        summary.records(),
        (PARTITIONS as u64) * (BATCHES * PER_BATCH) as u64
    );
    let inputs = metric_sum(&metrics, "strait_coalesced_input_batches_total");
    let outputs = metric_sum(&metrics, "strait_coalesced_output_batches_total");
    let copied = metric_sum(&metrics, "strait_coalesced_bytes_copied_total");
    assert!(inputs > 0.0 && outputs > 0.0 && copied > 0.0, "{metrics}");
    assert!(outputs < inputs, "{inputs} inputs → {outputs} outputs");

    // Content, batch counts and offset maps, read directly (no delay).
    proxy.set_delay(Direction::Upstream, Duration::ZERO);
    proxy.set_delay(Direction::Downstream, Duration::ZERO);
    runtime.block_on(async {
        let s = client(&src.bootstrap()).await;
        let d = client(&dst.bootstrap()).await;
        let state = strait_mirror::state::read_state(&d, &flow)
            .await
            .expect("state");
        let target_topic = format!("src.{TOPIC}");
        let (mut source_batches, mut target_batches) = (0, 0);
        for p in 0..PARTITIONS {
            let (sb, sr) = read_raw(&s, TOPIC, p).await;
            let (tb, tr) = read_raw(&d, &target_topic, p).await;
            source_batches += sb;
            target_batches += tb;
            assert_eq!(sr.len(), tr.len(), "records of partition {p}");
            let strip = |v: &[Stored]| -> Vec<_> {
                v.iter()
                    .map(|(_, k, v, ts)| (k.clone(), v.clone(), *ts))
                    .collect()
            };
            assert_eq!(strip(&sr), strip(&tr), "content of partition {p}");
            let ps = state.get(&(TOPIC.to_owned(), p)).expect("partition state");
            let map = strait_mirror::state::decode_map(ps).expect("map");
            let by_target: BTreeMap<i64, &Stored> = tr.iter().map(|r| (r.0, r)).collect();
            for r in sr.iter().step_by(37).chain(sr.last()) {
                let Translation::Mapped {
                    offset,
                    precision: Precision::Exact,
                } = map.translate(r.0 as u64)
                else {
                    panic!("source {} of partition {p} is not mapped exactly", r.0);
                };
                let t = by_target
                    .get(&(offset as i64))
                    .expect("a target record there");
                assert_eq!((&t.1, &t.2, t.3), (&r.1, &r.2, r.3), "source {}", r.0);
            }
        }
        assert_eq!(source_batches, PARTITIONS as usize * BATCHES);
        assert!(
            target_batches < source_batches,
            "{source_batches} source batches became {target_batches} on the target"
        );
        eprintln!(
            "coalesce: {source_batches} source batches -> {target_batches} target batches; \
             metrics {inputs} inputs -> {outputs} outputs, {copied} bytes copied; run_once {took:?}"
        );
    });
}
