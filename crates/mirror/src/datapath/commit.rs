//! Exactly-once commits: the barrier between a flow's partition drivers and the committer
//! that ends each target transaction with the state records describing exactly the
//! batches in it.
//!
//! [`Barrier`] is the pure decision; [`Gate`] shares it between the committer and the
//! drivers ([`GateHandle`], one per driver) and wakes whoever waits. Rules:
//!
//! - **Open.** While the barrier is open, drivers hand batches to the transactional
//!   producer: they belong to the open transaction (generation `g`).
//! - **Seal.** The committer seals generation `g`. From then on a driver hands nothing on:
//!   the batches its pipeline releases wait, in order, in the driver (the pipeline counts
//!   them in flight, so its window still bounds them).
//! - **Quiet.** A driver whose every batch handed on has been acknowledged and recorded in
//!   its map reports quiet for `g`: its map then describes exactly its batches in `g`. A
//!   report for another generation, or while open, is ignored.
//! - **A driver fails.** The barrier fails (its batches may be written without being in
//!   its map: the transaction must not commit).
//! - **Members.** A driver joins when it starts and leaves when it ends; one that ends
//!   without releasing its membership (a panic, a cancelled task) fails the barrier. A member that joins while sealed has handed nothing on in `g` and
//!   counts as quiet; one that leaves is no longer awaited.
//! - **Ready.** The committer may write the states and commit once every member is quiet.
//! - **Reopen.** After the commit (or when there was nothing to commit) the committer opens
//!   generation `g + 1`; the drivers hand on their waiting batches first, in order.
//! - **Fail.** A transaction that fails to commit is never reopened: the barrier fails,
//!   drivers stop without handing on their waiting batches, and the flow starts again
//!   from the last committed state (the next producer's InitProducerId aborts the open
//!   transaction).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Notify, watch};

/// A partition (source topic, partition).
pub type Member = (String, i32);

/// What drivers see: the transaction generation and whether it is sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GateState {
    /// The open (or sealed) transaction's number.
    pub generation: u64,
    /// Sealed: hand nothing on.
    pub sealed: bool,
    /// The transaction failed: nothing more is handed on, ever (the flow restarts).
    pub failed: bool,
}

/// The pure barrier (rules in the module doc).
#[derive(Debug, Default)]
pub struct Barrier {
    state: GateState,
    members: BTreeSet<Member>,
    quiet: BTreeSet<Member>,
}

impl Barrier {
    /// Open, generation 0, no members.
    pub fn new() -> Self {
        Barrier::default()
    }

    /// The current state.
    pub fn state(&self) -> GateState {
        self.state
    }

    /// A driver starts.
    pub fn join(&mut self, m: Member) {
        if self.state.sealed {
            self.quiet.insert(m.clone());
        }
        self.members.insert(m);
    }

    /// A driver ended.
    pub fn leave(&mut self, m: &Member) {
        self.members.remove(m);
        self.quiet.remove(m);
    }

    /// Seals the open generation (sealing a sealed one changes nothing); returns it.
    pub fn seal(&mut self) -> u64 {
        self.state.sealed = true;
        self.state.generation
    }

    /// `m` has nothing unrecorded of `generation`.
    pub fn quiet(&mut self, m: &Member, generation: u64) {
        if self.state.sealed && generation == self.state.generation && self.members.contains(m) {
            self.quiet.insert(m.clone());
        }
    }

    /// Whether the sealed generation may be committed.
    pub fn ready(&self) -> bool {
        self.state.sealed && self.members.iter().all(|m| self.quiet.contains(m))
    }

    /// Members not quiet yet (for messages about a commit that waits).
    pub fn waiting(&self) -> Vec<Member> {
        self.members
            .iter()
            .filter(|m| !self.quiet.contains(*m))
            .cloned()
            .collect()
    }

    /// The transaction failed: sealed for good.
    pub fn fail(&mut self) {
        self.state.sealed = true;
        self.state.failed = true;
    }

