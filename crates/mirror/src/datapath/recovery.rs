//! Recovery after an unclean stop: which re-fetched records are already on the target.
//!
//! Strait is the only writer of its target partitions and writes them in source order,
//! so the records past the position saved in the state topic (`map.next(Target)`) are
//! exactly the first `D = target_end − map.next(Target)` records the data path forwards
//! from the saved source position. Re-fetching from there with the same filtering and
//! planning, the first `D` records are recorded in the map without being produced. A `D`
//! that is negative, or that ends inside a batch, means someone else truncated or wrote
//! the target partition: the re-creation/truncation policy decides.

use super::plan::Step;

/// What to do with a planned step while recovering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Produce it (recovery is over, or the step writes nothing).
    Produce,
    /// It is already on the target: record it at the current target position.
    AlreadyWritten,
    /// Only part of it is on the target: the target does not hold what we wrote.
    Mismatch {
        /// Records left to skip.
        remaining: i64,
        /// Records in the step.
        step_records: i64,
    },
}

/// The skip counter of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    remaining: i64,
}

impl Recovery {
    /// Nothing to skip.
    pub fn none() -> Self {
        Recovery { remaining: 0 }
    }

    /// From the target partition's end and the map's target position; `Err(D)` when the
    /// target holds fewer records than the map says were written (`D < 0`).
    pub fn new(target_end: i64, map_target_next: i64) -> Result<Self, i64> {
        let d = target_end - map_target_next;
        if d < 0 {
            Err(d)
        } else {
            Ok(Recovery { remaining: d })
        }
    }

    /// Records still to skip.
    pub fn remaining(&self) -> i64 {
        self.remaining
    }

    /// Decides for the next step (call once per step, in order).
    pub fn decide(&mut self, step: &Step) -> Decision {
        let n = step.records();
        if self.remaining == 0 || n == 0 {
            Decision::Produce
        } else if n <= self.remaining {
            self.remaining -= n;
            Decision::AlreadyWritten
        } else {
            Decision::Mismatch {
                remaining: self.remaining,
                step_records: n,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(next: i64) -> Step {
        Step::Skip { source_next: next }
    }

    fn records(offsets: Vec<i64>) -> Step {
        let mut b = strait_records::BatchBuilder::new(strait_records::Compression::None);
        for _ in &offsets {
            b.push(0, None, Some(b"v"), &[]).unwrap();
        }
        Step::Reencoded {
            batch: b.build().unwrap(),
            source_offsets: offsets,
        }
    }

    #[test]
    fn skips_exactly_d_records_on_batch_boundaries_then_produces() {
        let mut r = Recovery::new(105, 100).unwrap();
        assert_eq!(r.remaining(), 5);
        assert_eq!(r.decide(&records(vec![0, 1, 2])), Decision::AlreadyWritten);
        assert_eq!(
            r.decide(&skip(4)),
            Decision::Produce,
            "markers write nothing"
        );
        assert_eq!(r.decide(&records(vec![4, 6])), Decision::AlreadyWritten);
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.decide(&records(vec![7])), Decision::Produce);
    }

    #[test]
    fn a_boundary_inside_a_batch_is_a_mismatch() {
        let mut r = Recovery::new(2, 0).unwrap();
        assert_eq!(
            r.decide(&records(vec![0, 1, 2])),
            Decision::Mismatch {
                remaining: 2,
                step_records: 3
            }
        );
    }

    #[test]
    fn a_target_behind_the_map_is_truncation() {
        assert_eq!(Recovery::new(90, 100), Err(-10));
        assert_eq!(Recovery::none().remaining(), 0);
        assert_eq!(
            Recovery::new(7, 7).unwrap().decide(&records(vec![1])),
            Decision::Produce
        );
    }
}
