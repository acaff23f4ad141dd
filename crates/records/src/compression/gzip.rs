//! gzip, as `java.util.zip.GZIPOutputStream` writes it.

use std::io::Write;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::read_bounded;
use crate::error::Result;
use crate::header::Compression;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut enc = GzEncoder::new(out, flate2::Compression::default());
    enc.write_all(data)?;
    enc.finish().map(|_| ())
}

pub(super) fn decompress(data: &[u8], cap: usize) -> Result<Vec<u8>> {
    // Java's GZIPInputStream reads concatenated members; so do we.
    read_bounded(MultiGzDecoder::new(data), cap, Compression::Gzip)
}
