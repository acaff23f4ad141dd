//! The frame Strait's binary encodings share (the offset maps' snapshots and deltas here,
//! the scale-out workers' group metadata in strait-mirror):
//!
//! ```text
//! version: u8 | kind: u8 | body | crc32c(version..body): u32 little-endian
//! ```
//!
//! Each encoding owns its version and kinds; the frame only checks them. [`unseal`] checks
//! the checksum first (damaged bytes are reported as damaged, not as an odd version), then
//! the version (an unknown one is refused, never guessed at), then the kind.

/// Bytes before the body: version and kind.
pub const HEADER: usize = 2;
/// Bytes after the body: the CRC-32C.
pub const TRAILER: usize = 4;

/// Why bytes are not a frame of the asked version and kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Shorter than an empty frame.
    #[error("shorter than a frame")]
    Truncated,
    /// The CRC-32C trailer does not match: the bytes were damaged, or are not a frame.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// Checksum stored in the trailer.
        stored: u32,
        /// Checksum of the bytes as read.
        computed: u32,
    },
    /// A version other than the one asked for.
    #[error("unknown encoding version {found} (this build reads version {expected})")]
    UnknownVersion {
        /// Version byte found.
        found: u8,
        /// Version expected.
        expected: u8,
    },
    /// A kind other than the one asked for.
    #[error("unexpected frame kind {found} (expected {expected})")]
    WrongKind {
        /// Kind byte found.
        found: u8,
        /// Kind expected.
        expected: u8,
    },
}

/// Starts a frame: the header, with room for `capacity` body bytes and the trailer.
pub fn open(version: u8, kind: u8, capacity: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(HEADER + capacity + TRAILER);
    buf.extend_from_slice(&[version, kind]);
    buf
}

/// Ends a frame started by [`open`] (header and body in `buf`): appends the trailer.
pub fn seal(mut buf: Vec<u8>) -> Vec<u8> {
    let crc = crc32c::crc32c(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    buf
}

/// Checks a frame and returns its body.
pub fn unseal(bytes: &[u8], version: u8, kind: u8) -> Result<&[u8], FrameError> {
    if bytes.len() < HEADER + TRAILER {
        return Err(FrameError::Truncated);
    }
    let (framed, trailer) = bytes.split_at(bytes.len() - TRAILER);
    let mut stored = [0u8; TRAILER];
    stored.copy_from_slice(trailer);
    let stored = u32::from_le_bytes(stored);
    let computed = crc32c::crc32c(framed);
    if stored != computed {
        return Err(FrameError::Checksum { stored, computed });
    }
    if framed[0] != version {
        return Err(FrameError::UnknownVersion {
            found: framed[0],
            expected: version,
        });
    }
    if framed[1] != kind {
        return Err(FrameError::WrongKind {
            found: framed[1],
            expected: kind,
        });
    }
    Ok(&framed[HEADER..])
}

#[cfg(test)]
mod tests;
