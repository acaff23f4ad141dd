//! Merging consecutive batches: every promise of [`merge`] checked on each output, gaps,
//! what it refuses, size limits, compressed policies, and properties over random inputs.

use bytes::Bytes;
use proptest::prelude::*;

use crate::header::CRC_START;
use crate::test_support::{Raw, control_batch, hand_batch, one, raw, txn_batch};
use crate::*;

/// Checks every promise of [`merge`] for `inputs` and returns the outputs.
fn check_merge(inputs: &[Batch], opts: &MergeOptions) -> Vec<Merged> {
    let limits = Limits::default();
    let outs = merge(inputs, opts).unwrap();
    // Outputs cover the inputs in order, each exactly once.
    let covered: Vec<usize> = outs.iter().flat_map(Merged::inputs).collect();
    assert_eq!(covered, (0..inputs.len()).collect::<Vec<_>>());
    let mut expected = Vec::new();
    for b in inputs {
        expected.extend(b.decode_records(&limits).unwrap());
    }
    let mut got = Vec::new();
    for out in &outs {
        match out {
            Merged::Unchanged { batch, index } => {
                assert_eq!(batch.as_bytes(), inputs[*index].as_bytes());
                got.extend(batch.decode_records(&limits).unwrap());
            }
            Merged::Rewritten {
                batch,
                source_offsets,
                inputs: range,
            } => {
                assert!(range.len() >= 2);
                // Checked from the bytes: a batch merge sealed skips `verify_crc`.
                let reparsed = Batch::parse(Bytes::copy_from_slice(batch.as_bytes())).unwrap();
                reparsed.verify_crc().unwrap();
                let stamp = ProducerStamp {
                    producer_id: 7,
                    producer_epoch: 1,
                    base_sequence: 40,
                };
                assert_eq!(
                    batch.verify_and_patch(stamp).unwrap().to_contiguous(),
                    reparsed.patch(stamp).to_contiguous()
                );
                assert_eq!(batch.classify(usize::MAX), Class::Forward);
                assert!(
                    batch.size() <= opts.max_bytes,
                    "{} > {}",
                    batch.size(),
                    opts.max_bytes
                );
                let h = batch.header();
                let codec = inputs[range.start].header().compression();
                assert!(
                    inputs[range.clone()]
                        .iter()
                        .all(|b| b.header().compression() == codec)
                );
                assert_eq!(h.compression(), codec);
                assert!(
                    opts.compressed.merges(codec),
                    "{codec:?} merged under {:?}",
                    opts.compressed
                );
                assert_eq!(h.attributes.0, u16::from(codec.id()));
                assert_eq!(h.base_offset, 0);
                assert_eq!(
                    (h.producer_id, h.producer_epoch, h.base_sequence),
                    (-1, -1, -1)
                );
                let records = batch.decode_records(&limits).unwrap();
                assert_eq!(records.len(), h.records_count as usize);
                assert_eq!(source_offsets.len(), records.len());
                assert_eq!(h.base_timestamp, records[0].timestamp);
                assert_eq!(
                    h.max_timestamp,
                    records.iter().map(|r| r.timestamp).max().unwrap()
                );
                let src: Vec<i64> = inputs[range.clone()]
                    .iter()
                    .flat_map(|b| b.decode_records(&limits).unwrap())
                    .map(|r| r.offset)
                    .collect();
                assert_eq!(source_offsets.to_vec(), src);
                // Runs are maximal and increasing.
                for w in source_offsets.runs().windows(2) {
                    assert!(w[0].end() < w[1].first);
                }
                for (i, mut r) in records.into_iter().enumerate() {
                    assert_eq!(r.offset, i as i64);
                    r.offset = src[i];
                    got.push(r);
                }
            }
        }
    }
    assert_eq!(got, expected);
    outs
}

