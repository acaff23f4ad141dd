//! Coalescing many small consecutive batches of one partition into fewer large ones.
//!
//! When the replication engine's in-flight window is full on a high-latency link, it can
//! trade a little CPU for far fewer Produce round trips by merging the queued 16 KiB source
//! batches into batches of up to the target's `max.message.bytes`. [`merge`] does that:
//!
//! - **Uncompressed inputs** are merged without decoding keys, values or headers: for each
//!   record only the leading varints (length, attributes, timestampDelta, offsetDelta) are
//!   read; offsetDelta is renumbered `0..n`, timestampDelta is made relative to the merged
//!   batch's `baseTimestamp` (so every record keeps its absolute timestamp), the length is
//!   rewritten, and the rest of the record is copied as it is. Each output is one
//!   allocation sized up front and written in one pass over the inputs; its CRC is taken
//!   input by input as the records are written, not in a second pass over the batch.
//! - **Compressed inputs** follow [`CompressedPolicy`]: left as they are, or decompressed
//!   (bounded by [`Limits::max_decompressed_bytes`]), merged the same way and recompressed
//!   with their codec. Batches of different codecs are never merged together.
//!
//! A merged batch is what a producer would write: `baseOffset = 0`, offset deltas `0..n`,
//! `lastOffsetDelta = n - 1`, `recordsCount = n`, `baseTimestamp` = the first record's
//! timestamp, `maxTimestamp` = the largest, CreateTime, not transactional, no producer id
//! (patch it with [`crate::Batch::verify_and_patch`] like any other batch, or build the
//! final header around it). The source offset of every record it holds is reported in a
//! [`SourceOffsets`]: runs of consecutive offsets, one per input batch in the common case
//! and a single run when the inputs have no gaps between them.
//!
//! The timestamp base is the first record's timestamp rather than the smallest input
//! `baseTimestamp`: both keep absolute timestamps exact (deltas are wrapping `varlong`s),
//! the first is what producers write, and it is known before later inputs are read, so
//! every record is rewritten once.
//!
//! This file holds the options, the outputs, [`merge`] itself and the record rewriting
//! (`Writer`); child files hold [`SourceOffsets`] (`offsets`) and the merging of a run of
//! uncompressed (`uncompressed`) or compressed (`compressed`) inputs.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::header::{
    Attributes, BatchHeader, CRC_AT, CRC_START, Compression, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2,
};
use crate::pool::BufferPool;
use crate::split::{Batch, Limits};
use crate::varint::{
    read_varint, read_varlong, varint_len, varlong_len, write_varint, write_varlong,
};

mod compressed;
mod offsets;
mod uncompressed;

pub use offsets::{OffsetRun, SourceOffsets};

/// What [`merge`] does with compressed input batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompressedPolicy {
    /// Leave compressed batches as they are ([`Merged::Unchanged`]); only uncompressed
    /// batches are merged. No codec work at all.
    #[default]
    Never,
    /// Recompress lz4, snappy and zstd batches (zstd at level 1), codecs that compress at
    /// hundreds of MB/s per core; gzip batches are left as they are.
    RecompressFast,
    /// Decompress consecutive batches of one codec, merge their records and recompress
    /// the result with that codec (at [`crate::compression::Effort::Fast`] levels).
    Recompress,
}

impl CompressedPolicy {
    /// Whether batches compressed with `codec` may be merged under this policy
    /// (uncompressed ones always may).
    pub fn merges(self, codec: Compression) -> bool {
        matches!(
            (self, codec),
            (_, Compression::None)
                | (CompressedPolicy::Recompress, _)
                | (
                    CompressedPolicy::RecompressFast,
                    Compression::Lz4 | Compression::Snappy | Compression::Zstd
                )
        )
    }
}

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Largest merged batch, in bytes, header included (the target topic's
    /// `max.message.bytes`). An input larger than this is passed through unchanged.
    pub max_bytes: usize,
    /// Largest compressed input merged, in bytes, header included: a larger one is passed
    /// through unchanged, since decompressing and recompressing it costs more CPU than the
    /// requests merging saves (`usize::MAX` by default: any that fits in `max_bytes`).
    /// Uncompressed inputs are only copied, and are merged at any size.
    pub max_compressed_input_bytes: usize,
    /// What to do with compressed inputs.
    pub compressed: CompressedPolicy,
    /// Caps for decompressing inputs. With [`CompressedPolicy::Recompress`],
    /// `max_decompressed_bytes` also caps the uncompressed records of one merged batch.
    pub limits: Limits,
    /// Where merged batches' buffers come from and go back to once every reference to
    /// the batch is dropped (by default nothing is kept: each is a new allocation).
    pub buffers: BufferPool,
}

