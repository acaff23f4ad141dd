use super::*;
use bytes::Bytes;
use strait_offsets::{OffsetMap, Precision, Side, Translation};
use strait_records::{CompressedPolicy, Compression};

fn exact(t: Translation) -> Option<u64> {
    match t {
        Translation::Mapped {
            offset,
            precision: Precision::Exact,
        } => Some(offset),
        _ => None,
    }
}
use strait_records::{BatchBuilder, Limits, Record, split};

/// A source batch at `base` holding `n` records at `base..base + n` (the base offset
/// is outside the CRC, so it is written into the built batch's bytes).
fn batch_at(base: i64, n: i64, codec: Compression) -> Batch {
    let mut b = BatchBuilder::new(codec);
    for d in 0..n {
        let r = Record {
            offset: base + d,
            timestamp: 1_700_000_000_000 + base + d,
            key: Some(Bytes::from(format!("k{}", base + d))),
            value: Some(Bytes::from(vec![b'v'; 100])),
            headers: Vec::new(),
        };
        b.push_record(&r).expect("push");
    }
    let mut raw = b.build().expect("build").as_bytes().to_vec();
    raw[..8].copy_from_slice(&base.to_be_bytes());
    split(Bytes::from(raw), &Limits::default())
        .expect("split")
        .batches
        .remove(0)
}

fn dense(base: i64, n: i64) -> Outgoing<u32> {
    Outgoing {
        batch: batch_at(base, n, Compression::None),
        written: Written::Dense {
            source_first: base as u64,
            count: n as u64,
        },
        pins: smallvec::smallvec![base as u32],
        mergeable: true,
    }
}

fn records_of(batch: &Batch) -> Vec<(i64, Option<Bytes>)> {
    batch
        .records(&Limits::default())
        .expect("records")
        .map(|r| {
            let r = r.expect("record");
            (r.timestamp, r.key)
        })
        .collect()
}

#[test]
fn the_head_goes_as_it_is_while_the_window_has_room_for_everything() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(5, MergeOptions::new(1 << 20));
    for i in 0..3 {
        c.push_batch(dense(i * 10, 10));
    }
    for i in 0..3 {
        match c.next(i as usize) {
            Some(Next::Send {
                out,
                coalesced: None,
            }) => assert_eq!(out.written.first_source(), i * 10),
            other => panic!("expected an unmerged send, got {other:?}"),
        }
    }
    assert!(c.next(3).is_none());
}

#[test]
fn a_full_window_holds_batches_but_not_markers() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(5, MergeOptions::new(1 << 20));
    c.push_other("advance-before");
    c.push_batch(dense(0, 10));
    c.push_other("advance-after");
    assert!(matches!(c.next(5), Some(Next::Other("advance-before"))));
    assert!(c.next(5).is_none(), "the batch waits for a slot");
    assert!(c.next(5).is_none(), "the marker after it waits too");
    assert!(matches!(c.next(4), Some(Next::Send { .. })));
    assert!(matches!(c.next(5), Some(Next::Other("advance-after"))));
    assert!(c.is_empty());
}

#[test]
fn queued_batches_beyond_the_free_slots_are_merged_up_to_max_bytes() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(5, MergeOptions::new(1 << 20));
    for i in 0..8 {
        c.push_batch(dense(i * 10, 10));
    }
    c.push_other("skip");
    c.push_batch(dense(200, 10));
    // One free slot, nine batches: the eight before the marker become one.
    let Some(Next::Send {
        out,
        coalesced: Some(co),
    }) = c.next(4)
    else {
        panic!("expected a merged batch");
    };
    assert_eq!(co.inputs, 8);
    assert_eq!(co.bytes, out.batch.size());
    assert_eq!(out.written, Written::Runs(vec![(0, 80)]));
    assert_eq!(
        out.pins.to_vec(),
        (0..8).map(|i| i * 10).collect::<Vec<u32>>()
    );
    assert_eq!(out.batch.header().records_count, 80);
    assert!(matches!(c.next(4), Some(Next::Other("skip"))));
    assert!(matches!(
        c.next(4),
        Some(Next::Send {
            coalesced: None,
            ..
        })
    ));
}

