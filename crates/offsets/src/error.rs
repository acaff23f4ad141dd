//! Errors: rejected mutations, undecodable bytes, failed replays, registry conflicts.

use crate::side::Side;

/// A mutation the map refused. The map is unchanged when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// A batch with no records.
    #[error("a batch must contain at least one record")]
    EmptyBatch,
    /// An offset or position beyond [`MAX_OFFSET`](crate::MAX_OFFSET).
    #[error("{side:?} offset {offset} is out of range (offsets are non-negative i64)")]
    OutOfRange {
        /// Side the offset belongs to.
        side: Side,
        /// The offending value (for a batch: its end, `first + count`).
        offset: u64,
    },
    /// A record or position that would move a side backwards: below what the map already
    /// holds as replicated (records must be appended in order, positions never rewind).
    #[error("{side:?} offset {offset} is below the replicated position {next}")]
    Regression {
        /// Side that would move backwards.
        side: Side,
        /// The offending offset.
        offset: u64,
        /// The map's current next offset on that side.
        next: u64,
    },
    /// A re-encoded batch whose source offsets are not strictly increasing.
    #[error(
        "source offsets of a batch must be strictly increasing (found {previous} then {offset})"
    )]
    NotIncreasing {
        /// The earlier offset in the list.
        previous: u64,
        /// The offset that did not exceed it.
        offset: u64,
    },
    /// [`OffsetMap::start_at`](crate::OffsetMap::start_at) on a map that already moved.
    #[error("replication can only start on an empty map")]
    NotEmpty,
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
    #[error("unknown encoding version {0} (this build reads versions 1 to {current})", current = crate::encoding::VERSION)]
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

/// Replaying an incremental update onto a map failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The bytes did not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A delta is missing between the map's sequence number and this delta's.
    #[error("delta {found} does not follow {applied} (a delta is missing)")]
    SequenceGap {
        /// Sequence number the map has applied up to.
        applied: u64,
        /// Sequence number of the delta offered.
        found: u64,
    },
    /// The map has unflushed live updates, so replaying durable deltas would interleave
    /// two histories.
    #[error("the map has {0} unflushed updates; replay deltas before writing to it")]
    PendingUpdates(usize),
    /// An update in the delta was rejected by the map (the map holds the updates before it).
    #[error("update {index} of delta {seq} was rejected: {source}")]
    Rejected {
        /// Sequence number of the delta.
        seq: u64,
        /// Position of the update within the delta.
        index: usize,
        /// Why the map rejected it.
        source: MapError,
    },
}

/// A registry operation that conflicts with its current contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The partition already has a map (and therefore a writer).
    #[error("partition {topic}-{partition} is already registered")]
    AlreadyRegistered {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
    },
}

impl From<crate::frame::FrameError> for DecodeError {
    fn from(e: crate::frame::FrameError) -> Self {
        use crate::frame::FrameError as F;
        match e {
            F::Truncated => DecodeError::Truncated("shorter than a frame"),
            F::Checksum { stored, computed } => DecodeError::Checksum { stored, computed },
            F::UnknownVersion { found, .. } => DecodeError::UnknownVersion(found),
            F::WrongKind { found, expected } => DecodeError::WrongKind { found, expected },
        }
    }
}
