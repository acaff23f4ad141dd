//! Zstandard, as zstd-jni and librdkafka write it.

use ::zstd::stream::read::Decoder;

use super::{corrupt, read_bounded};
use crate::error::Result;
use crate::header::Compression;

/// The Java client's default level.
const LEVEL: i32 = 3;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    let start = out.len();
    out.resize(start + ::zstd::zstd_safe::compress_bound(data.len()), 0);
    let written = ::zstd::bulk::compress_to_buffer(data, &mut out[start..], LEVEL);
    out.truncate(start + written.as_ref().map_or(0, |n| *n));
    written.map(|_| ())
}

/// Largest window accepted: enough for every level up to 19, and at least the cap.
fn window_log_max(cap: usize) -> u32 {
    let needed = usize::BITS - cap.max(1 << 23).saturating_sub(1).leading_zeros();
    needed.min(31)
}

pub(super) fn decompress(data: &[u8], cap: usize) -> Result<Vec<u8>> {
    let codec = Compression::Zstd;
    let mut dec = Decoder::with_buffer(data).map_err(|e| corrupt(codec, e))?;
    // The window is allocated from the frame header; bound it so a forged header cannot
    // make the decoder reserve more than the cap.
    dec.window_log_max(window_log_max(cap))
        .map_err(|e| corrupt(codec, e))?;
    read_bounded(dec, cap, codec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bound() {
        assert_eq!(window_log_max(0), 23);
        assert_eq!(window_log_max(64 << 20), 26);
        assert_eq!(window_log_max((64 << 20) + 1), 27);
        assert_eq!(window_log_max(usize::MAX), 31);
    }
}
