//! The idempotent-producer sequencing state machine. Pure: no I/O, no clock, no tasks; the
//! driver in `super::idempotent` feeds it events and does what it says.
//!
//! Per partition it keeps the batches not yet delivered to the caller, in sequence order:
//!
//! - at most `max_in_flight` (5: the broker remembers the last 5 batches per producer and
//!   partition for duplicate detection);
//! - a batch is (re)sent only when every earlier batch has been sent, so batches reach the
//!   broker in sequence order;
//! - a retried batch keeps its sequence (also to a new leader);
//! - results are delivered strictly in order: a batch's outcome is released only when all
//!   earlier batches have theirs;
//! - DUPLICATE_SEQUENCE_NUMBER is success; OUT_OF_ORDER_SEQUENCE_NUMBER is a retry when an
//!   earlier batch is still unresolved (the broker saw a gap we caused), and otherwise — like
//!   UNKNOWN_PRODUCER_ID, a fenced epoch or a batch failing for good — needs a new epoch: sending stops,
//!   in-flight requests drain, the driver bumps the epoch, and every unresolved batch is
//!   renumbered from sequence 0.
//! - a batch that fails for good (a permanent error, or its delivery deadline) takes every
//!   later unresolved batch of its partition with it, and every batch enqueued for that
//!   partition afterwards fails at once, until the caller calls
//!   [`Sequencer::reset_partition`]: later batches are never renumbered and written past a
//!   hole, so the target never holds batch N+1 without batch N. (A batch whose deadline
//!   passed may still have been written; failing it is the conservative answer, and the
//!   caller's recovery checks what the target holds.)
//!
//! It also assembles Produce requests for the per-broker sink ([`Sequencer::assemble`]):
//! partitions with a batch ready to (re)send are queued oldest-ready first, and one request
//! takes at most one batch per partition (the broker rejects more), the first `Ready` one of
//! each, up to a byte cap.
//!
//! The batches' outcomes (answers fed back, failures, resets, delivery in order) are in
//! `sequencer/outcome.rs`.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::rpc::txn::ProducerIdentity;

mod outcome;

/// A partition: `(topic, partition)`. The topic is shared (`Arc<str>`), so handing a
/// partition around never allocates.
pub type TopicPartition = (Arc<str>, i32);

/// Identifies one enqueued batch.
pub type Token = u64;

/// What the broker acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Offset of the batch's first record; -1 when the broker answered
    /// DUPLICATE_SEQUENCE_NUMBER without the original offset.
    pub base_offset: i64,
    /// Broker append time for LogAppendTime topics, else -1.
    pub log_append_time_ms: i64,
    /// True when the broker said it already had this batch.
    pub duplicate: bool,
}

/// A request to send: stamp `identity`/`base_sequence` on batch `token` and send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The batch.
    pub token: Token,
    /// Producer id and epoch to stamp.
    pub identity: ProducerIdentity,
    /// Base sequence to stamp.
    pub base_sequence: i32,
    /// Attempt number, to tell a response from a stale earlier attempt.
    pub attempt: u32,
}

#[derive(Debug)]
enum State {
    /// Waiting to be (re)sent.
    Ready,
    /// Sent; `attempt` is the latest attempt.
    InFlight,
    /// Resolved; waiting for earlier batches before delivery.
    Done(Result<Ack, Error>),
}

#[derive(Debug)]
struct Entry {
    token: Token,
    seq: i32,
    count: i32,
    /// Encoded size of the batch (for the request byte cap).
    bytes: usize,
    attempt: u32,
    in_flight: u32,
    state: State,
}

#[derive(Debug, Default)]
struct Partition {
    next_seq: i32,
    entries: VecDeque<Entry>,
    /// In [`Sequencer::ready`] (each partition is queued at most once).
    queued: bool,
    /// A batch failed for good: later batches fail with it until reset.
    failed: Option<Error>,
}

impl Partition {
    /// Batch `idx` failed for good with `err`: it and every later unresolved batch fail.
    fn fail_from(&mut self, idx: usize, err: Error) {
        let cascade = Error::new(crate::error::ErrorKind::NotSent(format!(
            "an earlier batch of this partition failed for good ({err}); later batches are \
             not written past it"
        )));
        for (i, e) in self.entries.iter_mut().enumerate().skip(idx) {
            if i == idx {
                e.state = State::Done(Err(err.clone()));
            } else if !matches!(e.state, State::Done(_)) {
                e.state = State::Done(Err(cascade.clone()));
            }
        }
        self.failed = Some(cascade);
    }
}

