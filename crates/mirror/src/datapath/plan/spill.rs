//! Spilling (the rules on [`Planner`]): dropping the held batches, reading ahead for their
//! markers, and the rewind to read them again decided.

use std::collections::HashMap;

use bytes::Bytes;
use strait_records::{ControlRecordType, split};

use super::{Mode, Plan, PlanError, Planner, Scan};

impl<P: Clone> Planner<P> {
    /// Rule 1: drops every held batch and reads ahead for the markers of their
    /// transactions instead of holding. False (nothing done) when nothing is held or a
    /// spill is already under way (the caller then fails as before).
    pub fn spill(&mut self) -> bool {
        if self.mode != Mode::Normal || self.resolver.held_batches() == 0 {
            return false;
        }
        let undecided: HashMap<i64, i64> = self.open.iter().map(|(&p, &o)| (p, o)).collect();
        let held = undecided.keys().copied().collect();
        self.resolver.clear();
        self.pins.clear();
        self.open.clear();
        self.markers.clear();
        self.mode = Mode::Scanning(Box::new(Scan {
            from: self.released_next,
            held,
            undecided,
        }));
        true
    }

    /// Rule 2: the position to fetch again from, once (after a [`Planner::spill`] found
    /// every transaction's marker).
    pub fn take_rewind(&mut self) -> Option<i64> {
        self.rewind.take()
    }

    /// Whether the planner dropped held batches and is reading ahead or waiting for the
    /// re-read.
    pub fn is_spilling(&self) -> bool {
        self.mode != Mode::Normal
    }

    /// Reads a record set ahead for markers (rule 1); rewinds when every transaction seen
    /// is decided (rule 2).
    pub(super) fn scan(&mut self, records: Bytes, position: i64) -> Result<Plan<P>, PlanError> {
        let split = split(records, &self.limits).map_err(|source| PlanError {
            offset: position,
            source,
        })?;
        let mut plan = Plan::empty(position, split.trimmed);
        let Mode::Scanning(scan) = &mut self.mode else {
            return Ok(plan);
        };
        let Scan {
            from,
            held,
            undecided,
        } = &mut **scan;
        for batch in split.batches {
            let h = *batch.header();
            let next = h.next_offset();
            if next <= plan.next_position {
                continue;
            }
            plan.next_position = next;
            if !h.attributes.is_transactional() || h.producer_id < 0 {
                continue;
            }
            if h.attributes.is_control() {
                let kind = batch
                    .control_type(&self.limits)
                    .map_err(|source| PlanError {
                        offset: h.base_offset,
                        source,
                    })?;
                let committed = match kind {
                    Some(ControlRecordType::Commit) => true,
                    Some(ControlRecordType::Abort) => false,
                    _ => continue,
                };
                self.markers
                    .entry(h.producer_id)
                    .or_default()
                    .push((h.base_offset, committed));
                undecided.remove(&h.producer_id);
                held.remove(&h.producer_id);
            } else if !held.is_empty() {
                undecided.entry(h.producer_id).or_insert(h.base_offset);
            }
        }
        if held.is_empty() && undecided.is_empty() {
            let from = *from;
            self.rewind = Some(from);
            self.mode = Mode::Rewound { from };
        }
        Ok(plan)
    }

    /// Rule 4: the outcome of the transaction `batch` of `producer_id` at `offset` belongs
    /// to, if a marker after it was seen while reading ahead.
    pub(super) fn known_outcome(&self, producer_id: i64, offset: i64) -> Option<bool> {
        self.markers
            .get(&producer_id)?
            .iter()
            .find(|(at, _)| *at > offset)
            .map(|(_, committed)| *committed)
    }
}
