//! Coarse segments and the policy that creates them when a map exceeds its run budget.
//!
//! A coarse segment replaces several consecutive runs (and the gaps between them) by five
//! numbers: where it starts on each side, how long it is on each side, and how many
//! records it holds. The exact position of every gap inside is forgotten, but the totals
//! still bound the answer from both sides, and the lower bound is what translation returns:
//! it can only round down (re-read records), never skip one.

use std::collections::VecDeque;

use crate::run::Run;
use crate::side::Side;

/// How close a [`crate::Translation::Mapped`] offset is to the exact answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// The exact answer: a consumer resuming there neither re-reads nor skips a record.
    Exact,
    /// The position falls in coarsened history. The offset is a lower bound: a consumer
    /// resuming there re-reads at most `at_most` records, and skips none.
    RoundedDown {
        /// Largest possible distance between the offset given and the exact one.
        at_most: u64,
    },
}

/// Several runs merged into one: `records` records spread over source offsets
/// `source_start..source_start + source_len` and target offsets
/// `target_start..target_start + target_len`, in order, with gaps somewhere inside.
///
/// The first and the last offset on each side hold a record (segments are built from runs),
/// so the start positions translate exactly and everything strictly inside rounds down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    source_start: u64,
    target_start: u64,
    source_len: u64,
    target_len: u64,
    records: u64,
}

impl From<Run> for Segment {
    fn from(run: Run) -> Self {
        Segment {
            source_start: run.source_start(),
            target_start: run.target_start(),
            source_len: run.len(),
            target_len: run.len(),
            records: run.len(),
        }
    }
}

impl Segment {
    /// Callers (the decoder) guarantee `1 <= records <= min(source_len, target_len)` and
    /// that both ends fit in [`crate::MAX_OFFSET`].
    pub(crate) const fn new(
        source_start: u64,
        target_start: u64,
        source_len: u64,
        target_len: u64,
        records: u64,
    ) -> Self {
        Segment {
            source_start,
            target_start,
            source_len,
            target_len,
            records,
        }
    }

    /// First offset on `side` (holds a record).
    pub const fn start(&self, side: Side) -> u64 {
        match side {
            Side::Source => self.source_start,
            Side::Target => self.target_start,
        }
    }

    /// Number of offsets spanned on `side`, records and gaps together.
    pub const fn span(&self, side: Side) -> u64 {
        match side {
            Side::Source => self.source_len,
            Side::Target => self.target_len,
        }
    }

    /// One past the last offset on `side` (the last offset holds a record).
    pub const fn end(&self, side: Side) -> u64 {
        self.start(side) + self.span(side)
    }

    /// Number of records in the segment.
    pub const fn records(&self) -> u64 {
        self.records
    }

    /// Offsets on `side` inside the segment that hold no replicated record.
    pub const fn gaps(&self, side: Side) -> u64 {
        self.span(side) - self.records
    }

    /// `later` must start at or after `self`'s end on both sides.
    fn merge(&self, later: &Segment) -> Segment {
        Segment {
            source_start: self.source_start,
            target_start: self.target_start,
            source_len: later.end(Side::Source) - self.source_start,
            target_len: later.end(Side::Target) - self.target_start,
            records: self.records + later.records,
        }
    }

    /// Bounds on the `to`-side offset of the first record whose `from`-side offset is
    /// `>= pos`, for `pos < self.end(from)`; returns the lower bound and how far the true
    /// answer may lie above it.
    pub(crate) fn locate(&self, from: Side, pos: u64) -> (u64, Precision) {
        let to = from.other();
        if pos <= self.start(from) {
            return (self.start(to), Precision::Exact);
        }
        let (gap_from, gap_to) = (self.gaps(from), self.gaps(to));
        // Records strictly before `pos`: at least one (the first offset holds a record) and
        // at least `done - gap_from`; each of them occupies its own `to`-side offset.
        let done = pos - self.start(from);
        // Records at or after `pos`: at least one (the last offset holds a record).
        let rest = self.end(from) - pos;
        let lo = (self.start(to) + done.saturating_sub(gap_from).max(1))
            // At most `rest` records plus `gap_to` empty offsets lie between the answer and
            // the end.
            .max(self.end(to).saturating_sub(rest + gap_to));
        let hi = (self.start(to) + done + gap_to)
            .min(self.end(to) - rest.saturating_sub(gap_from).max(1));
        match hi.saturating_sub(lo) {
            0 => (lo, Precision::Exact),
            at_most => (lo, Precision::RoundedDown { at_most }),
        }
    }
}

/// Merges the oldest half of the entries pairwise, leaving about three quarters of them.
///
/// Repeated rounds give exponential spacing (like MM2's offset-sync store): the newest
/// coarse segments cover two runs, older ones four, eight, and so on, so the error of a
/// rounded-down translation grows with the age of the position while the number of
/// entries stays within budget. A round costs O(entries) and frees a quarter of the
/// budget, so appends pay O(1) amortised.
pub(crate) fn coarsen(coarse: &mut Vec<Segment>, runs: &mut VecDeque<Run>) {
    let oldest = (coarse.len() + runs.len()) / 2;
    let from_coarse = oldest.min(coarse.len());
    let mut old: Vec<Segment> = coarse.drain(..from_coarse).collect();
    old.extend(runs.drain(..oldest - from_coarse).map(Segment::from));
    let mut merged: Vec<Segment> = old
        .chunks(2)
        .filter_map(|pair| pair.iter().copied().reduce(|a, b| a.merge(&b)))
        .collect();
    merged.append(coarse);
    *coarse = merged;
}
