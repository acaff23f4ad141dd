//! Pure rules for sharing the in-flight budget between partitions, so that one stuck
//! piece cannot stall the rest (no I/O, no clock: every rule is unit-tested by name).
//!
//! Two kinds of bytes pin a partition's fetch buffers, and each has its own bound.
//!
//! **In flight**: fetched and released, waiting for the target to acknowledge them. A
//! target partition that cannot accept writes keeps these forever. [`may_fetch`] bounds
//! them with a per-partition quota:
//!
//! 1. *The fair share* is the budget split over the active partitions, never below the
//!    minimum fetch room (one fetch must fit): [`fair_share`].
//! 2. *A partition under its fair share may always fetch*, however full the budget is, so
//!    a partition that has drained is never starved.
//! 3. *A partition at or over its fair share may fetch only while at most half the budget
//!    is used* (work-conserving: one busy partition alone may use much more than its
//!    share), so the partitions over their share hold at most half the budget plus one
//!    fetch each between them; the other half is handed out by fair shares only.
//! 4. *A partition left out is not fetched* (the fetcher asks for the others and skips
//!    it); it is asked for again as soon as its acknowledgements bring it under rule 2 or 3.
//!
//! **Held**: fetched but not released, waiting for a transaction marker. These are not
//! counted against the quota (the partition must keep fetching to reach the marker);
//! instead every partition's held bytes count against one process-wide limit,
//! [`held_verdict`]:
//!
//! 5. *Within the limit, nothing happens.*
//! 6. *Over the limit, the partition holding the most must let go*: it spills (drops what
//!    it holds and re-reads it once decided, `Planner::spill`) or, where it cannot
//!    (`--once`), fails with a clear error. It is the one checking if it holds the most,
//!    ties included; otherwise the largest holder is told through its account. The
//!    others carry on.
//!
//! **Residue**: a Fetch response is one buffer, and every partition's record set is a
//! slice of it; the buffer is freed only when the last slice goes. A partition's share is
//! returned when its batches are acknowledged, but while another partition of the same
//! response still holds its slice (a slow zstd partition, a transaction waiting for its
//! marker), the returned bytes are still resident. Counting only the shares let a few such
//! responses sit outside the budget (zstd over 1,000 partitions: 66–67 MiB at a 24 MiB
//! budget). [`keep_as_residue`] decides what a returned share does:
//!
//! 7. *A share returned while another share of its response is still alive stays counted*
//!    against the budget, as its response's residue, freed with the response's last share.
//! 8. *Residue is counted only up to [`residue_limit`]* (7/16 of the budget, process-wide);
//!    beyond it a returned share is freed at once, as before. Held bytes are at most half
//!    the budget (rule 6), so held and residue together leave at least a sixteenth, one
//!    fetch's minimum room (`Router::min_fetch_room`), to bytes in flight, which the
//!    target's acknowledgements free: residue can never starve the fetch that brings a
//!    transaction's marker.
//! 9. *The last share of a response frees its residue* (the buffer goes with it).

/// The budget's state as one partition's fetch decision sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaInput {
    /// The whole budget (`engine.in_flight_memory`).
    pub total: u64,
    /// Bytes reserved now, by every partition and every fetch waiting for a response.
    pub used: u64,
    /// The partition's bytes in flight to the target (its reservations minus its held bytes).
    pub in_flight: u64,
    /// Partitions sharing the budget (fetched by any fetcher of the process).
    pub active: usize,
    /// What one fetch needs at least (the fetcher's minimum room).
    pub min_room: u64,
}

/// Rule 1: the budget split over the active partitions, never below `min_room`.
pub fn fair_share(total: u64, active: usize, min_room: u64) -> u64 {
    let n = u64::try_from(active.max(1)).unwrap_or(u64::MAX);
    (total / n).max(min_room).max(1)
}

/// Rules 2–4: whether the partition may be part of the next fetch.
pub fn may_fetch(q: QuotaInput) -> bool {
    if q.in_flight < fair_share(q.total, q.active, q.min_room) {
        return true;
    }
    q.used <= q.total / 2
}

/// What [`held_verdict`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldVerdict {
    /// Rule 5: the held bytes of every partition are within the limit.
    Within,
    /// Rule 6: over the limit and the checking partition holds the most: it lets go.
    FailThis,
    /// Rule 6: over the limit and another partition holds more: that one lets go.
    FailLargest,
}

/// Rules 5–6: `total_held` bytes are held by every partition together, `mine` by the
/// checking partition and `largest_other` by the largest other holder.
pub fn held_verdict(total_held: u64, limit: u64, mine: u64, largest_other: u64) -> HeldVerdict {
    if total_held <= limit {
        HeldVerdict::Within
    } else if mine >= largest_other {
        HeldVerdict::FailThis
    } else {
        HeldVerdict::FailLargest
    }
}

/// Rule 8: the most residue the process counts, 7/16 of the budget (`total`).
pub fn residue_limit(total: u64) -> u64 {
    total / 16 * 7
}

/// Rules 7–9: whether a returned share of `bytes` stays counted as its response's residue,
/// with `residue` bytes counted process-wide now, when `others_alive` (another share of
/// the same response is still alive).
pub fn keep_as_residue(residue: u64, bytes: u64, limit: u64, others_alive: bool) -> bool {
    others_alive && bytes > 0 && residue.saturating_add(bytes) <= limit
}

#[cfg(test)]
mod tests;