fn dense(codec: Compression, base_offset: i64, n: i32, ts: i64, value_len: usize) -> Batch {
    let recs: Vec<Raw> = (0..n)
        .map(|i| {
            let mut r = raw(
                i,
                ts + i64::from(i % 3) - 1,
                &vec![b'a' + (i % 26) as u8; value_len],
            );
            if i % 4 == 1 {
                r.key = None;
                r.headers = vec![Header {
                    key: Bytes::from_static(b"h"),
                    value: None,
                }];
            }
            r
        })
        .collect();
    one(hand_batch(
        codec,
        base_offset,
        n - 1,
        0,
        ProducerStamp::NONE,
        &recs,
    ))
}

fn rewritten(out: &Merged) -> (&Batch, &SourceOffsets) {
    match out {
        Merged::Rewritten {
            batch,
            source_offsets,
            ..
        } => (batch, source_offsets),
        Merged::Unchanged { index, .. } => panic!("input {index} left unchanged"),
    }
}

#[test]
fn merge_dense_uncompressed_into_one_run() {
    let inputs = [
        dense(Compression::None, 100, 5, 1_000, 30),
        dense(Compression::None, 105, 70, 2_000, 30),
        dense(Compression::None, 175, 1, 500, 30),
    ];
    let outs = check_merge(&inputs, &MergeOptions::new(1 << 20));
    assert_eq!(outs.len(), 1);
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(batch.header().records_count, 76);
    assert_eq!(batch.header().last_offset_delta, 75);
    assert_eq!(
        offsets.runs(),
        &[OffsetRun {
            first: 100,
            count: 76
        }]
    );
    assert!(offsets.is_dense());
    assert_eq!((offsets.first(), offsets.last()), (Some(100), Some(175)));
    // The merged batch is the inputs minus two headers, plus at most a byte per record whose
    // offset delta grew past 63 and one per record whose timestamp delta grew past ±63.
    let inputs_size: usize = inputs.iter().map(Batch::size).sum();
    assert!(batch.size() <= inputs_size - 2 * HEADER_LEN + 2 * 76);
}

#[test]
fn merge_reports_gaps_between_and_within_inputs() {
    // Compaction left offsets 11 and 13 out of the second batch; 20..30 was never fetched.
    let gapped = one(hand_batch(
        Compression::None,
        10,
        4,
        Attributes::LOG_APPEND_TIME | Attributes::DELETE_HORIZON,
        ProducerStamp {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 10,
        },
        &[raw(0, 5, b"a"), raw(2, 3, b"b"), raw(4, 9, b"c")],
    ));
    let inputs = [
        dense(Compression::None, 0, 10, 1, 8),
        gapped,
        dense(Compression::None, 30, 2, 7, 8),
    ];
    assert_eq!(
        inputs[1].classify(usize::MAX),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    let outs = check_merge(&inputs, &MergeOptions::new(1 << 20));
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(
        offsets.runs(),
        &[
            OffsetRun {
                first: 0,
                count: 11
            },
            OffsetRun {
                first: 12,
                count: 1
            },
            OffsetRun {
                first: 14,
                count: 1
            },
            OffsetRun {
                first: 30,
                count: 2
            },
        ]
    );
    assert_eq!(
        batch.header().attributes.timestamp_type(),
        TimestampType::CreateTime
    );
    assert!(!batch.header().attributes.has_delete_horizon());
}

#[test]
fn merge_rejects_control_transactional_and_disorder() {
    let data = dense(Compression::None, 0, 3, 1, 4);
    let control = one(control_batch(3, 1, 1));
    let err = merge(&[data.clone(), control], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::NotMergeable {
            base_offset: 3,
            reason: "control batch"
        }
    ));
    let txn = one(txn_batch(3, 1, 2));
    let err = merge(&[data.clone(), txn], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::NotMergeable {
            reason: "transactional batch",
            ..
        }
    ));
    let overlapping = dense(Compression::None, 2, 3, 1, 4);
    let err = merge(&[data.clone(), overlapping], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::MergeOutOfOrder {
            base_offset: 2,
            expected_at_least: 3
        }
    ));
    // A gap is fine; an empty input list gives no output.
    check_merge(
        &[data.clone(), dense(Compression::None, 9, 1, 1, 4)],
        &MergeOptions::new(1 << 20),
    );
    assert!(merge(&[], &MergeOptions::new(1 << 20)).unwrap().is_empty());
}

