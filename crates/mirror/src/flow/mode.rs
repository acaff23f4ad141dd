//! The flow's delivery mode, chosen once when the flow starts ([`Mode::of`]), and the
//! state only that mode keeps while a run goes on ([`Role`]).
//!
//! | mode | processes | writer | a run that fails |
//! |---|---|---|---|
//! | at-least-once | one, under the sole-writer guard | idempotent producer | its partitions restart in the run |
//! | exactly-once | one, under the sole-writer guard | transactional producer | restarts from the last commit |
//! | scale-out | a group of members | idempotent producer, per member | its partitions restart in the run |
//! | exactly-once slots | a group of members | a transactional producer per slot | the slot restarts from its last commit |
//!
//! Rules (each has a test named after it):
//!
//! 1. **The config picks the mode**: `[flows.scale_out]` and `delivery.guarantee` decide
//!    it, nothing else.
//! 2. **One process modes hold the guard**: a flow without `[flows.scale_out]` runs under
//!    the sole-writer guard ([`super::sole_writer`]), so a second process of it is
//!    refused; a scale-out flow's group is its guard.
//! 3. **`--once` is one process**: it cannot be combined with `[flows.scale_out]`.

use super::exactly_once::Eos;
use super::partitions::Key;
use super::scale_out::Scale;
use crate::config::Flow;
use crate::error::MirrorError;
use crate::scale::slot_of;

/// How a flow is replicated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// At-least-once in one process.
    AtLeastOnce,
    /// Exactly-once in one process.
    ExactlyOnce,
    /// At-least-once, the partitions shared by a group of processes.
    ScaleOut,
    /// Exactly-once, slots of partitions shared by a group of processes.
    ExactlyOnceSlots,
}

impl Mode {
    /// The mode `flow` is configured for (rule 1); `once` (`--once`) is refused with a
    /// scale-out flow (rule 3).
    pub(super) fn of(flow: &Flow, once: bool) -> Result<Self, MirrorError> {
        let mode = match (flow.scale_out.is_some(), flow.delivery.exactly_once()) {
            (false, false) => Self::AtLeastOnce,
            (false, true) => Self::ExactlyOnce,
            (true, false) => Self::ScaleOut,
            (true, true) => Self::ExactlyOnceSlots,
        };
        if once && mode.shared() {
            return Err(MirrorError::config(
                "--once replicates a flow in one process: it cannot be combined with \
                 [flows.scale_out]",
            ));
        }
        Ok(mode)
    }

    /// Whether processes share the flow through its group; otherwise one process runs it
    /// under the sole-writer guard (rule 2).
    pub(super) fn shared(self) -> bool {
        matches!(self, Self::ScaleOut | Self::ExactlyOnceSlots)
    }
}

/// The slot one run of an exactly-once scale-out flow replicates ([`super::slots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// Its number.
    pub n: u32,
    /// The flow's slot count.
    pub of: u32,
}

impl Slot {
    /// Whether partition `key` belongs to this slot.
    pub(super) fn holds(&self, key: &Key) -> bool {
        slot_of(&key.0, key.1, self.of) == self.n
    }
}

/// What one run of the flow keeps for its mode.
pub(super) enum Role {
    /// At-least-once in one process: nothing more.
    Plain,
    /// Exactly-once in one process: the transactional producer and committed maps.
    Transactional(Eos),
    /// At-least-once scale-out: this process's membership in the flow's group (boxed:
    /// the largest by far, and one per run).
    Member(Box<Scale>),
    /// One exactly-once slot of a scale-out flow: the slot and its transactional parts
    /// (the membership is the slots' runner's, [`super::slots`]).
    Slot(Slot, Eos),
}

impl Role {
    /// The exactly-once parts, in an exactly-once mode.
    pub(super) fn eos(&self) -> Option<&Eos> {
        match self {
            Self::Transactional(e) | Self::Slot(_, e) => Some(e),
            Self::Plain | Self::Member(_) => None,
        }
    }

    /// The exactly-once parts, in an exactly-once mode.
    pub(super) fn eos_mut(&mut self) -> Option<&mut Eos> {
        match self {
            Self::Transactional(e) | Self::Slot(_, e) => Some(e),
            Self::Plain | Self::Member(_) => None,
        }
    }

    /// Whether the run writes in transactions.
    pub(super) fn transactional(&self) -> bool {
        self.eos().is_some()
    }

    /// The membership, in at-least-once scale-out.
    pub(super) fn scale(&self) -> Option<&Scale> {
        match self {
            Self::Member(s) => Some(s),
            _ => None,
        }
    }

    /// The membership, in at-least-once scale-out.
    pub(super) fn scale_mut(&mut self) -> Option<&mut Scale> {
        match self {
            Self::Member(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the run replicates `key`: the assignment gives it to this member
    /// (scale-out), or it is in the run's slot (exactly-once slots); always otherwise.
    pub(super) fn may_start(&self, key: &Key) -> bool {
        self.scale().is_none_or(|s| s.may_start(key)) && self.slot().is_none_or(|s| s.holds(key))
    }

    /// The slot this run replicates, in exactly-once scale-out.
    pub(super) fn slot(&self) -> Option<Slot> {
        match self {
            Self::Slot(s, _) => Some(*s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
