//! Measured sizes quoted in docs/offset-translation.md. Run with `--nocapture` to see them.

use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap, Precision, Side, Translation};

/// One partition of 10 million contiguous records, in 10 000 batches: one run.
#[test]
fn ten_million_contiguous_records() {
    let mut map = OffsetMap::new();
    for batch in 0..10_000u64 {
        map.append_dense(batch * 1_000, 1_000, batch * 1_000)
            .unwrap();
    }
    let stats = map.stats();
    let snapshot = map.snapshot().bytes;
    println!(
        "10M contiguous: runs={} heap={}B snapshot={}B",
        stats.runs,
        stats.heap_bytes,
        snapshot.len()
    );
    assert_eq!(stats.runs, 1);
    assert!(snapshot.len() <= 32, "{} bytes", snapshot.len());
    assert!(map.translate(5_000_000).is_exact());
}

/// A compacted-style partition: a gap after every 10 records, over 1 million records.
#[test]
fn gap_every_ten_records_over_one_million() {
    let mut map = OffsetMap::new();
    append_gapped(&mut map, 100_000);
    let stats = map.stats();
    let checkpoint = map.take_checkpoint().unwrap();
    let snapshot = map.snapshot().bytes;
    println!(
        "1M records, gap every 10, default budget {}: runs={} coarse={} heap={}B \
         snapshot={}B first checkpoint={:?} {}B",
        DEFAULT_RUN_BUDGET,
        stats.runs,
        stats.coarse_segments,
        stats.heap_bytes,
        snapshot.len(),
        checkpoint.kind,
        checkpoint.bytes.len()
    );
    assert_eq!(stats.runs, 100_000);
    assert_eq!(stats.coarse_segments, 0);
    assert!(snapshot.len() < 400_000);
    let restored = OffsetMap::from_snapshot(&snapshot, DEFAULT_RUN_BUDGET).unwrap();
    assert_eq!(restored, map);
}

/// Twice as many runs as the default budget: the older half of history is coarsened.
#[test]
fn gap_every_ten_records_over_two_million() {
    let mut map = OffsetMap::new();
    append_gapped(&mut map, 200_000);
    let stats = map.stats();
    let exact_from = map.exact_from(Side::Source);
    let mut worst = 0;
    for c in (0..exact_from).step_by(997) {
        if let Translation::Mapped {
            precision: Precision::RoundedDown { at_most },
            ..
        } = map.translate(c)
        {
            worst = worst.max(at_most);
        }
    }
    println!(
        "2M records, gap every 10, default budget: runs={} coarse={} heap={}B \
         exact from source offset {} of {} ({:.0}% of history exact), worst error {} records",
        stats.runs,
        stats.coarse_segments,
        stats.heap_bytes,
        exact_from,
        stats.source_next,
        100.0 * (stats.source_next - exact_from) as f64 / stats.source_next as f64,
        worst
    );
    assert!(stats.runs + stats.coarse_segments <= DEFAULT_RUN_BUDGET);
    assert!(map.translate(exact_from + 5).is_exact());
}

/// `runs` batches of 10 records, each followed by one skipped offset.
fn append_gapped(map: &mut OffsetMap, runs: u64) {
    for i in 0..runs {
        map.append_dense(i * 11, 10, i * 10).unwrap();
    }
}