#[test]
fn merge_verifies_crcs_and_record_framing() {
    let good = dense(Compression::None, 0, 3, 1, 4);
    let mut bad = dense(Compression::None, 3, 3, 1, 4).as_bytes().to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let bad = one(Bytes::from(bad));
    let err = merge(&[good.clone(), bad], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err.root(),
        Error::CrcMismatch { base_offset: 3, .. }
    ));
    // Offset deltas past lastOffsetDelta, with a valid CRC.
    let lying = one(hand_batch(
        Compression::None,
        3,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, 1, b"x"), raw(2, 1, b"y")],
    ));
    let err = merge(&[good, lying], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err.root(),
        Error::OffsetDeltaOutOfOrder { delta: 2, .. }
    ));
}

#[test]
fn merge_respects_max_bytes() {
    let inputs: Vec<Batch> = (0..20)
        .map(|i| dense(Compression::None, i * 10, 10, 1_000 * i, 100))
        .collect();
    let size = inputs[0].size();
    let max = 4 * size;
    let outs = check_merge(&inputs, &MergeOptions::new(max));
    assert!(outs.len() >= 5, "{} outputs", outs.len());
    // Each output holds as many inputs as fit (the headers saved make room for a fourth).
    assert!(outs.iter().all(|o| o.inputs().len() == 4));
    // An input larger than max_bytes passes unchanged, between merged neighbours.
    let mut inputs = inputs[..6].to_vec();
    inputs.insert(3, dense(Compression::None, 55, 3, 1, 2 * size));
    for (i, b) in inputs.iter_mut().enumerate().skip(4) {
        *b = dense(Compression::None, 60 + 10 * i as i64, 10, 1, 100);
    }
    let outs = check_merge(&inputs, &MergeOptions::new(max));
    let kinds: Vec<_> = outs
        .iter()
        .map(|o| (o.inputs(), matches!(o, Merged::Rewritten { .. })))
        .collect();
    assert_eq!(kinds, [(0..3, true), (3..4, false), (4..7, true)]);
    // Nothing fits: everything unchanged.
    let outs = check_merge(&inputs, &MergeOptions::new(100));
    assert!(outs.iter().all(|o| matches!(o, Merged::Unchanged { .. })));
}

#[test]
fn merge_leaves_compressed_inputs_over_the_bound_unchanged_but_merges_any_uncompressed() {
    let lz4 = |base, n| dense(Compression::Lz4, base, n, 1, 100);
    let none = |base, n| dense(Compression::None, base, n, 1, 100);
    let bound = lz4(0, 2).size();
    let inputs = vec![
        lz4(0, 2),
        lz4(2, 2),
        lz4(4, 200),
        lz4(204, 2),
        lz4(206, 2),
        none(208, 200),
        none(408, 200),
    ];
    assert!(
        inputs[2].size() > bound,
        "the large lz4 input is over the bound"
    );
    let opts = MergeOptions::new(1 << 20)
        .compressed(CompressedPolicy::RecompressFast)
        .compressed_inputs_up_to(bound);
    assert!(opts.admits(bound, Compression::Lz4));
    assert!(!opts.admits(bound + 1, Compression::Lz4));
    assert!(opts.admits(bound + 1, Compression::None));
    let outs = check_merge(&inputs, &opts);
    let kinds: Vec<_> = outs
        .iter()
        .map(|o| (o.inputs(), matches!(o, Merged::Rewritten { .. })))
        .collect();
    // The large lz4 input goes as it is and splits the small ones around it; the large
    // uncompressed ones are merged (a copy, no codec work).
    assert_eq!(
        kinds,
        [(0..2, true), (2..3, false), (3..5, true), (5..7, true)]
    );
}