#[test]
fn max_bytes_bounds_a_merged_batch() {
    let one = dense(0, 10).batch.size();
    let mut c: Coalescer<u32, &str> = Coalescer::new(1, MergeOptions::new(one * 3 + 10));
    for i in 0..7 {
        c.push_batch(dense(i * 10, 10));
    }
    let mut sizes = Vec::new();
    while let Some(Next::Send { out, coalesced }) = c.next(0) {
        assert!(out.batch.size() <= one * 3 + 10);
        sizes.push(coalesced.map_or(1, |c| c.inputs));
    }
    // merge may split a run whose rewritten records outgrow the bound.
    assert_eq!(sizes.iter().sum::<usize>(), 7);
    assert!(sizes.len() <= 4, "{sizes:?}");
}

#[test]
fn transactional_compressed_and_reencoded_batches_are_not_merged() {
    let c: Coalescer<u32, &str> = Coalescer::new(5, MergeOptions::new(1 << 20));
    let lz4 = batch_at(0, 3, Compression::Lz4);
    assert!(!c.mergeable(&lz4), "policy never");
    assert!(c.mergeable(&dense(0, 3).batch));
    let mut r: Coalescer<u32, &str> = Coalescer::new(
        5,
        MergeOptions::new(1 << 20).compressed(CompressedPolicy::Recompress),
    );
    assert!(r.mergeable(&lz4), "policy allowed");
    let fast: Coalescer<u32, &str> = Coalescer::new(
        5,
        MergeOptions::new(1 << 20).compressed(CompressedPolicy::RecompressFast),
    );
    assert!(fast.mergeable(&lz4), "policy fast: lz4");
    assert!(
        fast.mergeable(&batch_at(0, 3, Compression::Snappy)),
        "policy fast: snappy"
    );
    assert!(
        fast.mergeable(&batch_at(0, 3, Compression::Zstd)),
        "policy fast: zstd"
    );
    assert!(
        !fast.mergeable(&batch_at(0, 3, Compression::Gzip)),
        "policy fast: not gzip"
    );
    let mut a = dense(0, 3);
    a.mergeable = false;
    r.push_batch(a);
    r.push_batch(dense(3, 3));
    r.push_batch(dense(6, 3));
    // Nothing can be sent beside the head: the head is not mergeable, so it goes alone.
    assert!(matches!(
        r.next(4),
        Some(Next::Send {
            coalesced: None,
            ..
        })
    ));
    assert!(matches!(
        r.next(4),
        Some(Next::Send {
            coalesced: Some(Coalesced { inputs: 2, .. }),
            ..
        })
    ));
}

#[test]
fn compressed_batches_are_recompressed_when_allowed() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(
        1,
        MergeOptions::new(1 << 20).compressed(CompressedPolicy::Recompress),
    );
    for i in 0..4 {
        let batch = batch_at(i * 10, 10, Compression::Lz4);
        let mergeable = c.mergeable(&batch);
        c.push_batch(Outgoing {
            batch,
            written: Written::Dense {
                source_first: (i * 10) as u64,
                count: 10,
            },
            pins: Pins::new(),
            mergeable,
        });
    }
    let Some(Next::Send {
        out,
        coalesced: Some(co),
    }) = c.next(0)
    else {
        panic!("expected a merged batch");
    };
    assert_eq!(co.inputs, 4);
    assert_eq!(out.batch.header().compression(), Compression::Lz4);
    assert_eq!(out.written, Written::Runs(vec![(0, 40)]));
}

