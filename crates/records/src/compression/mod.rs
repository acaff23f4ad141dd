//! Codecs for a batch's records section.
//!
//! Decompression is always bounded: output is read through a reader that stops one byte
//! past the cap, and no size declared inside the compressed data is trusted for allocation.
//! Writers follow the Java client: gzip at the default level, xerial-framed snappy with
//! 32 KiB blocks, LZ4 frames with 64 KiB independent blocks and no checksums, zstd level 3
//! ([`Effort::Default`]; merged batches are recompressed at zstd and gzip level 1,
//! [`Effort::Fast`]).

mod gzip;
mod lz4;
mod snappy;
mod zstd;

use std::io::{ErrorKind, Read};

use crate::error::{Error, Result};
use crate::header::Compression;

/// How hard a writer compresses. Only zstd and gzip have levels; lz4 and snappy write the
/// same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Effort {
    /// The Java client's levels: zstd 3, gzip 6.
    #[default]
    Default,
    /// zstd level 1 and gzip level 1: for recompressing merged batches, which only happens
    /// while the target lags, when CPU is what lets the replicator catch up.
    Fast,
}

/// Compresses a records section with `codec` (a copy for [`Compression::None`]).
pub fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    compress_into(codec, data, Effort::Default, &mut out)?;
    Ok(out)
}

/// Compresses a records section with `codec`, appending to `out` (so that a caller can
/// write the batch header first and the payload right after it, in one buffer).
pub fn compress_into(
    codec: Compression,
    data: &[u8],
    effort: Effort,
    out: &mut Vec<u8>,
) -> Result<()> {
    let fail = |e: std::io::Error| Error::Compress {
        codec,
        reason: e.to_string(),
    };
    match codec {
        Compression::None => {
            out.extend_from_slice(data);
            Ok(())
        }
        Compression::Gzip => gzip::compress(data, out, effort).map_err(fail),
        Compression::Snappy => snappy::compress(data, out).map_err(fail),
        Compression::Lz4 => lz4::compress(data, out).map_err(fail),
        Compression::Zstd => zstd::compress(data, out, effort).map_err(fail),
    }
}

/// Decompresses `data` with `codec`, failing if the output would exceed `cap` bytes.
pub fn decompress(codec: Compression, data: &[u8], cap: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decompress_into(codec, data, cap, &mut out)?;
    Ok(out)
}

/// Like [`decompress`], into `out` (emptied first; its capacity is reused).
pub fn decompress_into(
    codec: Compression,
    data: &[u8],
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    match codec {
        Compression::None if data.len() > cap => Err(Error::DecompressedTooLarge { codec, cap }),
        Compression::None => {
            out.extend_from_slice(data);
            Ok(())
        }
        Compression::Gzip => gzip::decompress(data, cap, out),
        Compression::Snappy => snappy::decompress(data, cap, out),
        Compression::Lz4 => lz4::decompress(data, cap, out),
        Compression::Zstd => zstd::decompress(data, cap, out),
    }
}

/// Reads `r` to the end into the empty `out`, which never grows past `cap + 1` bytes.
fn read_bounded(mut r: impl Read, cap: usize, codec: Compression, out: &mut Vec<u8>) -> Result<()> {
    let limit = cap.saturating_add(1);
    let mut filled = 0;
    loop {
        if filled == out.len() {
            if out.len() >= limit {
                break;
            }
            // Grow geometrically, but never past the limit (within a reused buffer's
            // capacity this only zeroes, about as much as is written).
            let grow = out.len().max(8 << 10).min(limit - out.len());
            out.resize(out.len() + grow, 0);
        }
        match r.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(codec, e)),
        }
    }
    if filled > cap {
        return Err(Error::DecompressedTooLarge { codec, cap });
    }
    out.truncate(filled);
    Ok(())
}

fn corrupt(codec: Compression, e: impl std::fmt::Display) -> Error {
    Error::Decompress {
        codec,
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests;
