//! Truncation: log starts moving forward on either side, and topics being recreated.
//!
//! Neither is papered over. Positions whose answer involves records that are gone
//! translate to [`Translation::Truncated`](crate::Translation::Truncated) naming the side
//! that lost them, so the caller applies its own policy (fail, alert, reset to the log
//! start) instead of receiving a silently wrong offset.

use crate::error::MapError;
use crate::map::OffsetMap;
use crate::side::Side;
use crate::update::Update;

impl OffsetMap {
    /// The source log start moved forward to `offset` (retention, `DeleteRecords`).
    ///
    /// Source positions below it translate to `Truncated { side: Source }`, and so do
    /// target positions whose records came from below it (reverse translation). Entries
    /// wholly below it are dropped, which frees budget. If `offset` is beyond the
    /// replicator's source position, the records in between were lost before being
    /// replicated; the source position moves up to `offset`. A value at or below the
    /// current log start is ignored.
    pub fn set_source_log_start(&mut self, offset: u64) -> Result<(), MapError> {
        self.apply(Update::LogStart {
            side: Side::Source,
            offset,
        })
    }

    /// The target log start moved forward to `offset` (retention or `DeleteRecords` on the
    /// target, or a truncation below what was replicated).
    ///
    /// The mirror image of [`OffsetMap::set_source_log_start`]: source positions whose
    /// records now lie below it translate to `Truncated { side: Target }`.
    pub fn set_target_log_start(&mut self, offset: u64) -> Result<(), MapError> {
        self.apply(Update::LogStart {
            side: Side::Target,
            offset,
        })
    }

    /// The source topic was recreated (its topic id changed): offsets restart at
    /// `log_start` and mean different records. All history is dropped; target positions
    /// below `target_next` (where the new topic's records will land, at or above the
    /// current target position) translate to `Truncated { side: Source }`.
    pub fn source_recreated(&mut self, log_start: u64, target_next: u64) -> Result<(), MapError> {
        self.apply(Update::Recreated {
            side: Side::Source,
            log_start,
            counterpart_next: target_next,
        })
    }

    /// The target topic was recreated (or truncated to empty): the old target offsets are
    /// gone. All history is dropped; replication continues into the new topic from
    /// `log_start` on the target and `resume_source` on the source (the current position,
    /// or earlier to copy again). Source positions below `resume_source` translate to
    /// `Truncated { side: Target }`.
    pub fn target_recreated(&mut self, log_start: u64, resume_source: u64) -> Result<(), MapError> {
        self.apply(Update::Recreated {
            side: Side::Target,
            log_start,
            counterpart_next: resume_source,
        })
    }

    /// Returns whether the log start moved.
    pub(crate) fn raise_log_start(&mut self, side: Side, at: u64) -> bool {
        let (s, o) = (side.index(), side.other().index());
        if at <= self.log_start[s] {
            return false;
        }
        self.log_start[s] = at;
        self.next[s] = self.next[s].max(at);

        // The other side's offset below which positions lead to dropped records.
        let mut boundary = None;
        let k = self.coarse.partition_point(|seg| seg.end(side) <= at);
        if k > 0 {
            boundary = Some(self.coarse[k - 1].end(side.other()));
            self.coarse.drain(..k);
        }
        // A straddling coarse segment is kept whole (its inside is not known exactly);
        // answers it gives below the log start are reported as truncated.
        if self.coarse.is_empty() {
            let k = self.runs.partition_point(|run| run.end(side) <= at);
            if k > 0 {
                boundary = Some(self.runs[k - 1].end(side.other()));
                self.runs.drain(..k);
            }
            if let Some(first) = self.runs.front_mut()
                && first.start(side) < at
            {
                first.trim_front(side, at);
                boundary = Some(first.start(side.other()));
            }
        }
        if let Some(boundary) = boundary {
            self.lost_below[o] = self.lost_below[o].max(boundary);
        }
        self.release_spare_capacity();
        true
    }

    /// Drops every entry and sets the positions of a side whose topic was recreated.
    pub(crate) fn recreate(&mut self, side: Side, log_start: u64, counterpart_next: u64) {
        let (s, o) = (side.index(), side.other().index());
        self.coarse = Vec::new();
        self.runs.clear();
        self.release_spare_capacity();
        self.next[s] = log_start;
        self.log_start[s] = log_start;
        self.lost_below[s] = 0;
        self.next[o] = counterpart_next;
        // Positions on the other side below where replication resumes belong to the old
        // topic.
        self.lost_below[o] = counterpart_next;
        // The loss marks now say what was never replicated into the new topic.
        self.start = [0; 2];
    }

    /// Retention can shrink a map a lot; give the memory back rather than keep the peak.
    fn release_spare_capacity(&mut self) {
        if self.runs.capacity() > 4 * self.runs.len().max(16) {
            self.runs.shrink_to(2 * self.runs.len());
        }
        if self.coarse.capacity() > 4 * self.coarse.len().max(16) {
            self.coarse.shrink_to(2 * self.coarse.len());
        }
    }
}
