//! Translation of a committed position from one side to the other.
//!
//! A position is the next offset a consumer would read. The answer on the other side is
//! the offset of the first replicated record whose offset on this side is `>= position`:
//! a consumer resuming there has read every earlier record and misses none after it.

use crate::coarsen::Precision;
use crate::map::OffsetMap;
use crate::side::Side;

/// Result of translating a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translation {
    /// The position translates to `offset` on the other side.
    Mapped {
        /// Next offset to read on the other side.
        offset: u64,
        /// Whether `offset` is exact or rounded down.
        precision: Precision,
    },
    /// The position is past what has been replicated: the records between
    /// `replicated_end` and the position have not been processed yet. Wait and retry, or
    /// fall back by policy (`counterpart_end` is where a consumer that has read everything
    /// replicated so far would resume on the other side).
    NotYetReplicated {
        /// The replicated end on the position's side: everything below it is accounted for.
        replicated_end: u64,
        /// The replicated end on the other side.
        counterpart_end: u64,
    },
    /// The position is below where replication started (`start_position = "latest"` or a
    /// timestamp, or records the other side held before replication began): the records
    /// from the position up to `replication_start` were never replicated. A consumer
    /// moved to `counterpart` would skip them; none of the other answers is exact.
    BeforeReplication {
        /// Where replication started on the position's side.
        replication_start: u64,
        /// Where replication started on the other side.
        counterpart: u64,
    },
    /// The answer involves records that no longer exist on `side` (retention moved its
    /// log start, or the topic was truncated or recreated).
    Truncated {
        /// The side that lost the records.
        side: Side,
        /// That side's log start as last reported to the map.
        log_start: u64,
    },
}

impl Translation {
    /// The translated offset, if the position mapped.
    pub const fn offset(&self) -> Option<u64> {
        match self {
            Translation::Mapped { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// Whether the position mapped to its exact counterpart.
    pub const fn is_exact(&self) -> bool {
        matches!(
            self,
            Translation::Mapped {
                precision: Precision::Exact,
                ..
            }
        )
    }
}

impl OffsetMap {
    /// Translates a committed source position (the next source offset a consumer would
    /// read) to the target offset it should resume at.
    ///
    /// - inside a run: exact;
    /// - in a gap (compaction, transaction markers, aborted or filtered records), or
    ///   before the first run but not before where replication started: the start of the
    ///   next run;
    /// - before where replication started ([`OffsetMap::start_at`]):
    ///   [`Translation::BeforeReplication`];
    /// - at or past the end of the last run but not past the replicator's source position
    ///   (see [`OffsetMap::advance`]): the target position right after the last replicated
    ///   record, because everything in between was skipped;
    /// - past the replicator's source position: [`Translation::NotYetReplicated`];
    /// - in coarsened history: rounded down ([`Precision::RoundedDown`]);
    /// - involving records lost to retention, truncation or recreation on either side:
    ///   [`Translation::Truncated`].
    ///
    /// Never returns an offset past a record whose source offset is `>= position`.
    pub fn translate(&self, position: u64) -> Translation {
        self.lookup(Side::Source, position)
    }

    /// Translates a committed target position back to the source (for failback). The
    /// mirror image of [`OffsetMap::translate`]: gaps on the target (for example the
    /// markers of the replicator's own transactions) map to the next run.
    pub fn translate_reverse(&self, position: u64) -> Translation {
        self.lookup(Side::Target, position)
    }

    fn lookup(&self, from: Side, position: u64) -> Translation {
        let to = from.other();
        if position < self.log_start(from) {
            return self.truncated(from);
        }
        if position < self.lost_below(from) {
            return self.truncated(to);
        }
        if position > self.next(from) {
            return Translation::NotYetReplicated {
                replicated_end: self.next(from),
                counterpart_end: self.next(to),
            };
        }
        let (offset, precision) = self.locate(from, position);
        if offset < self.log_start(to) {
            return self.truncated(to);
        }
        if position < self.replication_start(from) {
            return Translation::BeforeReplication {
                replication_start: self.replication_start(from),
                counterpart: self.replication_start(to),
            };
        }
        Translation::Mapped { offset, precision }
    }

    fn truncated(&self, side: Side) -> Translation {
        Translation::Truncated {
            side,
            log_start: self.log_start(side),
        }
    }

    /// `position <= self.next(from)`. Entries are sorted and disjoint on both sides, so
    /// the first entry ending after `position` is the one holding the answer.
    fn locate(&self, from: Side, position: u64) -> (u64, Precision) {
        let coarse = &self.coarse;
        if coarse.last().is_some_and(|s| position < s.end(from)) {
            let i = coarse.partition_point(|s| s.end(from) <= position);
            return coarse[i].locate(from, position);
        }
        let runs = &self.runs;
        let i = runs.partition_point(|r| r.end(from) <= position);
        match runs.get(i) {
            Some(run) => (run.locate(from, position), Precision::Exact),
            // Everything from the last record up to the replicated end was skipped.
            None => (self.next(from.other()), Precision::Exact),
        }
    }
}
