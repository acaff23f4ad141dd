//! Merging a run of uncompressed inputs: records rewritten straight into one buffer sized
//! up front, the next output started when an input does not fit, and the batch sealed
//! with the running CRC of its records section.

use std::ops::Range;

use super::{Merged, Writer, seal, unchanged};
use crate::error::Result;
use crate::header::{CRC_AT, CRC_START, Compression, HEADER_LEN};
use crate::pool::BufferPool;
use crate::split::Batch;

/// Seals the uncompressed batch `w` wrote after its [`HEADER_LEN`] bytes of room: the
/// header's CRC-covered fields combined with the running CRC of the records section, which
/// is not read again (computed in full when the running CRC does not cover it all).
fn seal_uncompressed(mut w: Writer, buffers: &BufferPool) -> Result<Batch> {
    let header = w.header(Compression::None, w.buf.len() - HEADER_LEN)?;
    w.buf[..HEADER_LEN].copy_from_slice(&header.encode());
    w.fold_crc();
    let Some((records_crc, _)) = w.crc.filter(|&(_, to)| to == w.buf.len()) else {
        return seal(w.buf, buffers);
    };
    let records = w.buf.len() - HEADER_LEN;
    let head = crc32c::crc32c(&w.buf[CRC_START..HEADER_LEN]);
    let crc = crc32c::crc32c_combine(head, records_crc, records);
    w.buf[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
    Batch::sealed(buffers.freeze(w.buf))
}

/// Emits the inputs `inputs` as one output: [`Merged::Unchanged`] for a lone input or when
/// no record was written, else the merged batch built by `build`.
fn emit(
    batches: &[Batch],
    inputs: Range<usize>,
    w: Writer,
    build: impl FnOnce(Writer) -> Result<Batch>,
    buffers: &BufferPool,
    out: &mut Vec<Merged>,
) -> Result<()> {
    if inputs.len() < 2 || w.count == 0 {
        buffers.put(w.buf);
        out.extend(inputs.map(|i| unchanged(batches, i)));
        return Ok(());
    }
    let source_offsets = w.offsets.clone();
    out.push(Merged::Rewritten {
        batch: build(w)?,
        source_offsets,
        inputs,
    });
    Ok(())
}

/// Capacity for an uncompressed merged batch starting at input `from`: what the inputs
/// that can join it hold (records grow by a byte or two when their offset delta does),
/// plus room for one input written past `max` and rolled back.
fn capacity(batches: &[Batch], run: Range<usize>, max: usize) -> usize {
    let mut total = HEADER_LEN;
    let mut largest = 0;
    for b in &batches[run] {
        let records = usize::try_from(b.header().records_count).unwrap_or(0);
        let size = b.size() - HEADER_LEN + 2 * records.min(b.size() / 7);
        largest = largest.max(size);
        total += size;
        if total > max {
            return max.saturating_add(largest);
        }
    }
    total
}

pub(super) fn merge_uncompressed(
    batches: &[Batch],
    run: Range<usize>,
    max: usize,
    buffers: &BufferPool,
    out: &mut Vec<Merged>,
) -> Result<()> {
    let build = |w: Writer| seal_uncompressed(w, buffers);
    let new_writer = |from: usize| {
        let mut buf = buffers.take(capacity(batches, from..run.end, max));
        buf.resize(HEADER_LEN, 0);
        Writer::new(buf)
    };
    let mut first = run.start;
    let mut w = new_writer(first);
    for i in run.clone() {
        let b = &batches[i];
        b.verify_crc()?;
        let payload = &b.as_bytes()[HEADER_LEN..];
        let mark = w.mark();
        w.append(b.header(), payload)?;
        if w.buf.len() > max && i > first {
            // It does not fit: close the batch before it and start the next one with it.
            w.rollback(mark);
            let done = std::mem::replace(&mut w, new_writer(i));
            emit(batches, first..i, done, build, buffers, out)?;
            first = i;
            w.append(b.header(), payload)?;
        }
        if w.buf.len() > max {
            // Alone and still too large once rewritten (it fitted as it was): leave it.
            buffers.put(std::mem::replace(&mut w, Writer::new(Vec::new())).buf);
            out.push(unchanged(batches, i));
            first = i + 1;
            if first < run.end {
                w = new_writer(first);
            }
        }
        // The input's records, just written, are still in cache.
        w.fold_crc();
    }
    if first < run.end {
        emit(batches, first..run.end, w, build, buffers, out)?;
    }
    Ok(())
}
