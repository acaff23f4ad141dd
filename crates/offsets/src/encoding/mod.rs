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
use crate::frame;

/// The encoding version this build writes and reads.
pub const VERSION: u8 = 1;

const KIND_SNAPSHOT: u8 = 1;
const KIND_DELTA: u8 = 2;
pub(crate) use frame::seal;

/// Starts a frame of the given kind ([`frame::open`] at this encoding's version).
fn open_frame(kind: u8, capacity: usize) -> Vec<u8> {
    frame::open(VERSION, kind, capacity)
}

/// Checks the frame ([`frame::unseal`] at this encoding's version) and returns its body.
fn unseal(bytes: &[u8], kind: u8) -> Result<&[u8], DecodeError> {
    frame::unseal(bytes, VERSION, kind).map_err(DecodeError::from)
}

#[cfg(test)]
mod tests;
