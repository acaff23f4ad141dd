//! The vocabulary of changes to a map, the journal of changes not yet checkpointed, and
//! the checkpoints handed to the caller for the state topic.
//!
//! Every mutation of an [`OffsetMap`] is an [`Update`], applied by the same code live and
//! on replay, so a map rebuilt from a snapshot plus the deltas after it is identical to the
//! map that wrote them (coarsening included: it is deterministic given the budget).

use crate::encoding;
use crate::error::ReplayError;
use crate::map::OffsetMap;
use crate::side::Side;

/// One change to a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// `len` records at source offsets `source_start..` landed at target offsets
    /// `target_start..`.
    Append {
        /// First source offset.
        source_start: u64,
        /// Target offset of the first record.
        target_start: u64,
        /// Number of records.
        len: u64,
    },
    /// The replicator's positions moved past offsets that hold no replicated record
    /// (trailing control markers, aborted or filtered records on the source; its own
    /// transaction markers on the target).
    Advance {
        /// Next source offset the replicator will fetch.
        source_next: u64,
        /// Next target offset a replicated record can land at.
        target_next: u64,
    },
    /// A side's log start moved forward (retention, `DeleteRecords`).
    LogStart {
        /// Side whose log start moved.
        side: Side,
        /// The new log start.
        offset: u64,
    },
    /// A side's topic was recreated: everything the map knew is void.
    Recreated {
        /// Side whose topic was recreated.
        side: Side,
        /// Log start of the new topic (where replication continues on that side).
        log_start: u64,
        /// Where replication continues on the other side.
        counterpart_next: u64,
    },
}

/// Live updates kept for the next checkpoint before the journal gives up and asks for a
/// snapshot instead (at ~32 bytes each, 512 KiB; a snapshot is smaller than this many
/// deltas for any map within the default budget).
pub const MAX_PENDING_UPDATES: usize = 16_384;

/// Updates since the last checkpoint, coalesced so that a dense flow keeps one pending
/// update however many batches it appends.
#[derive(Clone, Debug, Default)]
pub(crate) struct Journal {
    /// Sequence number of the last checkpoint taken or replayed.
    pub(crate) seq: u64,
    pub(crate) pending: Vec<Update>,
    /// Too many pending updates: the next checkpoint must be a snapshot.
    pub(crate) overflowed: bool,
}

impl Journal {
    /// Records an update the map has just applied.
    pub(crate) fn record(&mut self, update: Update) {
        if self.overflowed {
            return;
        }
        if let Update::Append { .. } = update {
            // An advance followed by an append is implied by the append (both leave the
            // skipped offsets as a gap), so it need not be stored.
            if let Some(Update::Advance { .. }) = self.pending.last() {
                self.pending.pop();
            }
        }
        match (self.pending.last_mut(), update) {
            (
                Some(Update::Append {
                    source_start,
                    target_start,
                    len,
                }),
                Update::Append {
                    source_start: s,
                    target_start: t,
                    len: more,
                },
            ) if *source_start + *len == s && *target_start + *len == t => *len += more,
            (Some(last @ Update::Advance { .. }), Update::Advance { .. }) => *last = update,
            _ => self.pending.push(update),
        }
        if self.pending.len() > MAX_PENDING_UPDATES {
            self.pending = Vec::new();
            self.overflowed = true;
        }
    }
}

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

/// A decoded delta: a sequence number and the updates it carries. Only the map creates
/// them (see [`OffsetMap::take_checkpoint`]), so every delta encodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    pub(crate) seq: u64,
    pub(crate) updates: Vec<Update>,
}

impl Delta {
    /// Decodes a delta written by [`OffsetMap::take_checkpoint`]. The updates are checked
    /// for range here and against the map when applied.
    pub fn decode(bytes: &[u8]) -> Result<Delta, crate::DecodeError> {
        encoding::delta::decode(bytes)
    }

    /// Sequence number (one above the previous checkpoint's).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The updates, in the order they were applied.
    pub fn updates(&self) -> &[Update] {
        &self.updates
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
    /// [`MAX_PENDING_UPDATES`] accumulated. `None` when nothing changed.
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
