//! [`SourceOffsets`]: where each record of a merged batch came from, as runs of
//! consecutive source offsets ([`OffsetRun`]).

/// A run of consecutive source offsets: `first .. first + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetRun {
    /// First source offset of the run.
    pub first: i64,
    /// Number of offsets (records) in the run; at least 1.
    pub count: u32,
}

impl OffsetRun {
    /// The offset after the run's last one.
    pub fn end(&self) -> i64 {
        self.first.wrapping_add(i64::from(self.count))
    }
}

/// The source offsets of the records of a merged batch, in record order, as runs of
/// consecutive offsets. Record `i` of the batch (target offset `base + i`) came from the
/// `i`-th offset listed. Feed each run to the offset map's `append_dense` (the target
/// offsets of a run start where the previous run's end).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SourceOffsets {
    runs: Vec<OffsetRun>,
    len: usize,
}

impl SourceOffsets {
    /// The runs, in record order; offsets strictly increase across them.
    pub fn runs(&self) -> &[OffsetRun] {
        &self.runs
    }

    /// Number of offsets (records).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no offset.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the offsets form a single gap-free run.
    pub fn is_dense(&self) -> bool {
        self.runs.len() <= 1
    }

    /// The first source offset.
    pub fn first(&self) -> Option<i64> {
        self.runs.first().map(|r| r.first)
    }

    /// The last source offset.
    pub fn last(&self) -> Option<i64> {
        self.runs.last().map(|r| r.end().wrapping_sub(1))
    }

    /// Every offset, in record order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.runs
            .iter()
            .flat_map(|r| (0..i64::from(r.count)).map(move |i| r.first.wrapping_add(i)))
    }

    /// Every offset, in record order, as a vector.
    pub fn to_vec(&self) -> Vec<i64> {
        self.iter().collect()
    }

    pub(super) fn push(&mut self, offset: i64) {
        self.len += 1;
        if let Some(last) = self.runs.last_mut()
            && last.end() == offset
            && last.count < u32::MAX
        {
            last.count += 1;
            return;
        }
        self.runs.push(OffsetRun {
            first: offset,
            count: 1,
        });
    }

    pub(super) fn mark(&self) -> (usize, u32, usize) {
        (
            self.runs.len(),
            self.runs.last().map_or(0, |r| r.count),
            self.len,
        )
    }

    pub(super) fn rollback(&mut self, (runs, last_count, len): (usize, u32, usize)) {
        self.runs.truncate(runs);
        if let Some(last) = self.runs.last_mut() {
            last.count = last_count;
        }
        self.len = len;
    }
}
