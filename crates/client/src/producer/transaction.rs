//! The transaction lifecycle of a transactional producer, as a pure state machine: no I/O,
//! no clock, no tasks. The driver in `super::transactional` asks it what to do, does it
//! (AddPartitionsToTxn, Produce, EndTxn, InitProducerId) and feeds back the outcome.
//!
//! Phases: `Ready` → `InTransaction` → `Committing` | `Aborting` → `Ready`, with
//! `Abortable` (the open transaction can only be aborted), `NeedsEpochBump` (aborted, but the
//! sequence numbers must restart under a new epoch first) and the terminal `Fenced` and
//! `Fatal`.
//!
//! Rules:
//!
//! - **one transaction at a time**: [`Transaction::begin`] only from `Ready`; a batch is
//!   admitted only inside a transaction, and not once its commit or abort has begun;
//! - **a partition is added before its first batch, once per transaction**: the first
//!   batch for a partition waits for its AddPartitionsToTxn; the partitions wanted while
//!   one AddPartitionsToTxn is out go together in the next one;
//! - **a group's offsets are added once per transaction** (AddOffsetsToTxn) before its
//!   first TxnOffsetCommit; they commit or abort with the batches;
//! - **commit waits for every batch**: EndTxn(commit) is sent only once every admitted
//!   batch is acknowledged; a batch that failed makes the transaction abortable instead;
//!   a transaction that added no partition and no group ends without an EndTxn;
//! - **abort after the batches resolve**: EndTxn(abort) is sent once every admitted batch
//!   has its outcome;
//!   when a batch failed in a way that broke the sequence (the sequencer needs a new epoch)
//!   the abort ends with a KIP-360 epoch bump (InitProducerId with the current id and
//!   epoch), never with a fresh id: a bump the broker refuses is fatal, since a fresh
//!   InitProducerId would fence whichever producer owns the transactional id now;
//! - **errors are classified by [`classify`]**: `Retry` (coordinator moved or loading,
//!   CONCURRENT_TRANSACTIONS, network) is retried by the driver with backoff until its
//!   deadline, after which it counts as the call failing; `Abortable` makes the open
//!   transaction abortable; `Fenced` (another producer with the same transactional id, or
//!   the coordinator rejecting our epoch) and `Fatal` (authorization, invalid state,
//!   unsupported) are terminal: every later call fails with the same error;
//! - **an unknown outcome is retried, not guessed**: an EndTxn(commit) that failed with a
//!   retriable error leaves the transaction `Committing`, and only [`Transaction::begin_commit`]
//!   (sending EndTxn(commit) again; the coordinator answers a repeat alike) is allowed;
//! - **a terminal phase is never left**, and `Fenced` wins over `Fatal` over `Abortable`.
//!
//! The transitions stay together in this file (about 440 lines): each rule above is a few
//! methods reading and writing the same phase and counters, and they are checked against
//! the rules side by side. Only the error classification, a flat table of codes per call,
//! is apart, in `transaction/verdict.rs`.

use std::collections::HashSet;

use crate::error::{Error, ErrorKind};
use crate::producer::sequencer::{Ack, TopicPartition};

mod verdict;

pub use verdict::{TxnApi, Verdict, classify};

/// Where the transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No transaction open: [`Transaction::begin`] starts one.
    Ready,
    /// A transaction is open and takes batches.
    InTransaction,
    /// Commit under way (or its EndTxn outcome is unknown and must be retried).
    Committing,
    /// Abort under way.
    Aborting,
    /// The open transaction cannot commit; it must be aborted.
    Abortable,
    /// Aborted, but a new epoch is needed before the next transaction.
    NeedsEpochBump,
    /// Another producer owns the transactional id now. Terminal.
    Fenced,
    /// Unrecoverable (authorization, invalid state, refused epoch bump). Terminal.
    Fatal,
}

/// What a batch for a partition may do now ([`Transaction::admit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Send it (the partition is in the transaction); call [`Transaction::sent`] after.
    Go,
    /// Wait until the pending AddPartitionsToTxn is answered, then ask again.
    Wait,
    /// Send AddPartitionsToTxn for these partitions, report with
    /// [`Transaction::on_added`], then ask again.
    Add(Vec<TopicPartition>),
}

