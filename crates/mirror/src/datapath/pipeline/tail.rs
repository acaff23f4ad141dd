//! Recovery reading the target in chunks: the steps held while recovery waits for the
//! next chunk of the target's tail, and the chunks' pins (the rule is in the module docs
//! of [`super`]).

use std::collections::VecDeque;

use strait_records::{Batch, push_lean};

use super::record::Update;
use super::{Phase, Pipeline};
use crate::datapath::plan::Step;
use crate::error::MirrorError;

/// What waits on the target's tail (boxed in the pipeline: only while recovering).
#[derive(Debug)]
pub(super) struct TailRead<P> {
    /// Steps planned and not decided yet, in order: the first waits for the chunk asked
    /// for ([`super::Action::ReadTargetTail`]).
    held: VecDeque<(Step, P)>,
    /// `--once`: "reached the end" is queued behind the held steps.
    reached_end: bool,
    /// A chunk was asked for and not handed over yet.
    asked: bool,
    /// The pins of the chunks read, each with the target offset it was read up to: kept
    /// while recovery holds a record below that offset.
    pins: VecDeque<(u64, P)>,
}

impl<P> Default for TailRead<P> {
    fn default() -> Self {
        TailRead {
            held: VecDeque::new(),
            reached_end: false,
            asked: false,
            pins: VecDeque::new(),
        }
    }
}

impl<P: Clone> Pipeline<P> {
    /// Whether steps wait for a chunk of the target's tail.
    pub(super) fn waits_for_tail(&self) -> bool {
        self.tail.as_ref().is_some_and(|t| !t.held.is_empty())
    }

    /// One planned step: held behind the steps already waiting for the tail, or decided
    /// now (and held if it must wait).
    pub(super) fn step_or_hold(&mut self, step: Step, pin: P) -> Result<(), MirrorError> {
        if self.waits_for_tail() {
            self.hold((step, pin), false);
            return Ok(());
        }
        if let Some(held) = self.step(step, pin)? {
            self.hold(held, true);
        }
        Ok(())
    }

    /// Holds a step behind the others; `asked`: it is the one the chunk was asked for.
    fn hold(&mut self, held: (Step, P), asked: bool) {
        let t = self.tail.get_or_insert_with(Box::default);
        t.asked |= asked;
        push_lean(&mut t.held, held);
    }

    /// `--once`: queues "reached the end" behind the held steps.
    pub(super) fn reached_end(&mut self) {
        match &mut self.tail {
            Some(t) if !t.held.is_empty() => t.reached_end = true,
            _ => self.queue.push_other(Update::ReachedEnd),
        }
    }

    /// The chunk of the target's tail asked for by [`super::Action::ReadTargetTail`]:
    /// its batches from the `from` asked for on (they may start earlier), and the pin
    /// that keeps its budget reservation while recovery holds its records. The held
    /// steps then go through recovery in order; the first that needs more asks again.
    /// Ignored when not asked for (stopped meanwhile).
    pub fn target_tail_read(&mut self, batches: &[Batch], pin: P) -> Result<(), MirrorError> {
        match &mut self.tail {
            Some(t) if t.asked => t.asked = false,
            _ => return Ok(()),
        }
        if self.phase == Phase::Failed {
            return Ok(());
        }
        self.recovery
            .read(batches)
            .map_err(|e| MirrorError::records("recovery: decoding the target's tail", e))
            .inspect_err(|_| self.phase = Phase::Failed)?;
        let read_to = self.recovery.read_to();
        if let Some(t) = &mut self.tail {
            push_lean(&mut t.pins, (read_to, pin));
        }
        let result = self.decide_held();
        self.release_tail_pins();
        result
    }

    /// Decides the held steps in order until one needs another chunk.
    fn decide_held(&mut self) -> Result<(), MirrorError> {
        loop {
            let Some(held) = self.tail.as_mut().and_then(|t| t.held.pop_front()) else {
                break;
            };
            if let Some((step, pin)) = self.step(held.0, held.1)? {
                if let Some(t) = &mut self.tail {
                    t.held.push_front((step, pin));
                    t.asked = true;
                }
                return Ok(());
            }
        }
        if let Some(t) = &mut self.tail
            && std::mem::take(&mut t.reached_end)
        {
            self.queue.push_other(Update::ReachedEnd);
        }
        Ok(())
    }

    /// Drops the pins of the chunks recovery no longer holds a record of (all of them
    /// once it is over), and the tail's state when nothing is left in it.
    pub(super) fn release_tail_pins(&mut self) {
        let holds_from = self.recovery.holds_from();
        let Some(t) = &mut self.tail else {
            return;
        };
        while t.pins.front().is_some_and(|(end, _)| *end <= holds_from) {
            t.pins.pop_front();
        }
        if t.held.is_empty() && t.pins.is_empty() && !t.reached_end {
            self.tail = None;
        }
    }

    /// Whether the pipeline keeps chunks of the target's tail (their pins) while no step
    /// waits for one: what [`Pipeline::release_tail`] would let go of.
    pub fn holds_tail(&self) -> bool {
        self.tail
            .as_ref()
            .is_some_and(|t| t.held.is_empty() && !t.pins.is_empty())
    }

    /// Lets go of the chunks of the target's tail read and not matched yet, while no step
    /// waits for one (the driver's answer to a full budget while it waits for the feed):
    /// recovery reads them again when a step next needs them. Changes no decision.
    pub fn release_tail(&mut self) {
        if !self.waits_for_tail() {
            self.recovery.release();
            self.release_tail_pins();
        }
    }
}
