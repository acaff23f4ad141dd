//! Who may restart a failed exactly-once run. The restart's InitProducerId fences whoever
//! holds the `transactional.id`, so a process that was frozen or cut off while a successor
//! took its flow (or its slot) over would fence that successor, which then restarts and
//! fences back. Before a restart the run's owner is asked again (rules, unit-tested):
//!
//! 1. **ask for a new generation**: the holder of the flow's guard, or of the slot, asks
//!    its group for a generation after the one it holds, and waits for it (session plus
//!    rebalance timeout);
//! 2. **held**: the new assignment still gives it the flow (the sole-writer guard) or the
//!    slot (a cooperative assignment lists what stays, whatever else it revokes): the run
//!    restarts;
//! 3. **taken**: the assignment gives it to another process: the run ends for good,
//!    never fencing the new owner. A slot ends as a fenced run does (the member goes on
//!    with its other slots); a one-process flow stops with the reason;
//! 4. **unknown**: no answer in time, the group stopped, or an assignment that does not
//!    decode: counted as one more failed attempt, asked again after the next backoff.
//!
//! The sole-writer guard answers for a one-process flow (`sole_writer.rs`), [`SlotOwner`]
//! for a slot; `eos_failure::Owner` is either, as the restart loop asks it.

use std::time::Duration;

use strait_client::group::{GroupView, Rejoiner, wait_for_assignment};
use tokio::sync::watch;

use crate::scale::PartitionId;
use crate::scale::reconcile::Wanted;

/// What the group said when asked whether this process still owns the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Confirmed {
    /// It does, in a new generation (rule 2).
    Held,
    /// Another process does: this one must stop, never restart (why; rule 3).
    Taken(String),
    /// No answer: ask again after the next backoff (why; rule 4).
    Unknown(String),
}

/// A member's hold on one exactly-once slot: the member's view and a way to ask it for a
/// new generation, from the slot's own task.
pub(super) struct SlotOwner {
    /// The member's view.
    pub view: watch::Receiver<GroupView>,
    /// Asks the member for a new generation.
    pub rejoiner: Rejoiner,
    /// The slot.
    pub n: u32,
    /// How long a new generation may take (session plus rebalance timeout).
    pub wait: Duration,
}

impl SlotOwner {
    pub(super) async fn confirm(&self) -> Confirmed {
        let before = self.view.borrow().assignment.as_ref().map(|a| a.generation);
        self.rejoiner.rejoin();
        let answer = wait_for_assignment(self.view.clone(), before, self.wait)
            .await
            .map_err(|e| e.to_string())
            .and_then(|a| {
                Wanted::decode(a.generation, &a.data)
                    .map_err(|e| format!("the assignment does not decode: {e}"))
            });
        slot_confirmed(self.n, answer)
    }
}

/// Rules 2 to 4 for slot `n`, given the new generation's assignment (or why there is none).
fn slot_confirmed(n: u32, answer: Result<Wanted, String>) -> Confirmed {
    match answer {
        Ok(w) if w.partitions.contains(&PartitionId::slot(n)) => Confirmed::Held,
        Ok(w) => Confirmed::Taken(format!(
            "exactly-once slot {n} is no longer this member's in generation {} (this member \
             was cut off from the coordinator, or frozen, longer than its session); the slot \
             stops here without restarting, which would fence its new owner",
            w.generation
        )),
        Err(why) => Confirmed::Unknown(format!(
            "the scale-out group did not confirm that exactly-once slot {n} is still this \
             member's ({why})"
        )),
    }
}

#[cfg(test)]
mod tests;