/// Under `recompress = "small"` only compressed batches under the size bound are
/// merged (and recompressed): a large compressed batch goes as it is even while the
/// window is full, and the small ones on either side of it are merged; uncompressed
/// batches are merged at any size.
#[test]
fn only_small_compressed_batches_are_merged_under_the_small_policy() {
    let bound = batch_at(0, 2, Compression::Lz4).size();
    let opts = MergeOptions::new(1 << 20)
        .compressed(CompressedPolicy::RecompressFast)
        .compressed_inputs_up_to(bound);
    let mut c: Coalescer<u32, &str> = Coalescer::new(1, opts);
    let mut base = 0;
    let mut push = |c: &mut Coalescer<u32, &str>, n: i64, codec: Compression| {
        let batch = batch_at(base, n, codec);
        let mergeable = c.mergeable(&batch);
        c.push_batch(Outgoing {
            batch,
            written: Written::Dense {
                source_first: base as u64,
                count: n as u64,
            },
            pins: Pins::new(),
            mergeable,
        });
        base += n;
        mergeable
    };
    assert!(push(&mut c, 2, Compression::Lz4));
    assert!(push(&mut c, 2, Compression::Lz4));
    assert!(!push(&mut c, 100, Compression::Lz4), "large lz4: as it is");
    assert!(push(&mut c, 100, Compression::None), "large, uncompressed");
    assert!(push(&mut c, 100, Compression::None));
    let mut sent = Vec::new();
    while let Some(Next::Send { out, coalesced }) = c.next(0) {
        sent.push((
            out.written.records(),
            coalesced.map(|c| (c.inputs, c.recompressed)),
        ));
    }
    assert_eq!(
        sent,
        [(4, Some((2, true))), (100, None), (200, Some((2, false)))]
    );
}

/// Gaps between merged inputs (offsets no batch holds) keep the map exact: every
/// source offset translates to the target offset of the same record, and a position
/// in a gap to the next replicated record.
#[test]
fn a_merged_batch_keeps_the_offset_map_exact_across_gaps() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(1, MergeOptions::new(1 << 20));
    // Source: 100..110, 112..114, 116..118, 130..135.
    let inputs = [(100, 10), (112, 2), (116, 2), (130, 5)];
    let mut expected = Vec::new();
    for (base, n) in inputs {
        expected.extend(base..base + n);
        c.push_batch(Outgoing {
            batch: batch_at(base, n, Compression::None),
            written: Written::Dense {
                source_first: base as u64,
                count: n as u64,
            },
            pins: Pins::new(),
            mergeable: true,
        });
    }
    let Some(Next::Send { out, coalesced }) = c.next(0) else {
        panic!("expected a send");
    };
    assert_eq!(coalesced.map(|c| c.inputs), Some(4));
    assert_eq!(
        out.written,
        Written::Runs(vec![(100, 10), (112, 2), (116, 2), (130, 5)])
    );
    let mut map = OffsetMap::new();
    map.append_dense(0, 100, 0).expect("before");
    out.written.append_to(&mut map, 100).expect("append");
    assert_eq!(map.next(Side::Source), 135);
    assert_eq!(map.next(Side::Target), 100 + expected.len() as u64);
    let recs = records_of(&out.batch);
    assert_eq!(recs.len(), expected.len());
    for (i, src) in expected.iter().enumerate() {
        assert_eq!(
            exact(map.translate(*src as u64)),
            Some(100 + i as u64),
            "source {src}"
        );
        assert_eq!(recs[i].1, Some(Bytes::from(format!("k{src}"))));
        assert_eq!(recs[i].0, 1_700_000_000_000 + src);
    }
    // Positions in a gap translate to the next replicated record.
    assert_eq!(exact(map.translate(110)), Some(100 + 10));
    assert_eq!(exact(map.translate(114)), Some(100 + 12));
    assert_eq!(exact(map.translate(120)), Some(100 + 14));
}

#[test]
fn corrupt_inputs_are_handed_on_one_by_one() {
    let mut c: Coalescer<u32, &str> = Coalescer::new(1, MergeOptions::new(1 << 20));
    let good = dense(0, 5);
    let mut raw = dense(5, 5).batch.as_bytes().to_vec();
    let last = raw.len() - 1;
    raw[last] ^= 0xff;
    let bad = split(Bytes::from(raw), &Limits::default())
        .expect("split")
        .batches
        .remove(0);
    c.push_batch(good);
    c.push_batch(Outgoing {
        batch: bad,
        written: Written::Dense {
            source_first: 5,
            count: 5,
        },
        pins: Pins::new(),
        mergeable: true,
    });
    assert!(matches!(
        c.next(0),
        Some(Next::Send {
            coalesced: None,
            ..
        })
    ));
    assert_eq!(c.queued_batches(), 1);
}
