//! Errors: rejected mutations and registry conflicts (undecodable bytes are the
//! encoding's own [`DecodeError`](crate::DecodeError), a failed replay the checkpoint's
//! [`ReplayError`](crate::ReplayError)).

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