impl MergeOptions {
    /// Merge into batches of at most `max_bytes`, leaving compressed batches alone.
    pub fn new(max_bytes: usize) -> MergeOptions {
        MergeOptions {
            max_bytes,
            max_compressed_input_bytes: usize::MAX,
            compressed: CompressedPolicy::Never,
            limits: Limits::default(),
            buffers: BufferPool::default(),
        }
    }

    /// The same options with another policy for compressed inputs.
    pub fn compressed(self, compressed: CompressedPolicy) -> MergeOptions {
        MergeOptions { compressed, ..self }
    }

    /// The same options merging only compressed inputs of at most
    /// `max_compressed_input_bytes`.
    pub fn compressed_inputs_up_to(self, max_compressed_input_bytes: usize) -> MergeOptions {
        MergeOptions {
            max_compressed_input_bytes,
            ..self
        }
    }

    /// Whether an input of `size` bytes compressed with `codec` may be merged at all.
    pub fn admits(&self, size: usize, codec: Compression) -> bool {
        let max = self.max_bytes.min(LOG_OVERHEAD + i32::MAX as usize);
        let max = match codec {
            Compression::None => max,
            _ => max.min(self.max_compressed_input_bytes),
        };
        size <= max && self.compressed.merges(codec)
    }
}

/// One output of [`merge`], in input order.
#[derive(Debug, Clone)]
pub enum Merged {
    /// A new batch holding the records of the input batches `inputs`, in order.
    Rewritten {
        /// The merged batch: `baseOffset = 0`, dense offset deltas, no producer id,
        /// CreateTime, not transactional, the inputs' codec, a valid CRC-32C.
        batch: Batch,
        /// Source offset of each record of `batch`.
        source_offsets: SourceOffsets,
        /// Indices of the input batches it replaces (at least two).
        inputs: Range<usize>,
    },
    /// Input batch `index`, left as it is: handle it as if there were no merging
    /// (classify, patch or re-encode). This happens to a compressed batch under
    /// [`CompressedPolicy::Never`] or larger than `max_compressed_input_bytes`, a batch larger
    /// than `max_bytes`, a batch whose
    /// neighbours did not fit with it, and batches without records that had no neighbour
    /// to merge with.
    Unchanged {
        /// The input batch (a cheap clone).
        batch: Batch,
        /// Its index in the input slice.
        index: usize,
    },
}

impl Merged {
    /// The batch to go on with.
    pub fn batch(&self) -> &Batch {
        match self {
            Merged::Rewritten { batch, .. } | Merged::Unchanged { batch, .. } => batch,
        }
    }

    /// Indices of the input batches this output covers.
    pub fn inputs(&self) -> Range<usize> {
        match self {
            Merged::Rewritten { inputs, .. } => inputs.clone(),
            Merged::Unchanged { index, .. } => *index..index + 1,
        }
    }
}

/// Merges consecutive batches of one partition, given in offset order, into as few
/// batches of at most `options.max_bytes` as the inputs allow.
///
/// Outputs cover the inputs in order, each input exactly once. Inputs may have gaps
/// between them (and within them, as compaction leaves): the merged batch is dense and
/// [`SourceOffsets`] says where each record came from. A run of inputs is merged while
/// the codec stays the same and the result fits; an input that would not fit starts the
/// next output. An output that would hold a single input is that input,
/// [`Merged::Unchanged`] (no copy).
///
/// Every input that is merged has its CRC-32C verified (a merged batch gets a fresh CRC,
/// which must not launder corruption), its records framing checked (lengths, the four
/// leading fields, `recordsCount`, offset deltas strictly increasing within
/// `0..=lastOffsetDelta`); keys, values and headers are copied unread.
///
/// Fails, without partial output, on: a control or transactional batch
/// ([`Error::NotMergeable`]; the caller merges only forwardable data), a batch that
/// starts before the previous one ends ([`Error::MergeOutOfOrder`]), and any CRC,
/// framing or codec error of an input it had to read. The caller can then fall back to
/// handling the batches one by one, which reports the error on the batch it concerns.
pub fn merge(batches: &[Batch], options: &MergeOptions) -> Result<Vec<Merged>> {
    check_inputs(batches)?;
    // batchLength is an i32.
    let max = options.max_bytes.min(LOG_OVERHEAD + i32::MAX as usize);
    let mut out = Vec::new();
    let mut i = 0;
    while i < batches.len() {
        let codec = batches[i].header().compression();
        if !options.admits(batches[i].size(), codec) {
            out.push(unchanged(batches, i));
            i += 1;
            continue;
        }
        // The run of inputs that may join this one: same codec, each admitted on its own.
        let run_end = (i..batches.len())
            .find(|&j| {
                let b = &batches[j];
                b.header().compression() != codec || !options.admits(b.size(), codec)
            })
            .unwrap_or(batches.len());
        if codec == Compression::None {
            uncompressed::merge_uncompressed(batches, i..run_end, max, &options.buffers, &mut out)?;
        } else {
            compressed::merge_compressed(batches, i..run_end, max, options, &mut out)?;
        }
        i = run_end;
    }
    Ok(out)
}