/// What ending the transaction takes, once every batch resolved ([`Transaction::end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Nothing was added: the transaction is over without an EndTxn.
    Done,
    /// Send EndTxn with `commit`, report with [`Transaction::on_ended`].
    Send {
        /// Commit (true) or abort.
        commit: bool,
    },
}

/// The transaction state of one transactional producer.
#[derive(Debug)]
pub struct Transaction {
    phase: Phase,
    /// Why the transaction is abortable, or the terminal error.
    cause: Option<Error>,
    /// Partitions in the open transaction.
    added: HashSet<TopicPartition>,
    /// Wanted, not yet asked for.
    pending: Vec<TopicPartition>,
    /// In the AddPartitionsToTxn that is out (`Some` while it is out).
    adding: Option<Vec<TopicPartition>>,
    /// Admitted batches whose send has not returned yet.
    sending: usize,
    /// Consumer groups whose offsets are in the open transaction (AddOffsetsToTxn done).
    groups: HashSet<String>,
}

impl Default for Transaction {
    fn default() -> Self {
        Self::new()
    }
}

fn invalid(msg: &str) -> Error {
    Error::invalid(msg)
}

impl Transaction {
    /// A producer with no transaction open.
    pub fn new() -> Self {
        Transaction {
            phase: Phase::Ready,
            cause: None,
            added: HashSet::new(),
            pending: Vec::new(),
            adding: None,
            sending: 0,
            groups: HashSet::new(),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The error that made the transaction abortable, or the terminal error.
    pub fn cause(&self) -> Option<&Error> {
        self.cause.as_ref()
    }

    /// Partitions added to the open transaction.
    pub fn partitions(&self) -> usize {
        self.added.len()
    }

    /// Admitted batches whose send has not returned yet.
    pub fn sending(&self) -> usize {
        self.sending
    }

    /// The error a call gets in a phase that does not allow it.
    fn refusal(&self, what: &str) -> Error {
        match (self.phase, &self.cause) {
            (Phase::Fenced | Phase::Fatal | Phase::Abortable, Some(e)) => e.clone(),
            (Phase::Ready, _) => invalid(&format!("{what}: no transaction open (begin first)")),
            (Phase::NeedsEpochBump, _) => abortable(&format!(
                "{what}: the last abort still needs a new producer epoch; abort again"
            )),
            (Phase::Committing, _) => invalid(&format!(
                "{what}: a commit is under way or its outcome is unknown (commit again)"
            )),
            (Phase::Aborting, _) => invalid(&format!("{what}: an abort is under way")),
            (_, _) => invalid(&format!("{what}: not allowed in phase {:?}", self.phase)),
        }
    }

    /// Starts a transaction.
    pub fn begin(&mut self) -> Result<(), Error> {
        if self.phase != Phase::Ready {
            return Err(self.refusal("begin"));
        }
        self.phase = Phase::InTransaction;
        Ok(())
    }

    /// Asks whether a batch for `tp` may be sent now.
    pub fn admit(&mut self, tp: &TopicPartition) -> Result<Admission, Error> {
        if self.try_admit(tp) {
            return Ok(Admission::Go);
        }
        self.admit_slow(tp)
    }

    /// [`Transaction::admit`] when it would say [`Admission::Go`] (the transaction is open
    /// and `tp` is in it): counts the send and says true. Otherwise changes nothing and
    /// says false (`admit` tells what to do).
    pub fn try_admit(&mut self, tp: &TopicPartition) -> bool {
        if self.phase == Phase::InTransaction && self.added.contains(tp) {
            self.sending += 1;
            return true;
        }
        false
    }

    fn admit_slow(&mut self, tp: &TopicPartition) -> Result<Admission, Error> {
        if self.phase != Phase::InTransaction {
            return Err(self.refusal("send"));
        }
        let asked = self.adding.as_ref().is_some_and(|a| a.contains(tp));
        if !asked && !self.pending.contains(tp) {
            self.pending.push(tp.clone());
        }
        if self.adding.is_some() {
            return Ok(Admission::Wait);
        }
        let batch = std::mem::take(&mut self.pending);
        self.adding = Some(batch.clone());
        Ok(Admission::Add(batch))
    }

    /// Asks whether offsets of `group` may be committed in the transaction now: `Ok(true)`
    /// when AddOffsetsToTxn must go first ([`Transaction::on_offsets_added`]). Counts as a
    /// send until [`Transaction::sent`]; report the TxnOffsetCommit with
    /// [`Transaction::on_offsets_committed`].
    pub fn admit_offsets(&mut self, group: &str) -> Result<bool, Error> {
        if self.phase != Phase::InTransaction {
            return Err(self.refusal("send offsets"));
        }
        self.sending += 1;
        Ok(!self.groups.contains(group))
    }

    /// The outcome of AddOffsetsToTxn for `group` (after the driver's retries).
    pub fn on_offsets_added(&mut self, group: &str, result: Result<(), Error>) {
        match result {
            Ok(()) => {
                self.groups.insert(group.to_string());
            }
            Err(e) => self.fail_call(TxnApi::AddOffsets, e),
        }
    }

    /// The outcome of TxnOffsetCommit (after the driver's retries).
    pub fn on_offsets_committed(&mut self, result: Result<(), Error>) {
        if let Err(e) = result {
            self.fail_call(TxnApi::TxnOffsetCommit, e);
        }
    }

    /// A coordinator call failed for good (a `Retry` verdict means the driver gave up).
    fn fail_call(&mut self, api: TxnApi, e: Error) {
        let verdict = match classify(api, &e) {
            Verdict::Retry => Verdict::Abortable,
            v => v,
        };
        self.fail(verdict, e);
    }

    /// The send of an admitted batch returned (queued or refused).
    pub fn sent(&mut self) {
        self.sending = self.sending.saturating_sub(1);
    }

    /// The outcome of the AddPartitionsToTxn from [`Admission::Add`] (after the driver's
    /// retries).
    pub fn on_added(&mut self, result: Result<(), Error>) {
        let Some(batch) = self.adding.take() else {
            return;
        };
        match result {
            Ok(()) => self.added.extend(batch),
            Err(e) => self.fail_call(TxnApi::AddPartitions, e),
        }
    }

    /// The AddPartitionsToTxn from [`Admission::Add`] was abandoned (its caller was
    /// cancelled): its partitions are asked for again by the next batch.
    pub fn on_add_abandoned(&mut self) {
        if let Some(mut batch) = self.adding.take() {
            batch.append(&mut self.pending);
            self.pending = batch;
        }
    }

    /// The outcome of one batch of the transaction.
    pub fn on_batch(&mut self, result: &Result<Ack, Error>) {
        if let Err(e) = result {
            let verdict = classify(TxnApi::Produce, e);
            self.fail(verdict, e.clone());
        }
    }

    /// Records a failure with its verdict (never downgrading a terminal phase).
    fn fail(&mut self, verdict: Verdict, e: Error) {
        let (phase, err) = match verdict {
            Verdict::Fenced => (Phase::Fenced, fenced(&e)),
            Verdict::Fatal => (Phase::Fatal, fatal(&e)),
            Verdict::Abortable | Verdict::Retry => {
                // Failures while aborting are expected: the abort discards them anyway.
                if !matches!(self.phase, Phase::InTransaction | Phase::Committing) {
                    return;
                }
                (Phase::Abortable, abortable(&e.to_string()))
            }
        };
        let rank = |p: Phase| match p {
            Phase::Fenced => 3,
            Phase::Fatal => 2,
            Phase::Abortable => 1,
            _ => 0,
        };
        if rank(phase) > rank(self.phase) {
            self.phase = phase;
            self.cause = Some(err);
        }
    }

    /// Starts (or, after an unknown outcome, repeats) a commit. Then: wait until
    /// [`Transaction::sending`] is 0 and every batch resolved, and call
    /// [`Transaction::end`].
    pub fn begin_commit(&mut self) -> Result<(), Error> {
        match self.phase {
            Phase::InTransaction | Phase::Committing => {
                self.phase = Phase::Committing;
                Ok(())
            }
            _ => Err(self.refusal("commit")),
        }
    }

    /// Starts an abort. `Ok(false)`: there is nothing to abort. Then: wait until
    /// [`Transaction::sending`] is 0 and every batch resolved, and call
    /// [`Transaction::end`] (or, in `NeedsEpochBump`, go straight to the bump).
    pub fn begin_abort(&mut self) -> Result<bool, Error> {
        match self.phase {
            Phase::Ready => Ok(false),
            Phase::InTransaction | Phase::Abortable | Phase::Aborting => {
                self.phase = Phase::Aborting;
                Ok(true)
            }
            Phase::NeedsEpochBump => Ok(true),
            _ => Err(self.refusal("abort")),
        }
    }

    /// What ending the transaction takes, once every batch has resolved.
    pub fn end(&mut self) -> Result<End, Error> {
        let commit = match self.phase {
            Phase::Committing => true,
            Phase::Aborting => false,
            _ => return Err(self.refusal("end")),
        };
        if self.added.is_empty() && self.adding.is_none() && self.groups.is_empty() {
            if commit {
                self.reset(Phase::Ready);
            }
            return Ok(End::Done);
        }
        Ok(End::Send { commit })
    }

    /// The outcome of EndTxn (after the driver's retries). `needs_new_epoch`: the
    /// sequencer needs a new epoch (a batch broke the sequence), so a successful abort
    /// leads to `NeedsEpochBump`. An abort that needed no EndTxn ([`End::Done`]) is
    /// reported here with `Ok(())` as well.
    pub fn on_ended(&mut self, result: Result<(), Error>, needs_new_epoch: bool) {
        let commit = match self.phase {
            Phase::Committing => true,
            Phase::Aborting => false,
            _ => return,
        };
        match result {
            Ok(()) if !commit && needs_new_epoch => self.reset(Phase::NeedsEpochBump),
            Ok(()) => self.reset(Phase::Ready),
            Err(e) => match classify(TxnApi::EndTxn, &e) {
                // Unknown outcome: the same call is repeated.
                Verdict::Retry => {}
                Verdict::Abortable if commit => self.fail(Verdict::Abortable, e),
                // An abort the coordinator cannot place: the epoch bump aborts anything
                // still open.
                Verdict::Abortable => self.reset(Phase::NeedsEpochBump),
                v => self.fail(v, e),
            },
        }
    }

    /// True when the next step is a KIP-360 epoch bump.
    pub fn needs_epoch_bump(&self) -> bool {
        self.phase == Phase::NeedsEpochBump
    }

    /// The outcome of the epoch bump (after the driver's retries).
    pub fn on_bumped(&mut self, result: Result<(), Error>) {
        if self.phase != Phase::NeedsEpochBump {
            return;
        }
        match result {
            Ok(()) => self.reset(Phase::Ready),
            Err(e) => match classify(TxnApi::InitProducerId, &e) {
                Verdict::Retry => {}
                Verdict::Fenced => self.fail(Verdict::Fenced, e),
                _ => self.fail(
                    Verdict::Fatal,
                    e.message(
                        "the broker refused the KIP-360 epoch bump; the producer must be \
                         created again (its InitProducerId fences any other owner)",
                    ),
                ),
            },
        }
    }

    fn reset(&mut self, phase: Phase) {
        self.phase = phase;
        self.cause = None;
        self.added.clear();
        self.pending.clear();
        self.adding = None;
        self.groups.clear();
    }
}

fn fenced(e: &Error) -> Error {
    Error::new(ErrorKind::Fenced(format!(
        "another producer with the same transactional id took over, or the coordinator \
         rejected this epoch ({e})"
    )))
}

fn fatal(e: &Error) -> Error {
    Error::new(ErrorKind::TransactionFatal(e.to_string()))
}

fn abortable(msg: &str) -> Error {
    Error::new(ErrorKind::TransactionAbortable(msg.to_string()))
}

#[cfg(test)]
mod tests;
