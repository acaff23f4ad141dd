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

/// Bytes that are not a valid encoding of a map or of an incremental update.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Shorter than the smallest valid frame, or a field runs past the end.
    #[error("input is truncated: {0}")]
    Truncated(&'static str),
    /// The CRC-32C trailer does not match: the bytes were corrupted.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// Checksum stored in the frame.
        stored: u32,
        /// Checksum of the bytes as read.
        computed: u32,
    },
    /// A format version this build does not know.
    #[error("unknown encoding version {0} (this build reads versions 1 to {current})", current = VERSION)]
    UnknownVersion(u8),
    /// A frame kind other than the one asked for (e.g. a delta given as a snapshot).
    #[error("unexpected frame kind {found} (expected {expected})")]
    WrongKind {
        /// Kind byte found.
        found: u8,
        /// Kind byte expected.
        expected: u8,
    },
    /// A count above the decoder's cap or above what the remaining bytes could hold.
    #[error("{what} count {count} exceeds the cap {cap}")]
    TooMany {
        /// What was being counted.
        what: &'static str,
        /// Count read from the input.
        count: u64,
        /// Largest count accepted here.
        cap: u64,
    },
    /// Well-framed and checksummed, yet the content breaks the map's invariants.
    #[error("malformed content: {0}")]
    Malformed(&'static str),
    /// A varint longer than ten bytes or overflowing 64 bits.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// Bytes left over after the last field.
    #[error("{0} trailing bytes after the last field")]
    TrailingBytes(usize),
}

impl From<frame::FrameError> for DecodeError {
    fn from(e: frame::FrameError) -> Self {
        use frame::FrameError as F;
        match e {
            F::Truncated => DecodeError::Truncated("shorter than a frame"),
            F::Checksum { stored, computed } => DecodeError::Checksum { stored, computed },
            F::UnknownVersion { found, .. } => DecodeError::UnknownVersion(found),
            F::WrongKind { found, expected } => DecodeError::WrongKind { found, expected },
        }
    }
}

#[cfg(test)]
mod tests;
