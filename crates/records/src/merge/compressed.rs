//! Merging a run of compressed inputs of one codec: grouped by size, decompressed into one
//! reused buffer, and recompressed with their codec (a group that still does not fit is
//! halved).

use std::ops::Range;

use super::{MergeOptions, Merged, Writer, seal, unchanged};
use crate::compression::{Effort, compress_into};
use crate::error::Result;
use crate::header::HEADER_LEN;
use crate::split::Batch;

pub(super) fn merge_compressed(
    batches: &[Batch],
    run: Range<usize>,
    max: usize,
    options: &MergeOptions,
    out: &mut Vec<Merged>,
) -> Result<()> {
    let limits = &options.limits;
    // Group by the compressed sizes as they are, up to three quarters of `max` (the inputs
    // may have been written at a higher level than `Effort::Fast`: zstd level 1 output is
    // a few to 15 % larger than level 3's), and by the decompressed size cap. Each input is
    // decompressed into one reused buffer and appended at once; a group whose recompressed
    // batch still does not fit is halved, which decompresses and compresses it again.
    let group_max = max - max / 4;
    let mut records = Vec::new();
    let mut start = run.start;
    let mut w = compressed_writer(group_max, options);
    let mut compressed = HEADER_LEN;
    let mut decompressed = 0usize;
    for i in run.clone() {
        let b = &batches[i];
        let payload_len = b.size() - HEADER_LEN;
        if i > start && compressed + payload_len > group_max {
            let full = std::mem::replace(&mut w, compressed_writer(group_max, options));
            recompress(batches, start..i, full, max, options, &mut records, out)?;
            (start, compressed, decompressed) = (i, HEADER_LEN, 0);
        }
        b.verify_crc()?;
        b.decompress_payload_into(limits, &mut records)?;
        if i > start && decompressed + records.len() > limits.max_decompressed_bytes {
            let full = std::mem::replace(&mut w, compressed_writer(group_max, options));
            recompress(batches, start..i, full, max, options, &mut records, out)?;
            (start, compressed, decompressed) = (i, HEADER_LEN, 0);
            // `recompress` may have used `records` to halve the group.
            b.decompress_payload_into(limits, &mut records)?;
        }
        w.append(b.header(), &records)?;
        compressed += payload_len;
        decompressed += records.len();
    }
    recompress(batches, start..run.end, w, max, options, &mut records, out)
}

/// A writer for the records of a group of compressed inputs of `group_max` bytes
/// (they usually expand less than twofold; the buffer grows otherwise).
fn compressed_writer(group_max: usize, options: &MergeOptions) -> Writer {
    let capacity = group_max
        .saturating_mul(2)
        .min(options.limits.max_decompressed_bytes);
    Writer::new(options.buffers.take(capacity))
}

/// Compresses the records `w` holds for the compressed inputs `inputs` into one batch of
/// their codec; when that exceeds `max`, does each half again (`records` is the buffer to
/// decompress their inputs into).
fn recompress(
    batches: &[Batch],
    inputs: Range<usize>,
    mut w: Writer,
    max: usize,
    options: &MergeOptions,
    records: &mut Vec<u8>,
    out: &mut Vec<Merged>,
) -> Result<()> {
    let buffers = &options.buffers;
    if inputs.len() < 2 || w.count == 0 {
        buffers.put(w.buf);
        out.extend(inputs.map(|i| unchanged(batches, i)));
        return Ok(());
    }
    let codec = batches[inputs.start].header().compression();
    // Compressed into a scratch buffer (sized for the records, which it may need), then
    // copied into one of its own size: the batch may stay in flight for a while.
    let mut scratch = buffers.take(HEADER_LEN + w.buf.len() / 2);
    scratch.resize(HEADER_LEN, 0);
    compress_into(codec, &w.buf, Effort::Fast, &mut scratch)?;
    let capacity = w.buf.capacity();
    buffers.put(std::mem::take(&mut w.buf));
    if scratch.len() > max {
        buffers.put(scratch);
        let mid = inputs.start + inputs.len() / 2;
        for half in [inputs.start..mid, mid..inputs.end] {
            let mut w = Writer::new(buffers.take(capacity));
            for i in half.clone() {
                batches[i].decompress_payload_into(&options.limits, records)?;
                w.append(batches[i].header(), records)?;
            }
            recompress(batches, half, w, max, options, records, out)?;
        }
        return Ok(());
    }
    let header = w.header(codec, scratch.len() - HEADER_LEN)?;
    scratch[..HEADER_LEN].copy_from_slice(&header.encode());
    let mut bytes = buffers.take(scratch.len());
    bytes.extend_from_slice(&scratch);
    buffers.put(scratch);
    let batch = seal(bytes, buffers)?;
    out.push(Merged::Rewritten {
        batch,
        source_offsets: w.offsets,
        inputs,
    });
    Ok(())
}