    /// Opens the next generation (after a commit); returns it. Opening an open barrier,
    /// or a failed one, changes nothing.
    pub fn open(&mut self) -> u64 {
        if self.state.sealed && !self.state.failed {
            self.state = GateState {
                generation: self.state.generation + 1,
                sealed: false,
                failed: false,
            };
            self.quiet.clear();
        }
        self.state.generation
    }
}

/// The barrier shared by a flow's committer and its drivers.
#[derive(Debug)]
pub struct Gate {
    barrier: Mutex<Barrier>,
    state: watch::Sender<GateState>,
    changed: Notify,
}

impl Gate {
    /// An open gate.
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate {
            barrier: Mutex::new(Barrier::new()),
            state: watch::channel(GateState::default()).0,
            changed: Notify::new(),
        })
    }

    /// Enrolls a driver for `m`; it leaves when the handle drops.
    pub fn join(self: &Arc<Self>, m: Member) -> GateHandle {
        self.lock().join(m.clone());
        GateHandle {
            gate: Arc::clone(self),
            member: m,
            rx: self.state.subscribe(),
            reported: None,
            released: false,
        }
    }

    /// Seals the open generation; returns it.
    pub fn seal(&self) -> u64 {
        let g = {
            let mut b = self.lock();
            let g = b.seal();
            self.state.send_replace(b.state());
            g
        };
        self.changed.notify_waiters();
        g
    }

    /// Waits until every member is quiet (`true`) or the transaction failed (`false`).
    pub async fn ready(&self) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let b = self.lock();
                if b.state().failed {
                    return false;
                }
                if b.ready() {
                    return true;
                }
            }
            notified.await;
        }
    }

    /// Whether the transaction failed.
    pub fn failed(&self) -> bool {
        self.lock().state().failed
    }

    /// Members not quiet yet.
    pub fn waiting(&self) -> Vec<Member> {
        self.lock().waiting()
    }

    /// The transaction failed: drivers stop (their waiting batches are never sent).
    pub fn fail(&self) {
        {
            let mut b = self.lock();
            b.fail();
            self.state.send_replace(b.state());
        }
        self.changed.notify_waiters();
    }

    /// Opens the next generation.
    pub fn open(&self) -> u64 {
        let mut b = self.lock();
        let g = b.open();
        self.state.send_replace(b.state());
        g
    }

    fn lock(&self) -> MutexGuard<'_, Barrier> {
        self.barrier.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, f: impl FnOnce(&mut Barrier)) {
        f(&mut self.lock());
        self.changed.notify_waiters();
    }
}

/// A driver's membership.
#[derive(Debug)]
pub struct GateHandle {
    gate: Arc<Gate>,
    member: Member,
    rx: watch::Receiver<GateState>,
    reported: Option<u64>,
    released: bool,
}

impl GateHandle {
    /// The driver ended cleanly (everything it handed on is recorded): it leaves the
    /// barrier. A handle dropped without this (a panic, a cancelled task) fails it.
    pub fn release(mut self) {
        self.released = true;
    }

    /// Whether batches must wait (sealed).
    pub fn sealed(&self) -> bool {
        self.rx.borrow().sealed
    }

    /// The current transaction's number.
    pub fn generation(&self) -> u64 {
        self.rx.borrow().generation
    }

    /// Whether the transaction failed (the driver stops).
    pub fn failed(&self) -> bool {
        self.rx.borrow().failed
    }

    /// Reports quiet for the sealed generation (once per generation).
    pub fn quiet(&mut self) {
        let s = *self.rx.borrow();
        if s.sealed && self.reported != Some(s.generation) {
            self.reported = Some(s.generation);
            let m = &self.member;
            self.gate.update(|b| b.quiet(m, s.generation));
        }
    }

    /// A driver failed: the open transaction must not commit.
    pub fn fail(&self) {
        self.gate.fail();
    }

    /// Resolves when the gate seals or opens.
    pub async fn changed(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for GateHandle {
    fn drop(&mut self) {
        if !self.released {
            self.gate.fail();
        }
        let m = &self.member;
        self.gate.update(|b| b.leave(m));
    }
}

#[cfg(test)]
mod tests;
