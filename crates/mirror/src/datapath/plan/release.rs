//! Releasing: one batch the resolver let go → its steps (forwarded, re-encoded, or
//! skipped), and the re-encoding of a batch that starts before the position.

use strait_records::{
    Batch, BatchBuilder, Class, Compression, Record, ReencodeOptions, ReencodeReason, Resolved,
    SkipReason,
};

use super::{Plan, PlanError, Planner, SlowReason, Step};

impl<P: Clone> Planner<P> {
    /// Plans one released batch, counting into `plan`; returns its steps.
    pub(super) fn release(
        &mut self,
        resolved: Resolved,
        plan: &mut Plan<P>,
    ) -> Result<Vec<Step>, PlanError> {
        let from = self.released_next;
        let batch = match resolved {
            Resolved::Skip(batch, reason) => {
                match reason {
                    SkipReason::Control => plan.dropped_control += 1,
                    SkipReason::Aborted => plan.dropped_aborted += 1,
                }
                let next = batch.header().next_offset();
                if next <= from {
                    return Ok(Vec::new());
                }
                self.released_next = next;
                return Ok(vec![Step::Skip { source_next: next }]);
            }
            Resolved::Forward(batch) => batch,
        };
        let h = *batch.header();
        let next = h.next_offset();
        if next <= from {
            return Ok(Vec::new());
        }
        let steps = if h.base_offset < from {
            self.partial(batch, from, plan)?
        } else {
            self.whole(batch, plan)?
        };
        self.released_next = next;
        Ok(steps)
    }

    /// The steps of a batch that starts before `from`: its records from `from` on,
    /// re-encoded (the slow path), then a skip to its end.
    fn partial(&self, batch: Batch, from: i64, plan: &mut Plan<P>) -> Result<Vec<Step>, PlanError> {
        let h = *batch.header();
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let mut steps = Vec::new();
        plan.slow.push(SlowReason::Partial);
        batch.verify_crc().map_err(err)?;
        let mut kept = Vec::new();
        for r in batch.records(&self.limits).map_err(err)? {
            let r = r.map_err(err)?;
            if r.offset >= from {
                kept.push(r);
            }
        }
        build_pieces(&kept, h.compression(), self.max_batch_bytes, &mut steps).map_err(err)?;
        steps.push(Step::Skip {
            source_next: h.next_offset(),
        });
        Ok(steps)
    }

    /// The steps of a batch wholly at or after the position, by its class: forwarded as
    /// it is, skipped (control, empty), or re-encoded (gapped, too large).
    fn whole(&self, batch: Batch, plan: &mut Plan<P>) -> Result<Vec<Step>, PlanError> {
        let h = *batch.header();
        let next = h.next_offset();
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let max = self.max_batch_bytes;
        let mut steps = Vec::new();
        match batch.classify(max) {
            Class::Forward => steps.push(Step::Forward {
                source_first: h.base_offset,
                count: i64::from(h.records_count),
                batch,
            }),
            Class::Control => {
                plan.dropped_control += 1;
                steps.push(Step::Skip { source_next: next });
            }
            Class::NeedsReencode(ReencodeReason::Empty) => {
                plan.slow.push(SlowReason::Empty);
                steps.push(Step::Skip { source_next: next });
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
                    max_batch_bytes: Some(max),
                    limits: self.limits,
                };
                for piece in batch.reencode(&options).map_err(err)? {
                    steps.push(Step::Reencoded {
                        batch: piece.batch,
                        source_offsets: piece.source_offsets,
                    });
                }
                // Trailing records removed by compaction still move the position.
                steps.push(Step::Skip { source_next: next });
            }
        }
        Ok(steps)
    }
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
