//! Criterion benches for strait-offsets: appending acknowledged batches and translating
//! positions. Figures are recorded in docs/benchmarks.md ("strait-offsets").

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use strait_offsets::{MapWriter, OffsetMap};

/// Runs of 10 records, each followed by one skipped offset (compaction or markers).
fn gapped(runs: u64) -> OffsetMap {
    let mut map = OffsetMap::new();
    for i in 0..runs {
        map.append_dense(i * 11, 10, i * 10).unwrap();
    }
    map
}

/// 1024 pseudo-random positions below `end` (an LCG: no dependency, same every run).
fn positions(end: u64) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..1024)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 11) % end
        })
        .collect()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("offsets/append");
    group.bench_function("dense batch (extends the run)", |b| {
        let mut map = OffsetMap::new();
        let mut next = 0u64;
        b.iter(|| {
            map.append_dense(black_box(next), 100, next).unwrap();
            // A dense flow journals a single coalesced update: no checkpoint needed.
            next += 100;
        });
    });
    group.bench_function("gapped batch (new run, coarsening amortised)", |b| {
        let mut map = OffsetMap::new();
        let mut i = 0u64;
        b.iter(|| {
            map.append_dense(black_box(i * 11), 10, i * 10).unwrap();
            i += 1;
            // Keep the journal small as the engine's checkpoints would.
            if i.is_multiple_of(4_096) {
                map.take_checkpoint();
            }
        });
    });
    group.bench_function("re-encoded batch of 10 with 3 holes", |b| {
        let mut map = OffsetMap::new();
        let mut base = 0u64;
        let mut target = 0u64;
        let holes = [0u64, 1, 3, 4, 5, 7, 8, 9, 11, 12];
        let mut offsets = [0u64; 10];
        b.iter(|| {
            for (slot, hole) in offsets.iter_mut().zip(holes) {
                *slot = base + hole;
            }
            map.append_listed(black_box(&offsets), target).unwrap();
            base += 13;
            target += 10;
            if base.is_multiple_of(13 * 4_096) {
                map.take_checkpoint();
            }
        });
    });
    group.bench_function("dense batch through MapWriter", |b| {
        let mut writer = MapWriter::new(OffsetMap::new());
        let mut next = 0u64;
        b.iter(|| {
            writer.append_dense(black_box(next), 100, next).unwrap();
            next += 100;
        });
    });
    group.finish();
}

fn translate(c: &mut Criterion) {
    let mut group = c.benchmark_group("offsets/translate");
    let mut dense = OffsetMap::new();
    dense.append_dense(0, 10_000_000, 0).unwrap();
    let full = gapped(100_000);
    let coarse = gapped(200_000);
    let cases = [
        ("dense, 1 run", &dense, positions(10_000_000)),
        ("gapped, 100k runs", &full, positions(1_100_000)),
        (
            "coarsened, 200k runs in 100k budget",
            &coarse,
            positions(2_200_000),
        ),
    ];
    for (name, map, positions) in &cases {
        group.bench_function(*name, |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & 1023;
                black_box(map.translate(black_box(positions[i])))
            });
        });
    }
    let reverse = positions(1_000_000);
    group.bench_function("reverse, gapped, 100k runs", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(full.translate_reverse(black_box(reverse[i])))
        });
    });
    let reader = MapWriter::new(full.clone()).reader();
    let forward = positions(1_100_000);
    group.bench_function("gapped, 100k runs, through MapReader", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(reader.translate(black_box(forward[i])))
        });
    });
    group.finish();
}

fn encoding(c: &mut Criterion) {
    let mut group = c.benchmark_group("offsets/encoding");
    group.sample_size(20);
    let mut map = gapped(100_000);
    let bytes = map.snapshot().bytes;
    group.bench_function("snapshot encode, 100k runs", |b| {
        b.iter_batched_ref(
            || map.clone(),
            |m| black_box(m.snapshot()),
            BatchSize::LargeInput,
        );
    });
    group.bench_function("snapshot decode, 100k runs", |b| {
        b.iter(|| black_box(OffsetMap::from_snapshot(black_box(&bytes), 100_000).unwrap()));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = append, translate, encoding
}
criterion_main!(benches);
