//! The slow path: rewriting a batch's records with dense offset deltas.

use crate::builder::BatchBuilder;
use crate::error::{Error, Result};
use crate::header::Compression;
use crate::record::Record;
use crate::split::{Batch, Limits};

/// How to re-encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReencodeOptions {
    /// Codec for the new batches; `None` keeps the source batch's codec.
    pub compression: Option<Compression>,
    /// Largest batch to produce; records are split over several batches to fit.
    pub max_batch_bytes: Option<usize>,
    /// Caps for decoding the source batch.
    pub limits: Limits,
}

/// One batch written by [`Batch::reencode`].
#[derive(Debug, Clone)]
pub struct Reencoded {
    /// The new batch: `baseOffset = 0`, dense offset deltas, no producer id, CreateTime,
    /// not transactional. Patch it like any other batch before producing.
    pub batch: Batch,
    /// Source offset of each record in the new batch, in order.
    pub source_offsets: Vec<i64>,
}

impl Batch {
    /// Re-encodes the batch's records with offset deltas `0..n`, keeping keys, values,
    /// headers and stored timestamps. Returns no batch when no record is left (an empty
    /// batch kept by compaction).
    ///
    /// Fails if the source's offset deltas are not strictly increasing within
    /// `0..=lastOffsetDelta`: the offset map could not be trusted.
    pub fn reencode(&self, options: &ReencodeOptions) -> Result<Vec<Reencoded>> {
        let h = self.header();
        let codec = options.compression.unwrap_or(h.compression());
        let mut records = Vec::new();
        let mut iter = self.records(&options.limits)?;
        let mut previous = -1;
        while let Some(item) = iter.next_with_delta() {
            let (record, delta) = item?;
            if delta <= previous || delta > h.last_offset_delta {
                return Err(Error::OffsetDeltaOutOfOrder {
                    index: records.len(),
                    delta,
                    previous,
                    last_offset_delta: h.last_offset_delta,
                }
                .in_batch(h.base_offset));
            }
            previous = delta;
            records.push(record);
        }
        let mut out = Vec::new();
        if !records.is_empty() {
            build_fitting(&records, codec, options.max_batch_bytes, &mut out)
                .map_err(|e| e.in_batch(h.base_offset))?;
        }
        Ok(out)
    }
}

/// Builds `records` as one batch, halving the run until each batch fits `max`.
fn build_fitting(
    records: &[Record],
    codec: Compression,
    max: Option<usize>,
    out: &mut Vec<Reencoded>,
) -> Result<()> {
    let mut builder = BatchBuilder::new(codec);
    for r in records {
        builder.push_record(r)?;
    }
    let batch = builder.build()?;
    match max {
        Some(limit) if batch.size() > limit => {
            if records.len() == 1 {
                return Err(Error::RecordTooLarge {
                    size: batch.size(),
                    limit,
                });
            }
            let (left, right) = records.split_at(records.len() / 2);
            build_fitting(left, codec, max, out)?;
            build_fitting(right, codec, max, out)
        }
        _ => {
            out.push(Reencoded {
                batch,
                source_offsets: records.iter().map(|r| r.offset).collect(),
            });
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
