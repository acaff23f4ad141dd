//! The per-partition offset map: runs, coarse history, positions and log starts, and the
//! mutations that keep them consistent.

use std::collections::VecDeque;

use crate::coarsen::{self, Segment};
use crate::error::MapError;
use crate::run::Run;
use crate::side::{MAX_OFFSET, Side};
use crate::update::{Journal, Update};

/// Default per-partition budget of entries (runs plus coarse segments).
///
/// A run takes 24 bytes and a coarse segment 40, so a partition at the budget holds 2.4 MB
/// of runs, about 3.5 MB once coarsening has started. Dense partitions need one run whatever their size;
/// the budget only binds on gapped ones: at a gap every 10 records (compacted or
/// transactional topics) it keeps the newest million records exact, and rounds down
/// (bounded, see [`crate::Precision`]) beyond.
pub const DEFAULT_RUN_BUDGET: usize = 100_000;

/// Smallest budget accepted; smaller values are raised to it (coarsening merges pairs of
/// the oldest half, which needs a few entries to work with).
pub const MIN_RUN_BUDGET: usize = 4;

/// Sparse source→target offset map of one partition.
///
/// Holds, in order: coarse segments (old history past the budget, translation rounds down),
/// then exact runs. Both are sorted and disjoint on both sides. Alongside them it tracks,
/// per side, the replicated end (`next`), the log start as reported, and the position
/// below which positions map to records lost on the *other* side.
///
/// Mutations validate first and change nothing when they return an error. Each one is
/// recorded in a journal for [`OffsetMap::take_checkpoint`].
#[derive(Clone, Debug)]
pub struct OffsetMap {
    budget: usize,
    pub(crate) coarse: Vec<Segment>,
    pub(crate) runs: VecDeque<Run>,
    /// Per side: next offset (source: the replicator's fetch position; target: the first
    /// offset a future replicated record can land at). At or above the last entry's end.
    pub(crate) next: [u64; 2],
    /// Per side: log start as last reported; positions below it are gone.
    pub(crate) log_start: [u64; 2],
    /// Per side: positions below this map to records that are gone from the other side.
    pub(crate) lost_below: [u64; 2],
    /// Per side: where this map's replication started ([`OffsetMap::start_at`]);
    /// positions below it were never replicated (0: from the start, or not known).
    pub(crate) start: [u64; 2],
    pub(crate) journal: Journal,
}

impl Default for OffsetMap {
    fn default() -> Self {
        OffsetMap::new()
    }
}

/// Compares mapping state (entries, positions, log starts), not the budget or the journal:
/// a map restored from checkpoints equals the map that wrote them.
impl PartialEq for OffsetMap {
    fn eq(&self, other: &Self) -> bool {
        self.coarse == other.coarse
            && self.runs == other.runs
            && self.next == other.next
            && self.log_start == other.log_start
            && self.lost_below == other.lost_below
            && self.start == other.start
    }
}

impl Eq for OffsetMap {}

/// Sizes and watermarks of one map, for metrics and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapStats {
    /// Exact runs held.
    pub runs: usize,
    /// Coarse segments held.
    pub coarse_segments: usize,
    /// Heap bytes held by the entries and the journal.
    pub heap_bytes: usize,
    /// Source positions at or above this translate exactly (0: nothing was coarsened).
    pub exact_from_source: u64,
    /// Target positions at or above this translate exactly (0: nothing was coarsened).
    pub exact_from_target: u64,
    /// The replicator's source position.
    pub source_next: u64,
    /// The next target offset a replicated record can land at.
    pub target_next: u64,
}

impl OffsetMap {
    /// An empty map with the [`DEFAULT_RUN_BUDGET`], at positions 0 on both sides.
    pub fn new() -> Self {
        OffsetMap::with_budget(DEFAULT_RUN_BUDGET)
    }

    /// An empty map keeping at most `budget` entries (at least [`MIN_RUN_BUDGET`]).
    ///
    /// Replication that starts mid-log calls [`OffsetMap::advance`] with its starting
    /// positions: the offsets below are then a gap, and positions there translate to the
    /// first replicated record.
    pub fn with_budget(budget: usize) -> Self {
        OffsetMap {
            budget: budget.max(MIN_RUN_BUDGET),
            coarse: Vec::new(),
            runs: VecDeque::new(),
            next: [0; 2],
            log_start: [0; 2],
            lost_below: [0; 2],
            start: [0; 2],
            journal: Journal::default(),
        }
    }

    /// The entry budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Next offset on `side`: the replicator's source position, or the target offset after
    /// the last replicated record (or after trailing target offsets declared skipped).
    pub fn next(&self, side: Side) -> u64 {
        self.next[side.index()]
    }

