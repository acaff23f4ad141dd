//! LZ4 in Kafka's framing: the standard LZ4 frame format (magic `0x184D2204`).
//!
//! The Java client writes 64 KiB independent blocks without checksums or content size;
//! librdkafka adds the content size. Both are ordinary frames for `lz4_flex`. (The broken
//! header checksum of KIP-57 only ever applied to magic 0 message sets.)

use std::cell::RefCell;
use std::io::{Cursor, Write};

use lz4_flex::frame::{BlockMode, BlockSize, FrameDecoder, FrameEncoder, FrameInfo};

use super::read_bounded;
use crate::error::Result;
use crate::header::Compression;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent);
    let mut enc = FrameEncoder::with_frame_info(info, out);
    enc.write_all(data)?;
    enc.finish().map(|_| ()).map_err(std::io::Error::other)
}

/// Compressed input kept by the reused decoder above this size is let go.
const KEPT_INPUT: usize = 1 << 20;

thread_local! {
    // One decoder per thread, reused from frame to frame: a new one allocates its block
    // buffers (128 KiB and more) for every batch, which musl's allocator maps and unmaps
    // each time (two mmap/munmap pairs per batch, as much system time as the rest of a
    // recompressing lz4 drain). It reads a copy of the batch's payload.
    static DECODER: RefCell<Option<FrameDecoder<Cursor<Vec<u8>>>>> = const { RefCell::new(None) };
}

pub(super) fn decompress(data: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<()> {
    DECODER.with_borrow_mut(|slot| {
        let decoder = slot.get_or_insert_with(|| FrameDecoder::new(Cursor::new(Vec::new())));
        let input = decoder.get_mut();
        input.get_mut().clear();
        input.get_mut().extend_from_slice(data);
        input.set_position(0);
        // Block buffers are bounded by the frame's block size (at most 4 MiB).
        let result = read_bounded(&mut *decoder, cap, Compression::Lz4, out);
        // A failed frame leaves the decoder inside it; a large input is not worth keeping.
        if result.is_err() || decoder.get_ref().get_ref().capacity() > KEPT_INPUT {
            *slot = None;
        }
        result
    })
}

#[cfg(test)]
mod tests;
