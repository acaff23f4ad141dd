//! Batch planning: one partition's fetched record set → the steps the pipeline takes.
//! Pure (no I/O), so every rule is unit-tested.
//!
//! Per batch, in offset order: batches wholly before the fetch position are ignored (a
//! broker may return a batch that starts before the offset asked for); every batch goes
//! through the aborted-transaction filter so its state follows the log; control batches
//! and aborted data become [`Step::Skip`]; a batch that starts before the position, has
//! gaps, is empty or exceeds the target's batch limit is re-encoded (the slow path);
//! everything else is forwarded as it is (the fast path; the producer patches the header).

use bytes::Bytes;
use strait_client::AbortedTxn;
use strait_records::{
    AbortedFilter, AbortedTransaction, Batch, BatchBuilder, Class, Compression, Limits, Record,
    ReencodeOptions, ReencodeReason, TxnVerdict, split,
};

/// What to do with (part of) a source batch.
#[derive(Debug, Clone)]
pub enum Step {
    /// Produce the source batch unchanged (fast path).
    Forward {
        /// The batch.
        batch: Batch,
        /// Its first source offset.
        source_first: i64,
        /// Records in it (dense: offsets `source_first..source_first + count`).
        count: i64,
    },
    /// Produce a re-encoded batch holding the records at `source_offsets`.
    Reencoded {
        /// The new batch.
        batch: Batch,
        /// Source offset of each record, increasing.
        source_offsets: Vec<i64>,
    },
    /// Nothing to produce: the source position moves to `source_next`.
    Skip {
        /// The new source position.
        source_next: i64,
    },
}

impl Step {
    /// Records this step writes to the target.
    pub fn records(&self) -> i64 {
        match self {
            Step::Forward { count, .. } => *count,
            Step::Reencoded { source_offsets, .. } => source_offsets.len() as i64,
            Step::Skip { .. } => 0,
        }
    }

    /// The source position after this step.
    pub fn source_next(&self) -> i64 {
        match self {
            Step::Forward {
                source_first,
                count,
                ..
            } => source_first + count,
            Step::Reencoded { source_offsets, .. } => {
                source_offsets.last().map_or(0, |o| o.saturating_add(1))
            }
            Step::Skip { source_next } => *source_next,
        }
    }
}

/// Why a batch took the slow path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlowReason {
    /// Compaction left gaps in its offsets.
    Gapped,
    /// Compaction removed every record.
    Empty,
    /// Larger than the target accepts.
    TooLarge,
    /// It starts before the fetch position (after a log-start move): the records before
    /// the position are left out.
    Partial,
}

impl SlowReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowReason::Gapped => "gapped",
            SlowReason::Empty => "empty",
            SlowReason::TooLarge => "too_large",
            SlowReason::Partial => "partial",
        }
    }
}

/// The steps for one record set, and what was counted on the way.
#[derive(Debug, Default)]
pub struct Plan {
    /// In order. Every source offset from the position to [`Plan::next_position`] is
    /// accounted for by exactly one step (or lies in a gap).
    pub steps: Vec<Step>,
    /// Where the next fetch starts: after the last complete batch.
    pub next_position: i64,
    /// Control batches dropped.
    pub dropped_control: u32,
    /// Aborted batches dropped.
    pub dropped_aborted: u32,
    /// Slow-path batches, by reason.
    pub slow: Vec<SlowReason>,
    /// Bytes of the partial batch trimmed at the end.
    pub trimmed: usize,
}

/// Why a record set could not be planned.
#[derive(Debug)]
pub struct PlanError {
    /// The source offset of the batch at fault.
    pub offset: i64,
    /// The records crate's error.
    pub source: strait_records::Error,
}