    /// The log start of `side` as last reported (0 if never).
    pub fn log_start(&self, side: Side) -> u64 {
        self.log_start[side.index()]
    }

    /// Where replication started on `side` ([`OffsetMap::start_at`]; 0 when it started at
    /// the log's beginning or the map predates this record).
    pub fn replication_start(&self, side: Side) -> u64 {
        self.start[side.index()]
    }

    /// Positions on `side` below this map to records that are gone from the other side.
    pub fn lost_below(&self, side: Side) -> u64 {
        self.lost_below[side.index()]
    }

    /// Positions on `side` at or above this translate exactly; below it they may round
    /// down. 0 when nothing was coarsened.
    pub fn exact_from(&self, side: Side) -> u64 {
        self.coarse.last().map_or(0, |s| s.end(side))
    }

    /// The exact runs, oldest first.
    pub fn runs(&self) -> impl ExactSizeIterator<Item = &Run> + '_ {
        self.runs.iter()
    }

    /// The coarse segments, oldest first (all older than every run).
    pub fn coarse_segments(&self) -> &[Segment] {
        &self.coarse
    }

    /// Sizes and watermarks.
    pub fn stats(&self) -> MapStats {
        MapStats {
            runs: self.runs.len(),
            coarse_segments: self.coarse.len(),
            heap_bytes: self.runs.capacity() * size_of::<Run>()
                + self.coarse.capacity() * size_of::<Segment>()
                + self.journal.pending.capacity() * size_of::<Update>(),
            exact_from_source: self.exact_from(Side::Source),
            exact_from_target: self.exact_from(Side::Target),
            source_next: self.next(Side::Source),
            target_next: self.next(Side::Target),
        }
    }

    /// Records an acknowledged batch written without re-encoding: `count` records at source
    /// offsets `source_first..source_first + count` landed at target offsets
    /// `target_base..target_base + count`.
    ///
    /// Both sides must be at or above [`OffsetMap::next`]; offsets skipped in between
    /// become a gap. Afterwards `next` is the end of the batch on each side; call
    /// [`OffsetMap::advance`] when the fetch position is further on (e.g. a batch whose
    /// trailing records were compacted away).
    pub fn append_dense(
        &mut self,
        source_first: u64,
        count: u64,
        target_base: u64,
    ) -> Result<(), MapError> {
        self.apply(Update::Append {
            source_start: source_first,
            target_start: target_base,
            len: count,
        })
    }

    /// Records an acknowledged re-encoded batch: the records at the given source offsets
    /// (strictly increasing) landed at `target_base`, `target_base + 1`, … in order.
    ///
    /// Validates the whole list before changing anything.
    pub fn append_listed(
        &mut self,
        source_offsets: &[u64],
        target_base: u64,
    ) -> Result<(), MapError> {
        let (Some(&first), Some(&last)) = (source_offsets.first(), source_offsets.last()) else {
            return Err(MapError::EmptyBatch);
        };
        self.check_append(first, target_base, source_offsets.len() as u64)?;
        if last >= MAX_OFFSET {
            return Err(MapError::OutOfRange {
                side: Side::Source,
                offset: last.saturating_add(1),
            });
        }
        for pair in source_offsets.windows(2) {
            if pair[1] <= pair[0] {
                return Err(MapError::NotIncreasing {
                    previous: pair[0],
                    offset: pair[1],
                });
            }
        }
        let mut target = target_base;
        for chunk in source_offsets.chunk_by(|a, b| a + 1 == *b) {
            let len = chunk.len() as u64;
            // Cannot fail: every piece starts at or above the previous piece's end.
            self.apply(Update::Append {
                source_start: chunk[0],
                target_start: target,
                len,
            })?;
            target += len;
        }
        Ok(())
    }

    /// Moves the replicator's positions past offsets that hold no replicated record:
    /// the source position past trailing control batches, aborted or filtered records;
    /// the target position past the replicator's own transaction markers.
    ///
    /// Source positions up to `source_next` then translate to `target_next` once nothing
    /// is replicated in between. Neither side may move backwards.
    pub fn advance(&mut self, source_next: u64, target_next: u64) -> Result<(), MapError> {
        self.apply(Update::Advance {
            source_next,
            target_next,
        })
    }

    /// Starts replication of an empty map mid-log: [`OffsetMap::advance`] to the positions,
    /// which are also recorded as where replication started. Positions below them were
    /// never replicated, and translate to
    /// [`Translation::BeforeReplication`](crate::Translation::BeforeReplication), not to
    /// the first replicated record as gaps inside the replicated range do. Kept in
    /// snapshots; a map that already holds entries or positions is refused.
    pub fn start_at(&mut self, source_next: u64, target_next: u64) -> Result<(), MapError> {
        if !self.runs.is_empty() || !self.coarse.is_empty() || self.next != [0; 2] {
            return Err(MapError::NotEmpty);
        }
        self.advance(source_next, target_next)?;
        self.start = [source_next, target_next];
        Ok(())
    }

    /// [`OffsetMap::advance`] on the source side only.
    pub fn advance_source(&mut self, source_next: u64) -> Result<(), MapError> {
        self.advance(source_next, self.next(Side::Target))
    }

    /// Applies an update and journals it.
    pub(crate) fn apply(&mut self, update: Update) -> Result<(), MapError> {
        if self.apply_unjournaled(update)? {
            self.journal.record(update);
        }
        Ok(())
    }

    /// Applies an update (live or replayed): validates, then mutates. Returns whether
    /// anything changed (no-ops are not journaled).
    pub(crate) fn apply_unjournaled(&mut self, update: Update) -> Result<bool, MapError> {
        match update {
            Update::Append {
                source_start,
                target_start,
                len,
            } => {
                self.check_append(source_start, target_start, len)?;
                self.push_run(source_start, target_start, len);
            }
            Update::Advance {
                source_next,
                target_next,
            } => {
                check_position(Side::Source, source_next, self.next(Side::Source))?;
                check_position(Side::Target, target_next, self.next(Side::Target))?;
                let changed = self.next != [source_next, target_next];
                self.next = [source_next, target_next];
                return Ok(changed);
            }
            Update::LogStart { side, offset } => {
                check_range(side, offset)?;
                return Ok(self.raise_log_start(side, offset));
            }
            Update::Recreated {
                side,
                log_start,
                counterpart_next,
            } => {
                check_range(side, log_start)?;
                check_range(side.other(), counterpart_next)?;
                // The target is append-only: a new source topic continues on the same one.
                if side == Side::Source {
                    check_position(Side::Target, counterpart_next, self.next(Side::Target))?;
                }
                self.recreate(side, log_start, counterpart_next);
            }
        }
        Ok(true)
    }

    fn check_append(&self, source_start: u64, target_start: u64, len: u64) -> Result<(), MapError> {
        if len == 0 {
            return Err(MapError::EmptyBatch);
        }
        for (side, start) in [(Side::Source, source_start), (Side::Target, target_start)] {
            check_position(side, start, self.next(side))?;
            check_range(side, start.saturating_add(len))?;
        }
        Ok(())
    }

    fn push_run(&mut self, source_start: u64, target_start: u64, len: u64) {
        let extended = self
            .runs
            .back_mut()
            .is_some_and(|last| last.try_extend(source_start, target_start, len));
        if !extended {
            if self.runs.len() == self.runs.capacity() {
                // Grow by doubling but never past the budget (+1 for the entry that
                // triggers coarsening), so a full map holds no spare half-deque.
                let want = (2 * self.runs.capacity()).clamp(4, self.budget + 1);
                self.runs
                    .reserve_exact(want.saturating_sub(self.runs.len()).max(1));
            }
            self.runs
                .push_back(Run::new(source_start, target_start, len));
            if self.coarse.len() + self.runs.len() > self.budget {
                coarsen::coarsen(&mut self.coarse, &mut self.runs);
            }
        }
        self.next = [source_start + len, target_start + len];
    }

    /// Rebuilds a map from decoded parts; the decoder has checked every invariant.
    pub(crate) fn from_parts(parts: MapParts) -> Self {
        let mut map = OffsetMap::with_budget(parts.budget);
        map.coarse = parts.coarse;
        map.runs = parts.runs;
        map.next = parts.next;
        map.log_start = parts.log_start;
        map.lost_below = parts.lost_below;
        map.start = parts.start;
        map.journal.seq = parts.seq;
        // A snapshot written under a larger budget is brought within this one.
        while map.coarse.len() + map.runs.len() > map.budget {
            coarsen::coarsen(&mut map.coarse, &mut map.runs);
        }
        map
    }
}

/// Everything a snapshot holds, as decoded.
pub(crate) struct MapParts {
    pub(crate) budget: usize,
    pub(crate) seq: u64,
    pub(crate) coarse: Vec<Segment>,
    pub(crate) runs: VecDeque<Run>,
    pub(crate) next: [u64; 2],
    pub(crate) log_start: [u64; 2],
    pub(crate) lost_below: [u64; 2],
    pub(crate) start: [u64; 2],
}

fn check_range(side: Side, offset: u64) -> Result<(), MapError> {
    if offset > MAX_OFFSET {
        return Err(MapError::OutOfRange { side, offset });
    }
    Ok(())
}

fn check_position(side: Side, offset: u64, next: u64) -> Result<(), MapError> {
    check_range(side, offset)?;
    if offset < next {
        return Err(MapError::Regression { side, offset, next });
    }
    Ok(())
}
