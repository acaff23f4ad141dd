//! The engine's own timings: `strait_replication_engine_latency_seconds` counts one
//! observation per batch the target acknowledged (fetch response received → target
//! acknowledgement), `strait_fetch_wait_seconds` one per successful Fetch, both per flow;
//! a short replication between two Tansu brokers, the copy checked with librdkafka.

use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::{
    Client, ClientConfig, FetchOptions, FetchPosition, IdempotentProducer, ProducerConfig,
};
use strait_mirror::Engine;
use strait_mirror::config::load_str;
use strait_records::{BatchBuilder, Compression, Limits, Record, split};
use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
use strait_testkit::{TansuBroker, rdkafka};

const TOPIC: &str = "el";
const PARTITIONS: i32 = 3;
const BATCHES: usize = 40;
const PER_BATCH: usize = 25;

async fn client(bootstrap: &str) -> Client {
    Client::connect(
        ClientConfig::new([bootstrap.to_owned()])
            .with_request_timeout(Duration::from_secs(5))
            .with_connect_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect")
}

/// Record batches stored in a partition (read raw to its high watermark).
async fn batches_in(c: &Client, topic: &str, partition: i32) -> u64 {
    let (leader, _) = c.leader_for(topic, partition).await.expect("leader");
    let opts = FetchOptions {
        max_wait: Duration::from_millis(10),
        ..FetchOptions::default()
    };
    let (mut batches, mut offset) = (0, 0i64);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut pos = FetchPosition::new(topic, partition, offset);
        pos.max_bytes = 8 << 20;
        let res = c.fetch(leader, &[pos], &opts).await.expect("fetch");
        let p = res.partitions.into_iter().next().expect("partition");
        assert!(p.error().is_none(), "{:?}", p.error());
        for b in split(p.records, &Limits::default()).expect("split").batches {
            if b.header().next_offset() > offset {
                batches += 1;
                offset = b.header().next_offset();
            }
        }
        if offset >= p.high_watermark {
            return batches;
        }
        assert!(Instant::now() < deadline, "reading {topic}/{partition}");
    }
}

#[test]
fn the_engine_histograms_count_every_acknowledged_batch_and_every_fetch() {
    let src = TansuBroker::start().expect("source broker");
    let dst = TansuBroker::start().expect("target broker");
    rdkafka::create_topic(&src.bootstrap(), TOPIC, PARTITIONS, &[]).expect("topic");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let producer =
            IdempotentProducer::new(client(&src.bootstrap()).await, ProducerConfig::default())
                .await
                .expect("producer");
        let mut acks = Vec::new();
        for b in 0..BATCHES {
            for p in 0..PARTITIONS {
                let mut builder = BatchBuilder::new(Compression::None);
                for i in 0..PER_BATCH {
                    let n = (b * PER_BATCH + i) as i64;
                    builder
                        .push_record(&Record {
                            offset: 0,
                            timestamp: 1_700_000_000_000 + n,
                            key: Some(Bytes::from(format!("p{p}-k{n}"))),
                            value: Some(Bytes::from(format!("p{p}-v{n}"))),
                            headers: Vec::new(),
                        })
                        .expect("record");
                }
                acks.push(
                    producer
                        .send(TOPIC, p, builder.build().expect("batch"))
                        .await
                        .expect("send"),
                );
            }
        }
        for a in acks {
            a.wait().await.expect("ack");
        }
    });

    let text = format!(
        "{}[flows.topics]\ninclude = [\"{TOPIC}\"]\n{SYNC_OFF}[engine]\nfetch_max_wait = \"50ms\"\n\
         [metrics]\nenabled = false\n",
        two_cluster_flow(&src.bootstrap(), &dst.bootstrap(), "5s")
    );
    let cfg = load_str(&text, "test config", &|_| None).expect("valid config");
    let flow = cfg.flows[0].name.clone();
    let engine = Engine::new(cfg);
    let started = Instant::now();
    let summary = runtime.block_on(engine.run_once()).expect("run_once");
    let wall = started.elapsed().as_secs_f64();
    let records = PARTITIONS as u64 * (BATCHES * PER_BATCH) as u64;
    assert_eq!(summary.records(), records);

    // The independent reader: every record is on the target.
    let target_topic = format!("src.{TOPIC}");
    let copied = rdkafka::consume(
        &dst.bootstrap(),
        &target_topic,
        &rdkafka::ConsumeOptions::count(records as usize),
    )
    .expect("consume");
    assert_eq!(copied.len() as u64, records);

    // One observation per acknowledged batch: as many as the producer sent and as the
    // target holds (merged batches count once), each shorter than the whole run.
    let latency = engine.metrics().engine_latency(&flow);
    let stored: u64 = runtime.block_on(async {
        let d = client(&dst.bootstrap()).await;
        let mut n = 0;
        for p in 0..PARTITIONS {
            n += batches_in(&d, &target_topic, p).await;
        }
        n
    });
    assert_eq!(latency.count, summary.produced_batches(), "{latency:?}");
    assert_eq!(latency.count, stored, "{latency:?}");
    assert!(latency.sum > 0.0, "{latency:?}");
    assert!(
        latency.max > 0.0 && latency.max < wall,
        "{latency:?}, run took {wall} s"
    );
    assert!(
        latency.sum <= latency.count as f64 * latency.max + 1e-9,
        "{latency:?}"
    );
    assert!(latency.buckets.iter().sum::<u64>() <= latency.count);
    // Its last part, handed to the producer → acknowledged: as many, none longer.
    let produce = engine.metrics().produce_ack(&flow);
    assert_eq!(produce.count, latency.count, "{produce:?}");
    assert!(
        produce.sum > 0.0 && produce.sum <= latency.sum,
        "{produce:?} {latency:?}"
    );
    assert!(produce.max <= latency.max, "{produce:?} {latency:?}");

    // At least one Fetch per partition's data, each shorter than the run.
    let waits = engine.metrics().fetch_wait(&flow);
    assert!(waits.count >= 1, "{waits:?}");
    assert!(
        waits.sum > 0.0 && waits.max < wall,
        "{waits:?}, run took {wall} s"
    );

    // Exported per flow (no topic or partition label).
    let rendered = engine.metrics().render();
    let line = format!(
        "strait_replication_engine_latency_seconds_count{{flow=\"{flow}\"}} {}",
        latency.count
    );
    assert!(
        rendered.lines().any(|l| l == line),
        "{line} not in\n{rendered}"
    );
    assert!(
        rendered.lines().any(|l| l.starts_with(&format!(
            "strait_fetch_wait_seconds_count{{flow=\"{flow}\"}} "
        ))),
        "{rendered}"
    );
    eprintln!(
        "engine latency: {} batches, mean {:.2} ms, max {:.2} ms; fetch waits: {}, mean {:.2} ms; run {wall:.2} s",
        latency.count,
        1000.0 * latency.sum / latency.count as f64,
        1000.0 * latency.max,
        waits.count,
        1000.0 * waits.sum / waits.count as f64
    );
}