/// Plans `records` (one partition of a Fetch response) fetched from `position`.
pub fn plan(
    records: Bytes,
    aborted: &[AbortedTxn],
    position: i64,
    max_batch_bytes: usize,
    limits: &Limits,
) -> Result<Plan, PlanError> {
    let split = split(records, limits).map_err(|source| PlanError {
        offset: position,
        source,
    })?;
    let aborted: Vec<AbortedTransaction> = aborted
        .iter()
        .map(|a| AbortedTransaction {
            producer_id: a.producer_id,
            first_offset: a.first_offset,
        })
        .collect();
    let mut filter = AbortedFilter::new(&aborted, *limits);
    let mut plan = Plan {
        next_position: position,
        trimmed: split.trimmed,
        ..Plan::default()
    };
    for batch in split.batches {
        let h = *batch.header();
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let verdict = filter.check(&batch).map_err(err)?;
        let next = h.next_offset();
        if next <= plan.next_position {
            continue;
        }
        let from = plan.next_position;
        plan.next_position = next;
        match verdict {
            TxnVerdict::Control => {
                plan.dropped_control += 1;
                plan.steps.push(Step::Skip { source_next: next });
                continue;
            }
            TxnVerdict::Aborted => {
                plan.dropped_aborted += 1;
                plan.steps.push(Step::Skip { source_next: next });
                continue;
            }
            TxnVerdict::Keep => {}
        }
        if h.base_offset < from {
            plan.slow.push(SlowReason::Partial);
            batch.verify_crc().map_err(err)?;
            let mut kept = Vec::new();
            for r in batch.records(limits).map_err(err)? {
                let r = r.map_err(err)?;
                if r.offset >= from {
                    kept.push(r);
                }
            }
            build_pieces(&kept, h.compression(), max_batch_bytes, &mut plan.steps).map_err(err)?;
            plan.steps.push(Step::Skip { source_next: next });
            continue;
        }
        match batch.classify(max_batch_bytes) {
            Class::Forward => plan.steps.push(Step::Forward {
                source_first: h.base_offset,
                count: i64::from(h.records_count),
                batch,
            }),
            Class::Control => {
                plan.dropped_control += 1;
                plan.steps.push(Step::Skip { source_next: next });
            }
            Class::NeedsReencode(ReencodeReason::Empty) => {
                plan.slow.push(SlowReason::Empty);
                plan.steps.push(Step::Skip { source_next: next });
            }
            class => {
                plan.slow.push(if matches!(class, Class::TooLarge { .. }) {
                    SlowReason::TooLarge
                } else {
                    SlowReason::Gapped
                });
                batch.verify_crc().map_err(err)?;
                let options = ReencodeOptions {
                    compression: None,
                    max_batch_bytes: Some(max_batch_bytes),
                    limits: *limits,
                };
                for piece in batch.reencode(&options).map_err(err)? {
                    plan.steps.push(Step::Reencoded {
                        batch: piece.batch,
                        source_offsets: piece.source_offsets,
                    });
                }
                // Trailing records removed by compaction still move the position.
                plan.steps.push(Step::Skip { source_next: next });
            }
        }
    }
    Ok(plan)
}

