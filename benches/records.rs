//! Criterion benches for the strait-records hot path: split a fetched record set, verify
//! every batch's CRC-32C and patch its header for forwarding (new CRC included), over 1 MiB
//! record sets of 16 KiB batches, uncompressed and lz4. Throughput is in record-set bytes.
//! Group `merge`: coalescing the 64 batches of such a set into batches of at most 1 MiB
//! (`strait_records::merge`), uncompressed (records rewritten without decoding values) and
//! lz4 with `CompressedPolicy::Recompress`. Throughput is in input batch bytes.
//!
//! Run: `cargo bench --bench records` (`-- merge` for the merge group only).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_main};
use strait_records::{
    BatchBuilder, BufferPool, CompressedPolicy, Compression, Limits, MergeOptions, Merged,
    ProducerStamp, merge, split,
};

const SET_BYTES: usize = 1 << 20;
const BATCH_BYTES: usize = 16 << 10;

/// Text-like values (words from a small vocabulary, from a fixed-seed generator), so that
/// lz4 compresses them about as much as it does typical JSON or log lines.
fn value(seed: &mut u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "order", "id", "customer", "status", "shipped", "amount", "eur", "usd", "created", "2026",
        "region", "west", "east", "sku", "qty", "price",
    ];
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        out.extend_from_slice(WORDS[(*seed >> 60) as usize].as_bytes());
        out.extend_from_slice(format!("={} ", (*seed >> 40) & 0xffff).as_bytes());
    }
    out.truncate(len);
    out
}

/// One batch of `n` records of about 200 bytes each.
fn batch(codec: Compression, n: usize, seed: &mut u64) -> Bytes {
    let mut b = BatchBuilder::new(codec);
    for i in 0..n {
        let key = format!("key-{i}");
        b.push(
            1_700_000_000_000 + i as i64,
            Some(key.as_bytes()),
            Some(&value(seed, 200)),
            &[],
        )
        .expect("bench records fit");
    }
    b.build().expect("bench batch builds").into_bytes()
}

/// The largest batch of at most 16 KiB on the wire (after compression).
fn batch_near_16k(codec: Compression, seed: &mut u64) -> Bytes {
    let (mut lo, mut hi) = (1usize, 4096);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let mut probe = *seed;
        if batch(codec, mid, &mut probe).len() <= BATCH_BYTES {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    batch(codec, lo, seed)
}

/// About 1 MiB of back-to-back batches, as a Fetch response would carry them.
fn record_set(codec: Compression) -> Bytes {
    let mut seed = 42;
    let mut set = Vec::with_capacity(SET_BYTES + BATCH_BYTES);
    while set.len() + BATCH_BYTES <= SET_BYTES {
        set.extend_from_slice(&batch_near_16k(codec, &mut seed));
    }
    Bytes::from(set)
}

fn hot_path(c: &mut Criterion) {
    let limits = Limits::default();
    let stamp = ProducerStamp {
        producer_id: 1234,
        producer_epoch: 1,
        base_sequence: 0,
    };
    let mut group = c.benchmark_group("records");
    for codec in [Compression::None, Compression::Lz4] {
        let set = record_set(codec);
        let batches = split(set.clone(), &limits)
            .expect("bench set splits")
            .batches;
        eprintln!(
            "{codec}: {} bytes, {} batches of about {} bytes",
            set.len(),
            batches.len(),
            set.len() / batches.len()
        );
        group.throughput(Throughput::Bytes(set.len() as u64));

        // The forwarder's fast path: one pass over each payload.
        group.bench_function(format!("split+verify_and_patch/{codec}"), |b| {
            b.iter(|| {
                let s = split(black_box(set.clone()), &limits).expect("splits");
                for (i, batch) in s.batches.iter().enumerate() {
                    let stamp = ProducerStamp {
                        base_sequence: i as i32,
                        ..stamp
                    };
                    black_box(batch.verify_and_patch(stamp).expect("valid CRC"));
                }
            })
        });

        // Verify, then recompute the new CRC over header tail + payload: two passes.
        group.bench_function(format!("split+verify+patch(recompute)/{codec}"), |b| {
            b.iter(|| {
                let s = split(black_box(set.clone()), &limits).expect("splits");
                for batch in &s.batches {
                    batch.verify_crc().expect("valid CRC");
                    black_box(batch.patch(stamp));
                }
            })
        });
    }
    group.finish();
}

/// The record set with consecutive base offsets, as a partition's log holds them (the
/// builder writes every batch at base offset 0; the field is outside the CRC).
fn with_offsets(set: &Bytes) -> Bytes {
    let mut out = set.to_vec();
    let mut next = 0i64;
    for batch in split(set.clone(), &Limits::default())
        .expect("bench set splits")
        .batches
    {
        let at = batch.position();
        out[at..at + 8].copy_from_slice(&next.to_be_bytes());
        next += i64::from(batch.header().records_count);
    }
    Bytes::from(out)
}

/// Coalescing: 64 batches of ~16 KiB into batches of at most 1 MiB, with merged batches
/// written into fresh allocations or into buffers a pool got back from the previous
/// iteration's (dropped) outputs, as the engine's are.
fn merging(c: &mut Criterion) {
    let mut group = c.benchmark_group("merge");
    for (codec, policy, pooled) in [
        (Compression::None, CompressedPolicy::Never, false),
        (Compression::None, CompressedPolicy::Never, true),
        (Compression::Lz4, CompressedPolicy::Recompress, true),
        (Compression::Zstd, CompressedPolicy::Recompress, true),
    ] {
        let set = with_offsets(&record_set(codec));
        let batches = split(set.clone(), &Limits::default())
            .expect("bench set splits")
            .batches;
        let mut opts = MergeOptions::new(SET_BYTES).compressed(policy);
        if pooled {
            opts.buffers = BufferPool::new(16 << 20);
        }
        let outs = merge(&batches, &opts).expect("bench batches merge");
        let sizes: Vec<String> = outs
            .iter()
            .map(|o| match o {
                Merged::Rewritten { batch, inputs, .. } => {
                    format!("{} inputs -> {} bytes", inputs.len(), batch.size())
                }
                Merged::Unchanged { index, .. } => format!("input {index} unchanged"),
            })
            .collect();
        eprintln!(
            "merge {codec}: {} batches, {} bytes -> {}",
            batches.len(),
            set.len(),
            sizes.join(", ")
        );
        group.throughput(Throughput::Bytes(set.len() as u64));
        let buffers = if pooled { "pooled" } else { "fresh" };
        group.bench_function(format!("64x16KiB->1MiB/{codec}/{buffers}"), |b| {
            b.iter(|| black_box(merge(black_box(&batches), &opts).expect("merges")))
        });
    }
    group.finish();
}

// A private module keeps the macro's undocumented `pub fn` out of the crate's public items.
mod group {
    criterion::criterion_group!(benches, super::hot_path, super::merging);
}
criterion_main!(group::benches);
