//! gzip, as `java.util.zip.GZIPOutputStream` writes it.

use std::io::Write;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::{Effort, read_bounded};
use crate::error::Result;
use crate::header::Compression;

pub(super) fn compress(data: &[u8], out: &mut Vec<u8>, effort: Effort) -> std::io::Result<()> {
    let level = match effort {
        Effort::Default => flate2::Compression::default(),
        Effort::Fast => flate2::Compression::fast(),
    };
    let mut enc = GzEncoder::new(out, level);
    enc.write_all(data)?;
    enc.finish().map(|_| ())
}

pub(super) fn decompress(data: &[u8], cap: usize, out: &mut Vec<u8>) -> Result<()> {
    // Java's GZIPInputStream reads concatenated members; so do we.
    read_bounded(MultiGzDecoder::new(data), cap, Compression::Gzip, out)
}
