//! LZ4 in Kafka's framing: the standard LZ4 frame format (magic `0x184D2204`).
//!
//! The Java client writes 64 KiB independent blocks without checksums or content size;
//! librdkafka adds the content size. Both are ordinary frames for `lz4_flex`. (The broken
//! header checksum of KIP-57 only ever applied to magic 0 message sets.)

use std::io::Write;

use lz4_flex::frame::{BlockMode, BlockSize, FrameDecoder, FrameEncoder, FrameInfo};

use super::read_bounded;
use crate::error::Result;
use crate::header::Compression;

pub(super) fn compress(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent);
    let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
    enc.write_all(data)?;
    enc.finish().map_err(std::io::Error::other)
}

pub(super) fn decompress(data: &[u8], cap: usize) -> Result<Vec<u8>> {
    // Block buffers are bounded by the frame's block size (at most 4 MiB).
    read_bounded(FrameDecoder::new(data), cap, Compression::Lz4)
}
