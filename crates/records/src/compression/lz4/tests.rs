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

#[test]
fn the_reused_decoder_starts_clean_after_a_failure() {
    let text: Vec<u8> = b"strait ".iter().copied().cycle().take(200_000).collect();
    let mut frame = Vec::new();
    compress(&text, &mut frame).unwrap();
    let mut out = Vec::new();
    // Cut inside a block, then over the cap, then corrupt: each fails, and the next
    // frame on this thread still decodes whole.
    // The first block's size (bytes 7..11, little-endian) made larger than 64 KiB.
    let bad_block = {
        let mut f = frame.clone();
        f[9] ^= 0x10;
        f
    };
    for (input, cap) in [
        (&frame[..frame.len() / 2], 1 << 20),
        (&frame[..], text.len() - 1),
        (&bad_block[..], 1 << 20),
    ] {
        assert!(decompress(input, cap, &mut out).is_err());
        out.clear();
        decompress(&frame, 1 << 20, &mut out).unwrap();
        assert_eq!(out, text);
    }
}
