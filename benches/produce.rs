//! Produce-request encoding: kafka-protocol's encoder around real record batches.
//!
//! strait-client hand-encodes the Produce body *around* the caller's batch `Bytes` (the
//! batches reach the socket by vectored write, uncopied), and checks it byte for byte
//! against kafka-protocol's encoder in its tests. That encoder (`rpc::produce::encode_body`)
//! is `pub(crate)`, so this bench cannot call it; it measures the kafka-protocol side only:
//! the cost of encoding a Produce request that copies every batch into one request buffer,
//! which is what the hand encoding avoids. Add the strait side here when the client exposes
//! its encoder (e.g. `#[doc(hidden)] pub`).

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::protocol::{Encodable, StrBytes};
use strait_records::{BatchBuilder, Compression};

/// One lz4 batch of about `bytes` uncompressed bytes of JSON-ish records.
fn batch(bytes: usize, seed: u64) -> Bytes {
    let mut b = BatchBuilder::new(Compression::Lz4);
    let mut x = seed | 1;
    let mut i = 0u64;
    while b.records_size() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let value = format!(
            "{{\"id\":{i},\"user\":\"user-{:05}\",\"event\":\"page_view\",\"data\":\"{:016x}{:016x}\"}}",
            x % 50_000,
            x,
            x.rotate_left(17)
        );
        b.push(
            1_700_000_000_000 + i as i64,
            Some(b"key"),
            Some(value.as_bytes()),
            &[],
        )
        .expect("push");
        i += 1;
    }
    b.build().expect("build").as_bytes().clone()
}

fn request(batches: &[Bytes]) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("src.events")))
                .with_partition_data(
                    batches
                        .iter()
                        .enumerate()
                        .map(|(p, b)| {
                            PartitionProduceData::default()
                                .with_index(p as i32)
                                .with_records(Some(b.clone()))
                        })
                        .collect(),
                ),
        ])
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_encode");
    for (partitions, batch_bytes) in [(1usize, 16 * 1024), (6, 16 * 1024), (6, 1024 * 1024)] {
        let batches: Vec<Bytes> = (0..partitions)
            .map(|p| batch(batch_bytes, p as u64 + 7))
            .collect();
        let wire: usize = batches.iter().map(Bytes::len).sum();
        g.throughput(Throughput::Bytes(wire as u64));
        let id = format!("{partitions}x{}KiB", batch_bytes / 1024);
        g.bench_with_input(
            BenchmarkId::new("kafka_protocol_v9", &id),
            &batches,
            |b, batches| {
                b.iter(|| {
                    // Built per request, as a client would: the batches are cheap Bytes clones.
                    let req = request(batches);
                    let mut buf = BytesMut::with_capacity(wire + 256);
                    req.encode(&mut buf, 9).expect("encode");
                    black_box(buf.freeze())
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
