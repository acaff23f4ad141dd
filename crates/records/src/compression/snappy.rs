//! Snappy: xerial framing (what the Java client writes) and raw blocks (librdkafka).
//!
//! Xerial framing: `\x82SNAPPY\0`, version int32, compatible-version int32, then chunks of
//! `[int32 length][raw snappy block]`.

use snap::raw::{Decoder, Encoder, decompress_len, max_compress_len};

use super::corrupt;
use crate::error::{Error, Result};
use crate::header::Compression;

const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const HEADER_LEN: usize = 16;
/// xerial's `SnappyOutputStream` default block size.
const BLOCK: usize = 32 << 10;
/// No snappy element expands more than 64 bytes from 3 (a 2-byte-offset copy), so a block
/// declaring more than 22 times its size is corrupt.
const MAX_RATIO: usize = 22;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    out.reserve(HEADER_LEN + max_compress_len(data.len().min(BLOCK)));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut enc = Encoder::new();
    let mut scratch = vec![0u8; max_compress_len(BLOCK)];
    for chunk in data.chunks(BLOCK) {
        let n = enc
            .compress(chunk, &mut scratch)
            .map_err(std::io::Error::other)?;
        let len = i32::try_from(n).map_err(std::io::Error::other)?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&scratch[..n]);
    }
    Ok(())
}

pub(super) fn decompress(data: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut dec = Decoder::new();
    match data.strip_prefix(&MAGIC) {
        Some(rest) => {
            let mut rest = rest
                .get(HEADER_LEN - MAGIC.len()..)
                .ok_or_else(|| bad("truncated xerial header"))?;
            while !rest.is_empty() {
                let (len, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| bad("truncated xerial chunk length"))?;
                let len = usize::try_from(i32::from_be_bytes(*len))
                    .map_err(|_| bad("negative xerial chunk length"))?;
                let block = tail
                    .get(..len)
                    .ok_or_else(|| bad("truncated xerial chunk"))?;
                append_block(&mut dec, block, out, cap)?;
                rest = &tail[len..];
            }
        }
        None => append_block(&mut dec, data, out, cap)?,
    }
    Ok(())
}

fn append_block(dec: &mut Decoder, block: &[u8], out: &mut Vec<u8>, cap: usize) -> Result<()> {
    let codec = Compression::Snappy;
    let n = decompress_len(block).map_err(|e| corrupt(codec, e))?;
    if n > block.len().saturating_mul(MAX_RATIO) {
        return Err(bad("declared length impossible for the block size"));
    }
    if n > cap - out.len() {
        return Err(Error::DecompressedTooLarge { codec, cap });
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = dec
        .decompress(block, &mut out[start..])
        .map_err(|e| corrupt(codec, e))?;
    out.truncate(start + written);
    Ok(())
}

fn bad(reason: &'static str) -> Error {
    corrupt(Compression::Snappy, reason)
}

#[cfg(test)]
mod tests;