#[test]
fn merge_compressed_by_policy() {
    let inputs = [
        dense(Compression::None, 0, 4, 1, 50),
        dense(Compression::None, 4, 4, 1, 50),
        dense(Compression::Lz4, 8, 4, 1, 50),
        dense(Compression::Lz4, 12, 4, 1, 50),
        dense(Compression::Zstd, 16, 4, 1, 50),
        dense(Compression::Zstd, 20, 4, 1, 50),
        dense(Compression::Lz4, 24, 4, 1, 50),
    ];
    let kinds = |outs: &[Merged]| -> Vec<(std::ops::Range<usize>, Option<Compression>)> {
        outs.iter()
            .map(|o| match o {
                Merged::Rewritten { batch, inputs, .. } => {
                    (inputs.clone(), Some(batch.header().compression()))
                }
                Merged::Unchanged { index, .. } => (*index..index + 1, None),
            })
            .collect()
    };
    let never = check_merge(&inputs, &MergeOptions::new(1 << 20));
    assert_eq!(
        kinds(&never),
        [
            (0..2, Some(Compression::None)),
            (2..3, None),
            (3..4, None),
            (4..5, None),
            (5..6, None),
            (6..7, None)
        ]
    );
    let opts = MergeOptions::new(1 << 20).compressed(CompressedPolicy::Recompress);
    let re = check_merge(&inputs, &opts);
    assert_eq!(
        kinds(&re),
        [
            (0..2, Some(Compression::None)),
            (2..4, Some(Compression::Lz4)),
            (4..6, Some(Compression::Zstd)),
            (6..7, None)
        ]
    );
    // The decompressed cap bounds one merged batch's records.
    let tight = MergeOptions {
        limits: Limits {
            max_decompressed_bytes: 300,
            ..Limits::default()
        },
        ..opts
    };
    let outs = check_merge(&inputs, &tight);
    assert!(
        outs.iter()
            .skip(1)
            .all(|o| matches!(o, Merged::Unchanged { .. }))
    );
    // Incompressible values: the recompressed group is too large and is halved.
    let noisy: Vec<Batch> = (0..8)
        .map(|i| {
            let recs: Vec<Raw> = (0..4)
                .map(|j| {
                    let mut seed = (i * 4 + j) as u64 + 1;
                    let v: Vec<u8> = (0..200)
                        .map(|_| {
                            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                            (seed >> 56) as u8
                        })
                        .collect();
                    raw(j, 1, &v)
                })
                .collect();
            one(hand_batch(
                Compression::Zstd,
                i64::from(i) * 4,
                3,
                0,
                ProducerStamp::NONE,
                &recs,
            ))
        })
        .collect();
    let sum: usize = noisy.iter().map(Batch::size).sum();
    let opts = MergeOptions::new(sum / 2).compressed(CompressedPolicy::Recompress);
    let outs = check_merge(&noisy, &opts);
    assert!(outs.len() >= 2);
}

#[test]
fn merge_empty_batches() {
    // Compaction can keep a header with no records.
    let empty = one(hand_batch(
        Compression::None,
        0,
        4,
        0,
        ProducerStamp::NONE,
        &[],
    ));
    let outs = check_merge(std::slice::from_ref(&empty), &MergeOptions::new(1 << 20));
    assert!(matches!(outs[..], [Merged::Unchanged { index: 0, .. }]));
    let empty2 = one(hand_batch(
        Compression::None,
        5,
        2,
        0,
        ProducerStamp::NONE,
        &[],
    ));
    let outs = check_merge(&[empty.clone(), empty2], &MergeOptions::new(1 << 20));
    assert_eq!(outs.len(), 2);
    let outs = check_merge(
        &[empty, dense(Compression::None, 5, 2, 1, 4)],
        &MergeOptions::new(1 << 20),
    );
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(batch.header().records_count, 2);
    assert_eq!(offsets.runs(), &[OffsetRun { first: 5, count: 2 }]);
}

#[test]
fn merge_keeps_extreme_timestamps() {
    let a = one(hand_batch(
        Compression::None,
        0,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, i64::MAX, b"x"), raw(1, i64::MIN, b"y")],
    ));
    let b = one(hand_batch(
        Compression::None,
        2,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, -1, b"x"), raw(1, 0, b"y")],
    ));
    check_merge(&[a, b], &MergeOptions::new(1 << 20));
}