/// Builds `records` into batches of at most `max` bytes (halving until each fits).
fn build_pieces(
    records: &[Record],
    codec: Compression,
    max: usize,
    out: &mut Vec<Step>,
) -> Result<(), strait_records::Error> {
    if records.is_empty() {
        return Ok(());
    }
    let mut builder = BatchBuilder::new(codec);
    for r in records {
        builder.push_record(r)?;
    }
    let batch = builder.build()?;
    if batch.size() > max && records.len() > 1 {
        let (left, right) = records.split_at(records.len() / 2);
        build_pieces(left, codec, max, out)?;
        return build_pieces(right, codec, max, out);
    }
    // A single record larger than `max` is produced anyway: the target's answer
    // (MESSAGE_TOO_LARGE) names the problem better than we could.
    out.push(Step::Reencoded {
        batch,
        source_offsets: records.iter().map(|r| r.offset).collect(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use strait_records::{BatchHeader, HEADER_LEN, ProducerStamp};

    /// A batch of `n` records (values "v<i>") at `base`, as a broker stores it.
    fn batch(base: i64, n: usize, codec: Compression) -> Bytes {
        let mut b = BatchBuilder::new(codec);
        for i in 0..n {
            let v = format!("v{}", base + i as i64);
            b.push(1_700_000_000_000, Some(b"k"), Some(v.as_bytes()), &[])
                .unwrap();
        }
        rebase(b.build().unwrap().into_bytes(), base, None)
    }

    /// Rewrites base offset (outside the CRC) and optionally the producer fields and
    /// attributes (inside it, so the CRC is recomputed).
    fn rebase(bytes: Bytes, base: i64, txn: Option<(i64, u16)>) -> Bytes {
        let mut b = BytesMut::from(&bytes[..]);
        b[0..8].copy_from_slice(&base.to_be_bytes());
        if let Some((pid, attrs)) = txn {
            let mut head = [0u8; HEADER_LEN];
            head.copy_from_slice(&b[..HEADER_LEN]);
            let mut h = BatchHeader::parse(&head, 0).unwrap();
            h.producer_id = pid;
            h.producer_epoch = 0;
            h.base_sequence = 0;
            h.attributes.0 |= attrs;
            b[..HEADER_LEN].copy_from_slice(&h.encode());
            let crc = crc32c::crc32c(&b[21..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        b.freeze()
    }

    fn concat(parts: &[Bytes]) -> Bytes {
        let mut b = BytesMut::new();
        for p in parts {
            b.extend_from_slice(p);
        }
        b.freeze()
    }

    #[test]
    fn dense_batches_are_forwarded_without_copying() {
        let set = concat(&[
            batch(0, 3, Compression::Lz4),
            batch(3, 2, Compression::None),
        ]);
        let p = plan(set.clone(), &[], 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.next_position, 5);
        assert_eq!(p.steps.len(), 2);
        match &p.steps[0] {
            Step::Forward {
                batch,
                source_first,
                count,
            } => {
                assert_eq!((*source_first, *count), (0, 3));
                assert_eq!(
                    batch.as_bytes().as_ptr(),
                    set.as_ptr(),
                    "a slice, not a copy"
                );
                // The producer will be able to patch it.
                batch.verify_and_patch(ProducerStamp::NONE).unwrap();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.steps[1].source_next(), 5);
        assert!(p.slow.is_empty());
    }

    #[test]
    fn batches_before_the_position_are_ignored_and_a_straddling_one_is_cut() {
        let set = concat(&[
            batch(0, 3, Compression::Gzip),
            batch(3, 4, Compression::Zstd),
        ]);
        let p = plan(set, &[], 5, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.slow, vec![SlowReason::Partial]);
        assert_eq!(p.next_position, 7);
        match &p.steps[0] {
            Step::Reencoded {
                batch,
                source_offsets,
            } => {
                assert_eq!(source_offsets, &vec![5, 6]);
                let values: Vec<_> = batch
                    .records(&Limits::default())
                    .unwrap()
                    .map(|r| r.unwrap().value.unwrap())
                    .collect();
                assert_eq!(values, vec![Bytes::from("v5"), Bytes::from("v6")]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.steps.last().unwrap().source_next(), 7);
    }

    #[test]
    fn too_large_batches_are_split_and_keep_their_source_offsets() {
        let set = batch(10, 40, Compression::None);
        let p = plan(set, &[], 10, 300, &Limits::default()).unwrap();
        assert_eq!(p.slow, vec![SlowReason::TooLarge]);
        let mut offsets: Vec<i64> = Vec::new();
        for s in &p.steps {
            if let Step::Reencoded {
                batch,
                source_offsets,
            } = s
            {
                assert!(batch.size() <= 300, "{}", batch.size());
                offsets.extend(source_offsets.iter().copied());
            }
        }
        assert!(p.steps.len() > 2);
        assert_eq!(offsets, (10..50).collect::<Vec<_>>());
        assert_eq!(p.next_position, 50);
    }

    #[test]
    fn control_and_aborted_batches_are_skipped_and_counted() {
        const TXN: u16 = 0x10;
        const CONTROL: u16 = 0x20;
        let committed = rebase(batch(0, 2, Compression::None), 0, Some((7, TXN)));
        let aborted = rebase(batch(2, 2, Compression::None), 2, Some((8, TXN)));
        // An abort marker: a control record with key version 0, type 0 (ABORT).
        let mut b = BatchBuilder::new(Compression::None);
        b.push(0, Some(&[0, 0, 0, 0]), Some(&[0, 0, 0, 0, 0, 0]), &[])
            .unwrap();
        let marker = rebase(b.build().unwrap().into_bytes(), 4, Some((8, TXN | CONTROL)));
        let after = batch(5, 1, Compression::None);
        let set = concat(&[committed, aborted, marker, after]);
        let aborted_list = [AbortedTxn {
            producer_id: 8,
            first_offset: 2,
        }];
        let p = plan(set, &aborted_list, 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!((p.dropped_aborted, p.dropped_control), (1, 1));
        let kinds: Vec<(i64, i64)> = p
            .steps
            .iter()
            .map(|s| (s.records(), s.source_next()))
            .collect();
        assert_eq!(kinds, vec![(2, 2), (0, 4), (0, 5), (1, 6)]);
    }

    #[test]
    fn partial_trailing_batch_is_left_for_the_next_fetch() {
        let whole = batch(0, 2, Compression::None);
        let next = batch(2, 2, Compression::None);
        let set = concat(&[whole, next.slice(..next.len() - 5)]);
        let p = plan(set, &[], 0, 1 << 20, &Limits::default()).unwrap();
        assert_eq!(p.next_position, 2);
        assert_eq!(p.steps.len(), 1);
        assert!(p.trimmed > 0);
    }

    #[test]
    fn corrupt_batch_on_the_slow_path_is_an_error() {
        let mut b = BytesMut::from(&batch(0, 3, Compression::None)[..]);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        let e = plan(b.freeze(), &[], 1, 1 << 20, &Limits::default()).unwrap_err();
        assert_eq!(e.offset, 0);
    }
}