fn unchanged(batches: &[Batch], index: usize) -> Merged {
    Merged::Unchanged {
        batch: batches[index].clone(),
        index,
    }
}

/// Rejects control and transactional batches and batches out of offset order, before any
/// work is done.
fn check_inputs(batches: &[Batch]) -> Result<()> {
    let mut next: Option<i64> = None;
    for b in batches {
        let h = b.header();
        let reason = if h.attributes.is_control() {
            Some("control batch")
        } else if h.attributes.is_transactional() {
            Some("transactional batch")
        } else if h.last_offset_delta < 0 {
            Some("negative lastOffsetDelta")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(Error::NotMergeable {
                base_offset: h.base_offset,
                reason,
            });
        }
        if let Some(next) = next
            && h.base_offset < next
        {
            return Err(Error::MergeOutOfOrder {
                base_offset: h.base_offset,
                expected_at_least: next,
            });
        }
        next = Some(
            h.base_offset
                .checked_add(i64::from(h.last_offset_delta) + 1)
                .ok_or(Error::NotMergeable {
                    base_offset: h.base_offset,
                    reason: "offsets overflow",
                })?,
        );
    }
    Ok(())
}

/// A merged batch being written: the records section in `buf` after `start` bytes (the
/// header's room for uncompressed output, nothing when the section is compressed later).
struct Writer {
    buf: Vec<u8>,
    count: i32,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    offsets: SourceOffsets,
    /// `(crc, to)`: the CRC-32C of `buf[start..to]`, the start being the buffer's length
    /// when the writer was made, taken by [`Writer::fold_crc`] while those bytes are still
    /// in cache, so that sealing an uncompressed batch reads only its header again. `None`
    /// once it no longer describes the buffer (sealing then reads it all).
    crc: Option<(u32, usize)>,
}

/// Everything needed to undo the last [`Writer::append`].
struct Mark {
    buf: usize,
    count: i32,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    offsets: (usize, u32, usize),
    crc: Option<(u32, usize)>,
}

impl Writer {
    fn new(buf: Vec<u8>) -> Writer {
        Writer {
            crc: Some((0, buf.len())),
            buf,
            count: 0,
            base_timestamp: None,
            max_timestamp: i64::MIN,
            offsets: SourceOffsets::default(),
        }
    }

    /// Extends the running CRC over the bytes appended since the last call.
    fn fold_crc(&mut self) {
        self.crc = self.crc.and_then(|(crc, to)| {
            let new = self.buf.get(to..)?;
            Some((crc32c::crc32c_append(crc, new), self.buf.len()))
        });
    }

    fn mark(&self) -> Mark {
        Mark {
            buf: self.buf.len(),
            count: self.count,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            offsets: self.offsets.mark(),
            crc: self.crc,
        }
    }

    fn rollback(&mut self, m: Mark) {
        self.buf.truncate(m.buf);
        self.count = m.count;
        self.base_timestamp = m.base_timestamp;
        self.max_timestamp = m.max_timestamp;
        self.offsets.rollback(m.offsets);
        // A running CRC over bytes that are gone describes nothing.
        self.crc = m.crc.filter(|&(_, to)| to <= self.buf.len());
    }

    /// Appends the records of one input, `records` being its (decompressed) records
    /// section, renumbering offset deltas and rebasing timestamp deltas. Reads only each
    /// record's length, attributes, timestampDelta and offsetDelta; copies the rest.
    fn append(&mut self, h: &BatchHeader, records: &[u8]) -> Result<()> {
        self.append_inner(h, records)
            .map_err(|e| e.in_batch(h.base_offset))
    }