/// Input batches for the merge properties: (codec, records as (gap before, timestamp,
/// value length, keyed)), and the gap before the batch.
type MergeInput = (u8, Vec<(i32, i64, usize, bool)>, i64);

fn merge_input() -> impl Strategy<Value = MergeInput> {
    (
        prop_oneof![Just(0u8), Just(0u8), Just(3u8), Just(4u8), Just(1u8)],
        proptest::collection::vec(
            (
                prop_oneof![Just(0i32), Just(0), Just(0), 1i32..3],
                prop_oneof![1_700_000_000_000i64..1_700_000_100_000, any::<i64>()],
                0usize..300,
                any::<bool>(),
            ),
            0..25,
        ),
        prop_oneof![Just(0i64), Just(0), 1i64..100],
    )
}

fn build_inputs(specs: &[MergeInput]) -> Vec<Batch> {
    let mut next = 1_000i64;
    specs
        .iter()
        .map(|(codec, recs, gap)| {
            let codec = Compression::from_id(*codec).unwrap();
            let base = next + gap;
            let mut delta = -1;
            let raws: Vec<Raw> = recs
                .iter()
                .enumerate()
                .map(|(i, (g, ts, len, keyed))| {
                    delta += 1 + g;
                    let mut r = raw(delta, *ts, &vec![(i % 251) as u8; *len]);
                    if !keyed {
                        r.key = None;
                    }
                    if i % 3 == 0 {
                        r.headers = vec![Header {
                            key: Bytes::from_static(b"trace"),
                            value: Some(Bytes::from(vec![i as u8; i % 5])),
                        }];
                    }
                    r
                })
                .collect();
            // Compaction keeps the last offset delta; sometimes the gap is at the end.
            let last = delta + i32::from(recs.len() % 4 == 3);
            let last = last.max(0);
            next = base + i64::from(last) + 1;
            one(hand_batch(codec, base, last, 0, ProducerStamp::NONE, &raws))
        })
        .collect()
}

proptest! {
    #[test]
    fn merge_keeps_content_offsets_and_limits(
        specs in proptest::collection::vec(merge_input(), 0..12),
        max in prop_oneof![100usize..3_000, 3_000usize..40_000, Just(usize::MAX)],
        policy in prop_oneof![
            Just(CompressedPolicy::Never),
            Just(CompressedPolicy::RecompressFast),
            Just(CompressedPolicy::Recompress),
        ],
        pooled in any::<bool>(),
    ) {
        let inputs = build_inputs(&specs);
        let mut opts = MergeOptions::new(max).compressed(policy);
        if pooled {
            opts.buffers = BufferPool::new(4 << 20);
        }
        // Twice, so that the second pass writes into buffers the first one gave back.
        check_merge(&inputs, &opts);
        check_merge(&inputs, &opts);
    }

    #[test]
    fn merge_never_panics_on_mutated_inputs(
        specs in proptest::collection::vec(merge_input(), 1..5),
        flips in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 1..6),
        fix_crc in any::<bool>(),
    ) {
        let inputs = build_inputs(&specs);
        let mut raw: Vec<Vec<u8>> = inputs.iter().map(|b| b.as_bytes().to_vec()).collect();
        for (which, at, x) in flips {
            let b = &mut raw[which % inputs.len()];
            // Leave the framing (bytes 0..17) alone so that the batches still parse.
            let i = 17 + at % (b.len() - 17);
            b[i] ^= x;
            if fix_crc {
                let crc = crc32c::crc32c(&b[CRC_START..]);
                b[17..21].copy_from_slice(&crc.to_be_bytes());
            }
        }
        let mutated: Vec<Batch> = raw.into_iter().filter_map(|b| Batch::parse(Bytes::from(b)).ok()).collect();
        for policy in [CompressedPolicy::Never, CompressedPolicy::Recompress] {
            let _ = merge(&mutated, &MergeOptions::new(2_000).compressed(policy));
            let _ = merge(&mutated, &MergeOptions::new(usize::MAX).compressed(policy));
        }
    }
}
