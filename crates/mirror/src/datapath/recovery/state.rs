//! How a [`State`] decides a step: the window's records matched against the step's, a
//! duplicate block skipped, or more of the tail asked for (the module rules of
//! [`super`]). Pure.

use std::collections::VecDeque;

use strait_records::{Batch, Record};

use super::{DUPLICATE_WINDOW, Decision, Digest, State, digest, repeat_len_by, same};
use crate::datapath::plan::Step;

impl State {
    /// Takes the records of `batches` not read yet: below `from` into the duplicate
    /// window, `from..end` into the window of records to match.
    pub(super) fn take(&mut self, batches: &[Batch]) -> Result<(), strait_records::Error> {
        for b in batches {
            let h = b.header();
            let next = u64::try_from(h.base_offset + i64::from(h.last_offset_delta) + 1)
                .unwrap_or(0)
                .min(self.end);
            if next <= self.read_to {
                continue;
            }
            if !h.attributes.is_control() {
                for r in b.records(&self.limits)? {
                    let r = r?;
                    let Ok(off) = u64::try_from(r.offset) else {
                        continue;
                    };
                    if off < self.read_to || off >= self.end {
                        continue;
                    }
                    if off >= self.from {
                        self.found = true;
                        self.pending.push_back((off, r));
                    } else {
                        self.remember(r);
                    }
                }
            }
            self.read_to = next;
        }
        Ok(())
    }

    /// Whether every target offset up to its end was read.
    fn complete(&self) -> bool {
        self.read_to >= self.end
    }

    /// The answer when the window does not tell.
    fn more(&self) -> Decision {
        Decision::ReadMore { from: self.read_to }
    }

    pub(super) fn decide(&mut self, step: &Step) -> Decision {
        if step.records() == 0 {
            return Decision::Produce;
        }
        let batch = match step {
            Step::Forward { batch, .. } | Step::Reencoded { batch, .. } => batch,
            Step::Skip { .. } => return Decision::Produce,
        };
        if self.pending.is_empty() {
            return if self.complete() {
                Decision::Produce
            } else {
                self.more()
            };
        }
        let records = match batch.decode_records(&self.limits) {
            Ok(r) => r,
            Err(e) => {
                return Decision::Mismatch {
                    at: self.pending.front().map_or(self.end, |(o, _)| *o),
                    reason: format!("the source batch cannot be decoded to compare: {e}"),
                };
            }
        };
        loop {
            match self.compare(&records) {
                Ok(base) => {
                    for _ in 0..records.len() {
                        if let Some((_, r)) = self.pending.pop_front() {
                            self.remember(r);
                        }
                    }
                    return Decision::AlreadyWritten { target_base: base };
                }
                Err(d @ Decision::ReadMore { .. }) => return d,
                Err(mismatch) => {
                    let dup = self.duplicate_len();
                    if dup == 0 {
                        return mismatch;
                    }
                    if dup == self.pending.len() && !self.complete() {
                        // The block may go on in the next chunk.
                        return self.more();
                    }
                    self.duplicates += dup as u64;
                    self.pending.drain(..dup);
                    if self.pending.is_empty() {
                        return if self.complete() {
                            Decision::Produce
                        } else {
                            self.more()
                        };
                    }
                }
            }
        }
    }

    /// `Ok(first target offset)` when the pending records start with `records` at
    /// consecutive offsets; [`Decision::ReadMore`] when they run out first and more is to
    /// be read.
    fn compare(&self, records: &[Record]) -> Result<u64, Decision> {
        let base = self.pending.front().map_or(self.end, |(o, _)| *o);
        for (i, r) in records.iter().enumerate() {
            let want = base + i as u64;
            let Some((off, t)) = self.pending.get(i) else {
                if !self.complete() {
                    return Err(self.more());
                }
                return Err(Decision::Mismatch {
                    at: want,
                    reason: format!(
                        "the target ends at {} inside a batch of {} record(s) starting at {base}",
                        self.end,
                        records.len()
                    ),
                });
            };
            if *off != want {
                return Err(Decision::Mismatch {
                    at: want,
                    reason: format!("the target has no record at offset {want} (next is {off})"),
                });
            }
            if !same(r, t) {
                return Err(Decision::Mismatch {
                    at: want,
                    reason: format!(
                        "the target record at offset {want} is not the source record at \
                         offset {} (it differs in timestamp, key, value or headers)",
                        r.offset
                    ),
                });
            }
        }
        Ok(base)
    }

    /// The length of the longest duplicate block at the front of the pending records
    /// (no longer than the window of matched records: only those are looked at).
    fn duplicate_len(&self) -> usize {
        let block: VecDeque<(u64, Digest)> = self
            .pending
            .iter()
            .take(self.matched.len())
            .map(|(o, r)| (*o, digest(r)))
            .collect();
        repeat_len_by(&self.matched, &block, |a, b| a == b)
    }

    fn remember(&mut self, r: Record) {
        if self.matched.len() == DUPLICATE_WINDOW {
            self.matched.pop_front();
        }
        self.matched.push_back(digest(&r));
    }
}
