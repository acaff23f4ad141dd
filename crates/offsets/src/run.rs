//! Exact runs: a dense range of source offsets written to a dense range of target offsets.

use crate::side::Side;

/// Source offsets `source_start..source_start + len` hold records that were written to
/// target offsets `target_start..target_start + len`, in order and one for one.
///
/// Within a run translation is exact in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    source_start: u64,
    target_start: u64,
    len: u64,
}

impl Run {
    /// Callers guarantee `len >= 1` and that both ends fit in [`crate::MAX_OFFSET`].
    pub(crate) const fn new(source_start: u64, target_start: u64, len: u64) -> Self {
        Run {
            source_start,
            target_start,
            len,
        }
    }

    /// First source offset of the run.
    pub const fn source_start(&self) -> u64 {
        self.source_start
    }

    /// Target offset the first record landed at.
    pub const fn target_start(&self) -> u64 {
        self.target_start
    }

    /// Number of records (at least one).
    pub const fn len(&self) -> u64 {
        self.len
    }

    /// Always false: a run holds at least one record. (Provided for API symmetry.)
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// First offset of the run on `side`.
    pub const fn start(&self, side: Side) -> u64 {
        match side {
            Side::Source => self.source_start,
            Side::Target => self.target_start,
        }
    }

    /// One past the last offset of the run on `side`.
    pub const fn end(&self, side: Side) -> u64 {
        self.start(side) + self.len
    }

    /// The `to`-side offset of the first record whose `from`-side offset is `>= pos`,
    /// for `pos < self.end(from)` (a position in the gap before the run maps to its start).
    pub(crate) fn locate(&self, from: Side, pos: u64) -> u64 {
        self.start(from.other()) + pos.saturating_sub(self.start(from))
    }

    /// Appends `len` records if they continue this run on both sides.
    pub(crate) fn try_extend(&mut self, source_start: u64, target_start: u64, len: u64) -> bool {
        let contiguous =
            source_start == self.end(Side::Source) && target_start == self.end(Side::Target);
        if contiguous {
            self.len += len;
        }
        contiguous
    }

    /// Drops the records below `at` on `side`; `start(side) < at < end(side)`.
    pub(crate) fn trim_front(&mut self, side: Side, at: u64) {
        let cut = at - self.start(side);
        self.source_start += cut;
        self.target_start += cut;
        self.len -= cut;
    }
}