impl Partition {
    fn first_ready(&self) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| matches!(e.state, State::Ready))
    }
}

/// The sequencing state for one producer id across partitions.
#[derive(Debug)]
pub struct Sequencer {
    identity: Option<ProducerIdentity>,
    needs_new_epoch: bool,
    max_in_flight: usize,
    next_token: Token,
    partitions: FxHashMap<TopicPartition, Partition>,
    /// Partitions that may have a batch to (re)send, oldest first.
    ready: VecDeque<TopicPartition>,
    /// Batches enqueued and not yet taken by [`Sequencer::take_delivered`].
    unresolved: usize,
}

/// Kafka's sequence arithmetic: wraps from `i32::MAX` to 0.
pub fn increment_sequence(seq: i32, by: i32) -> i32 {
    if seq > i32::MAX - by {
        by - (i32::MAX - seq) - 1
    } else {
        seq + by
    }
}

impl Sequencer {
    /// An empty sequencer allowing `max_in_flight` unresolved batches per partition.
    pub fn new(max_in_flight: usize) -> Self {
        Sequencer {
            identity: None,
            needs_new_epoch: false,
            max_in_flight,
            next_token: 1,
            partitions: FxHashMap::default(),
            ready: VecDeque::new(),
            unresolved: 0,
        }
    }

    /// Batches enqueued and not yet delivered (0: nothing left to do).
    pub fn unresolved(&self) -> usize {
        self.unresolved
    }

    /// True when some partition is queued as having a batch to send.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Queues `tp` as having a batch to send, if it has one and is not queued already.
    pub fn mark_ready(&mut self, tp: &TopicPartition) {
        if let Some(p) = self.partitions.get_mut(tp)
            && !p.queued
            && p.first_ready().is_some()
        {
            p.queued = true;
            self.ready.push_back(tp.clone());
        }
    }

    /// Moves the queued partitions (oldest first) to the back of `out`. A partition taken
    /// and not sent must be given back with [`Sequencer::mark_ready`].
    pub fn take_ready(&mut self, out: &mut VecDeque<TopicPartition>) {
        while let Some(tp) = self.ready.pop_front() {
            if let Some(p) = self.partitions.get_mut(&tp) {
                p.queued = false;
            }
            out.push_back(tp);
        }
    }

    /// Fills one Produce request: takes partitions from the front of `candidates` and marks
    /// the first `Ready` batch of each in flight (at most one batch per partition), pushing
    /// `(partition, transmission)` to `out` in candidate order, as long as the request stays
    /// within `max_bytes` (a single larger batch goes alone). Stops at the first batch that
    /// does not fit, leaving its partition at the front of `candidates`. Candidates with
    /// nothing to send are dropped; a partition that has another `Ready` batch after the one
    /// taken is pushed to `again` (for the next request). Nothing is taken while a new
    /// identity is needed. Returns the request's batch bytes.
    pub fn assemble(
        &mut self,
        candidates: &mut VecDeque<TopicPartition>,
        max_bytes: usize,
        out: &mut Vec<(TopicPartition, Transmit)>,
        again: &mut Vec<TopicPartition>,
    ) -> usize {
        let mut bytes = 0usize;
        if self.needs_identity() {
            return 0;
        }
        while let Some(tp) = candidates.front() {
            let size = match self.partitions.get(tp).and_then(Partition::first_ready) {
                Some(e) => e.bytes,
                None => {
                    candidates.pop_front();
                    continue;
                }
            };
            if !out.is_empty() && bytes.saturating_add(size) > max_bytes {
                break;
            }
            let Some(tp) = candidates.pop_front() else {
                break;
            };
            let Some(t) = self.next_transmit(&tp) else {
                continue;
            };
            bytes = bytes.saturating_add(size);
            if self
                .partitions
                .get(&tp)
                .is_some_and(|p| p.first_ready().is_some())
            {
                again.push(tp.clone());
            }
            out.push((tp, t));
        }
        bytes
    }

