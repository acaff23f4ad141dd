//! The vocabulary of changes to a map and the journal of changes not yet checkpointed
//! (the checkpoints built from them are [`crate::checkpoint`]'s).
//!
//! Every mutation of an [`OffsetMap`](crate::OffsetMap) is an [`Update`], applied by the same code live and
//! on replay, so a map rebuilt from a snapshot plus the deltas after it is identical to the
//! map that wrote them (coarsening included: it is deterministic given the budget).

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

/// A decoded delta: a sequence number and the updates it carries. Only the map creates
/// them (see [`OffsetMap::take_checkpoint`](crate::OffsetMap::take_checkpoint)), so every delta encodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    pub(crate) seq: u64,
    pub(crate) updates: Vec<Update>,
}

impl Delta {
    /// Sequence number (one above the previous checkpoint's).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The updates, in the order they were applied.
    pub fn updates(&self) -> &[Update] {
        &self.updates
    }
}
