//! Compact, versioned, checksummed binary encodings of a whole map (snapshot) and of the
//! updates since the previous checkpoint (delta), for a compacted state topic.
//!
//! Frame (both kinds, stable across versions so that any version can be recognised):
//!
//! ```text
//! version: u8 | kind: u8 | body | crc32c(version..body): u32 little-endian
//! ```
//!
//! Bodies are LEB128 varints; offsets are stored as distances from the previous entry's
//! end, so a dense partition costs a few dozen bytes and a gapped one a few bytes per run.
//! Decoding checks the checksum, then the version and kind, caps every count by both a
//! constant and the bytes that remain, and validates the map's invariants; it never
//! panics on any input.

pub(crate) mod delta;
pub(crate) mod snapshot;
mod varint;

use crate::error::DecodeError;

/// The encoding version this build writes and reads.
pub const VERSION: u8 = 1;

const KIND_SNAPSHOT: u8 = 1;
const KIND_DELTA: u8 = 2;
const HEADER: usize = 2;
const TRAILER: usize = 4;

/// Wraps a body (written after the two header bytes already in `buf`) with its trailer.
fn seal(mut buf: Vec<u8>) -> Vec<u8> {
    let crc = crc32c::crc32c(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    buf
}

/// Starts a frame of the given kind.
fn open_frame(kind: u8, capacity: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(HEADER + capacity + TRAILER);
    buf.extend_from_slice(&[VERSION, kind]);
    buf
}

/// Checks the frame and returns its body.
fn unseal(bytes: &[u8], kind: u8) -> Result<&[u8], DecodeError> {
    if bytes.len() < HEADER + TRAILER {
        return Err(DecodeError::Truncated("shorter than a frame"));
    }
    let (framed, trailer) = bytes.split_at(bytes.len() - TRAILER);
    let mut stored = [0u8; TRAILER];
    stored.copy_from_slice(trailer);
    let stored = u32::from_le_bytes(stored);
    let computed = crc32c::crc32c(framed);
    if stored != computed {
        return Err(DecodeError::Checksum { stored, computed });
    }
    if framed[0] != VERSION {
        return Err(DecodeError::UnknownVersion(framed[0]));
    }
    if framed[1] != kind {
        return Err(DecodeError::WrongKind {
            found: framed[1],
            expected: kind,
        });
    }
    Ok(&framed[HEADER..])
}

#[cfg(test)]
mod tests;