    /// The current producer id and epoch.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.identity
    }

    /// True when a new producer id/epoch must be obtained before anything else is sent.
    pub fn needs_identity(&self) -> bool {
        self.identity.is_none() || self.needs_new_epoch
    }

    /// Requests sent and not yet answered, over all partitions. A new epoch is installed
    /// only when this is 0, so no old-epoch request can land after the renumbering.
    pub fn in_flight(&self) -> usize {
        self.partitions
            .values()
            .flat_map(|p| &p.entries)
            .map(|e| e.in_flight as usize)
            .sum()
    }

    /// Installs a new identity (first one, or after an epoch bump): every partition's
    /// unresolved batches are renumbered from sequence 0, in order.
    pub fn set_identity(&mut self, identity: ProducerIdentity) {
        self.identity = Some(identity);
        self.needs_new_epoch = false;
        for p in self.partitions.values_mut() {
            let mut seq = 0;
            for e in p.entries.iter_mut() {
                if !matches!(e.state, State::Done(_)) {
                    e.seq = seq;
                    e.state = State::Ready;
                    seq = increment_sequence(seq, e.count);
                }
            }
            p.next_seq = seq;
        }
        let tps: Vec<TopicPartition> = self.partitions.keys().cloned().collect();
        for tp in &tps {
            self.mark_ready(tp);
        }
    }

    /// True when `tp` has room for another batch.
    pub fn has_room(&self, tp: &TopicPartition) -> bool {
        self.partitions
            .get(tp)
            .is_none_or(|p| p.entries.len() < self.max_in_flight)
    }

    /// The sequence the next batch of `tp` would get.
    pub fn peek_sequence(&self, tp: &TopicPartition) -> i32 {
        self.partitions.get(tp).map_or(0, |p| p.next_seq)
    }

    /// Adds a batch of `count` records (`lastOffsetDelta + 1`) and `bytes` bytes to `tp`
    /// and queues `tp` as ready; returns the batch's token and base sequence. The caller
    /// must have checked [`Sequencer::has_room`].
    pub fn enqueue(&mut self, tp: &TopicPartition, count: i32, bytes: usize) -> (Token, i32) {
        let token = self.next_token;
        self.next_token += 1;
        self.unresolved += 1;
        let p = match self.partitions.get_mut(tp) {
            Some(p) => p,
            None => self.partitions.entry(tp.clone()).or_default(),
        };
        if let Some(err) = &p.failed {
            // Never written past a hole: the batch fails at once, taking no sequence.
            let state = State::Done(Err(err.clone()));
            p.entries.push_back(Entry {
                token,
                seq: p.next_seq,
                count,
                bytes,
                attempt: 0,
                in_flight: 0,
                state,
            });
            return (token, p.next_seq);
        }
        let seq = p.next_seq;
        p.next_seq = increment_sequence(seq, count);
        p.entries.push_back(Entry {
            token,
            seq,
            count,
            bytes,
            attempt: 0,
            in_flight: 0,
            state: State::Ready,
        });
        self.mark_ready(tp);
        (token, seq)
    }

    /// The batch [`Sequencer::next_transmit`] would return, without changing anything.
    pub fn peek_transmit(&self, tp: &TopicPartition) -> Option<Token> {
        if self.needs_identity() {
            return None;
        }
        self.partitions
            .get(tp)?
            .entries
            .iter()
            .find(|e| matches!(e.state, State::Ready))
            .map(|e| e.token)
    }

    /// The next batch of `tp` to send, marked in flight: the first `Ready` batch, unless a
    /// new identity is needed. Batches therefore leave in sequence order.
    pub fn next_transmit(&mut self, tp: &TopicPartition) -> Option<Transmit> {
        if self.needs_identity() {
            return None;
        }
        let identity = self.identity?;
        let p = self.partitions.get_mut(tp)?;
        let e = p
            .entries
            .iter_mut()
            .find(|e| matches!(e.state, State::Ready))?;
        e.attempt += 1;
        e.in_flight += 1;
        e.state = State::InFlight;
        Some(Transmit {
            token: e.token,
            identity,
            base_sequence: e.seq,
            attempt: e.attempt,
        })
    }
}

#[cfg(test)]
mod tests;