    fn append_inner(&mut self, h: &BatchHeader, records: &[u8]) -> Result<()> {
        let count = usize::try_from(h.records_count).map_err(|_| Error::InvalidRecordCount {
            count: h.records_count,
            len: records.len(),
        })?;
        let mut pos = 0usize;
        let mut previous = -1i32;
        // A lying recordsCount ends at the first record that is not there, before any
        // allocation depends on it.
        for index in 0..count {
            let fail = |position: usize, reason: &'static str| Error::InvalidRecord {
                index,
                position,
                reason,
            };
            let rest = records.get(pos..).unwrap_or_default();
            let (len, n) = read_varint(rest).map_err(|e| fail(pos, e.reason()))?;
            let body_at = pos + n;
            let body = usize::try_from(len)
                .ok()
                .and_then(|len| n.checked_add(len))
                .and_then(|end| rest.get(n..end))
                .ok_or_else(|| fail(pos, "record length exceeds the records section"))?;
            let (&attributes, fields) = body
                .split_first()
                .ok_or_else(|| fail(body_at, "truncated record"))?;
            let (timestamp_delta, ts_n) =
                read_varlong(fields).map_err(|e| fail(body_at + 1, e.reason()))?;
            let (offset_delta, off_n) =
                read_varint(&fields[ts_n..]).map_err(|e| fail(body_at + 1 + ts_n, e.reason()))?;
            let tail = &fields[ts_n + off_n..];
            if offset_delta <= previous || offset_delta > h.last_offset_delta {
                return Err(Error::OffsetDeltaOutOfOrder {
                    index,
                    delta: offset_delta,
                    previous,
                    last_offset_delta: h.last_offset_delta,
                });
            }
            previous = offset_delta;
            let offset = h
                .base_offset
                .checked_add(i64::from(offset_delta))
                .ok_or_else(|| fail(body_at, "offset overflows"))?;
            if self.count == i32::MAX {
                return Err(Error::BatchOverflow {
                    reason: "more than i32::MAX records",
                });
            }
            // Wrapping, as the Java client computes it: absolute timestamps stay exact.
            let timestamp = h.base_timestamp.wrapping_add(timestamp_delta);
            let base = *self.base_timestamp.get_or_insert(timestamp);
            let new_ts_delta = timestamp.wrapping_sub(base);
            let new_len = 1 + varlong_len(new_ts_delta) + varint_len(self.count) + tail.len();
            let new_len = i32::try_from(new_len).map_err(|_| Error::BatchOverflow {
                reason: "record larger than 2 GiB",
            })?;
            write_varint(&mut self.buf, new_len);
            self.buf.push(attributes);
            write_varlong(&mut self.buf, new_ts_delta);
            write_varint(&mut self.buf, self.count);
            self.buf.extend_from_slice(tail);
            self.max_timestamp = self.max_timestamp.max(timestamp);
            self.count += 1;
            self.offsets.push(offset);
            pos = body_at + body.len();
        }
        if pos != records.len() {
            return Err(Error::TrailingBytes {
                remaining: records.len() - pos,
                count,
            });
        }
        Ok(())
    }

    /// The header of the finished batch, `payload_len` being the records section's size
    /// as stored. The CRC field is left 0.
    fn header(&self, codec: Compression, payload_len: usize) -> Result<BatchHeader> {
        let batch_length =
            i32::try_from(HEADER_LEN - LOG_OVERHEAD + payload_len).map_err(|_| {
                Error::BatchOverflow {
                    reason: "batchLength above i32::MAX",
                }
            })?;
        Ok(BatchHeader {
            base_offset: 0,
            batch_length,
            partition_leader_epoch: -1,
            magic: MAGIC_V2,
            crc: 0,
            attributes: Attributes(u16::from(codec.id())),
            last_offset_delta: self.count - 1,
            base_timestamp: self.base_timestamp.unwrap_or(-1),
            max_timestamp: self.max_timestamp,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            records_count: self.count,
        })
    }
}

/// Writes the CRC into a whole batch and wraps it (its buffer goes back to `buffers` once
/// the batch is dropped).
fn seal(mut bytes: Vec<u8>, buffers: &BufferPool) -> Result<Batch> {
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
    Batch::sealed(buffers.freeze(bytes))
}

#[cfg(test)]
mod tests;
