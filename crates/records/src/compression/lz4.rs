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

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent);
    let mut enc = FrameEncoder::with_frame_info(info, out);
    enc.write_all(data)?;
    enc.finish().map(|_| ()).map_err(std::io::Error::other)
}

pub(super) fn decompress(data: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<()> {
    // Block buffers are bounded by the frame's block size (at most 4 MiB).
    read_bounded(FrameDecoder::new(data), cap, Compression::Lz4, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the Java client's `Lz4BlockOutputStream` writes for a v2 batch: magic, FLG
    /// 0x60 (version 1, independent blocks, no checksums, no content size), BD 0x40
    /// (64 KiB blocks), header checksum 0x82.
    const JAVA_HEADER: [u8; 7] = [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];

    #[test]
    fn writes_the_java_clients_frame_header() {
        let mut z = Vec::new();
        compress(b"hello hello hello hello", &mut z).unwrap();
        assert_eq!(z[..7], JAVA_HEADER);
        // Ends with the end mark and no content checksum.
        assert_eq!(z[z.len() - 4..], [0, 0, 0, 0]);
    }

    #[test]
    fn reads_a_frame_laid_out_like_the_java_client() {
        // One compressed block, then one stored raw (size high bit set), as Java does
        // when compression does not pay, then the end mark.
        let text: Vec<u8> = b"kafka ".iter().copied().cycle().take(65_536).collect();
        let noise: Vec<u8> = (0u32..1000)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut frame = JAVA_HEADER.to_vec();
        let block = lz4_flex::block::compress(&text);
        frame.extend_from_slice(&(block.len() as u32).to_le_bytes());
        frame.extend_from_slice(&block);
        frame.extend_from_slice(&(noise.len() as u32 | 0x8000_0000).to_le_bytes());
        frame.extend_from_slice(&noise);
        frame.extend_from_slice(&[0, 0, 0, 0]);
        let mut want = text;
        want.extend_from_slice(&noise);
        assert_eq!(
            crate::compression::decompress(Compression::Lz4, &frame, want.len()).unwrap(),
            want
        );
    }
}
