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

/// The encoding version this build writes (snapshots; deltas are unchanged since version
/// 1 and still written as 1). It reads every version from 1: version 2 added where
/// replication started to snapshots.
pub const VERSION: u8 = 2;

/// The version deltas are written in.
const DELTA_VERSION: u8 = 1;

const KIND_SNAPSHOT: u8 = 1;
const KIND_DELTA: u8 = 2;
pub(crate) use frame::seal;

/// Starts a frame of the given kind ([`frame::open`] at the version that kind is written
/// in).
fn open_frame(kind: u8, capacity: usize) -> Vec<u8> {
    let version = if kind == KIND_DELTA {
        DELTA_VERSION
    } else {
        VERSION
    };
    frame::open(version, kind, capacity)
}

/// Checks the frame ([`frame::unseal`] at any version this build reads) and returns its
/// version and body.
fn unseal(bytes: &[u8], kind: u8) -> Result<(u8, &[u8]), DecodeError> {
    let version = bytes.first().copied().unwrap_or(0).clamp(1, VERSION);
    frame::unseal(bytes, version, kind)
        .map(|body| (version, body))
        .map_err(DecodeError::from)
}

#[cfg(test)]
mod tests;
