//! Checkpoints: the journal handed out as encoded deltas and snapshots for the state
//! topic, and replayed into a map on restart.

use crate::encoding;
use crate::encoding::DecodeError;
use crate::error::MapError;
use crate::map::OffsetMap;
use crate::update::Delta;

/// Which kind of record a [`Checkpoint`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointKind {
    /// The whole map; replaces everything before it.
    Snapshot,
    /// The updates since the previous checkpoint.
    Delta,
}

/// Encoded state to write to the state topic.
///
/// Replay: decode the newest snapshot with [`OffsetMap::from_snapshot`], then apply every
/// later delta in sequence order with [`OffsetMap::replay`]. Deltas are not superseded by
/// later deltas, so a compacted topic must key them distinctly (e.g. by `seq`) and may
/// delete those at or below the newest snapshot's `seq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Snapshot or delta.
    pub kind: CheckpointKind,
    /// Sequence number: a delta's is one above the previous checkpoint's; a snapshot's
    /// covers every delta up to and including it.
    pub seq: u64,
    /// The encoded bytes (versioned, checksummed).
    pub bytes: Vec<u8>,
}

impl Delta {
    /// Decodes a delta written by [`OffsetMap::take_checkpoint`]. The updates are checked
    /// for range here and against the map when applied.
    pub fn decode(bytes: &[u8]) -> Result<Delta, DecodeError> {
        encoding::delta::decode(bytes)
    }
}

/// What replaying a delta did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replayed {
    /// The delta was applied.
    Applied,
    /// The map already includes it (its `seq` is at or below the map's); nothing changed.
    AlreadyIncluded,
}

impl OffsetMap {
    /// Sequence number of the last checkpoint taken from, or replayed into, this map.
    pub fn seq(&self) -> u64 {
        self.journal.seq
    }

    /// Number of updates not yet handed out in a checkpoint.
    pub fn pending_updates(&self) -> usize {
        self.journal.pending.len()
    }

    /// The updates since the last checkpoint, encoded: a delta, or a snapshot if more than
    /// [`crate::MAX_PENDING_UPDATES`] accumulated. `None` when nothing changed.
    pub fn take_checkpoint(&mut self) -> Option<Checkpoint> {
        if self.journal.overflowed {
            return Some(self.snapshot());
        }
        if self.journal.pending.is_empty() {
            return None;
        }
        let delta = Delta {
            seq: self.journal.seq + 1,
            updates: std::mem::take(&mut self.journal.pending),
        };
        self.journal.seq = delta.seq;
        Some(Checkpoint {
            kind: CheckpointKind::Delta,
            seq: delta.seq,
            bytes: encoding::delta::encode(&delta),
        })
    }

    /// The whole map, encoded. It includes the pending updates, so they are dropped from
    /// the journal; the sequence number moves on if there were any, so that deltas written
    /// before it are recognised as included.
    pub fn snapshot(&mut self) -> Checkpoint {
        self.begin_snapshot();
        self.encode_snapshot()
    }

    /// The journal half of [`OffsetMap::snapshot`].
    pub(crate) fn begin_snapshot(&mut self) {
        if self.journal.overflowed || !self.journal.pending.is_empty() {
            self.journal.seq += 1;
        }
        self.journal.pending = Vec::new();
        self.journal.overflowed = false;
    }

    /// The encoding half of [`OffsetMap::snapshot`].
    pub(crate) fn encode_snapshot(&self) -> Checkpoint {
        Checkpoint {
            kind: CheckpointKind::Snapshot,
            seq: self.journal.seq,
            bytes: encoding::snapshot::encode(self),
        }
    }

    /// Decodes and applies an encoded delta (see [`OffsetMap::apply_delta`]).
    pub fn replay(&mut self, bytes: &[u8]) -> Result<Replayed, ReplayError> {
        self.apply_delta(&Delta::decode(bytes)?)
    }

    /// Applies a durable delta: deltas at or below [`OffsetMap::seq`] are skipped, the next
    /// one is applied, a later one is a [`ReplayError::SequenceGap`]. Replay happens before
    /// any live update, so the journal must be empty. If an update is rejected the map
    /// holds the updates before it; treat the map as unusable.
    pub fn apply_delta(&mut self, delta: &Delta) -> Result<Replayed, ReplayError> {
        if !self.journal.pending.is_empty() || self.journal.overflowed {
            return Err(ReplayError::PendingUpdates(self.journal.pending.len()));
        }
        if delta.seq <= self.journal.seq {
            return Ok(Replayed::AlreadyIncluded);
        }
        if delta.seq != self.journal.seq + 1 {
            return Err(ReplayError::SequenceGap {
                applied: self.journal.seq,
                found: delta.seq,
            });
        }
        for (index, update) in delta.updates.iter().enumerate() {
            self.apply_unjournaled(*update)
                .map_err(|source| ReplayError::Rejected {
                    seq: delta.seq,
                    index,
                    source,
                })?;
        }
        self.journal.seq = delta.seq;
        Ok(Replayed::Applied)
    }
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
