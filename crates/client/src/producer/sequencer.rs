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

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use crate::error::Error;
use crate::rpc::txn::ProducerIdentity;

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

    /// Feeds the outcome of attempt `attempt` of batch `token`.
    pub fn on_result(
        &mut self,
        tp: &TopicPartition,
        token: Token,
        attempt: u32,
        result: Result<Ack, Error>,
    ) {
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        let Some(idx) = p.entries.iter().position(|e| e.token == token) else {
            return;
        };
        let earlier_unresolved = p
            .entries
            .iter()
            .take(idx)
            .any(|e| !matches!(e.state, State::Done(Ok(_))));
        let e = &mut p.entries[idx];
        e.in_flight = e.in_flight.saturating_sub(1);
        if matches!(e.state, State::Done(_)) {
            return;
        }
        let err = match result {
            Ok(ack) => {
                e.state = State::Done(Ok(ack));
                return;
            }
            Err(err) => err,
        };
        if err.kafka_error() == Some(ResponseError::DuplicateSequenceNumber) {
            e.state = State::Done(Ok(Ack {
                base_offset: -1,
                log_append_time_ms: -1,
                duplicate: true,
            }));
            return;
        }
        // An older attempt's failure says nothing the latest attempt will not say itself.
        if attempt != e.attempt {
            return;
        }
        match err.kafka_error() {
            Some(ResponseError::OutOfOrderSequenceNumber) if earlier_unresolved => {
                e.state = State::Ready;
                self.mark_ready(tp);
            }
            Some(
                ResponseError::OutOfOrderSequenceNumber
                | ResponseError::UnknownProducerId
                | ResponseError::InvalidProducerEpoch
                | ResponseError::ProducerFenced,
            ) => {
                e.state = State::Ready;
                self.needs_new_epoch = true;
                // Queued again by set_identity once the new epoch is in.
            }
            _ if err.is_retriable() => {
                e.state = State::Ready;
                self.mark_ready(tp);
            }
            _ => {
                // The batch failed for good: its sequence numbers were never written, so
                // the sequence must restart under a new epoch; later batches fail with it.
                p.fail_from(idx, err);
                self.needs_new_epoch = true;
            }
        }
    }

    /// Fails batch `token` for good (its delivery deadline passed). Like any permanent
    /// failure this forces a new epoch.
    pub fn fail(&mut self, tp: &TopicPartition, token: Token, err: Error) {
        if let Some(p) = self.partitions.get_mut(tp)
            && let Some(idx) = p.entries.iter().position(|e| e.token == token)
            && !matches!(p.entries[idx].state, State::Done(_))
        {
            p.fail_from(idx, err);
            self.needs_new_epoch = true;
        }
    }

    /// The error later batches of `tp` fail with, if a batch of it failed for good.
    pub fn partition_failure(&self, tp: &TopicPartition) -> Option<&Error> {
        self.partitions.get(tp).and_then(|p| p.failed.as_ref())
    }

    /// Lets `tp` take batches again after a failure (the caller has dealt with it, e.g.
    /// restarted the partition from recovered state).
    pub fn reset_partition(&mut self, tp: &TopicPartition) {
        if let Some(p) = self.partitions.get_mut(tp) {
            p.failed = None;
        }
    }

    /// Gives back the room of `tp`'s queue when none of its batches is unresolved (a
    /// partition gone idle: its queue, grown to the window, is ~200 bytes of room). The
    /// partition keeps its sequence and any failure; a later batch grows the queue again.
    pub fn shrink_partition(&mut self, tp: &TopicPartition) {
        if let Some(p) = self.partitions.get_mut(tp)
            && p.entries.is_empty()
        {
            p.entries = VecDeque::new();
        }
    }

    /// [`Sequencer::reset_partition`] for every partition (a transactional producer after
    /// its abort: the aborted transaction leaves no hole behind).
    pub fn reset_all(&mut self) {
        for p in self.partitions.values_mut() {
            p.failed = None;
        }
    }

    /// Removes and returns the resolved batches at the front of `tp`, in order.
    pub fn take_delivered(&mut self, tp: &TopicPartition) -> Vec<(Token, Result<Ack, Error>)> {
        let mut out = Vec::new();
        if let Some(p) = self.partitions.get_mut(tp) {
            while p
                .entries
                .front()
                .is_some_and(|e| matches!(e.state, State::Done(_)) && e.in_flight == 0)
            {
                if let Some(Entry {
                    token,
                    state: State::Done(r),
                    ..
                }) = p.entries.pop_front()
                {
                    self.unresolved -= 1;
                    out.push((token, r));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicPartition {
        (Arc::from("t"), 0)
    }
    fn id(epoch: i16) -> ProducerIdentity {
        ProducerIdentity { id: 7, epoch }
    }
    fn ok(off: i64) -> Result<Ack, Error> {
        Ok(Ack {
            base_offset: off,
            log_append_time_ms: -1,
            duplicate: false,
        })
    }
    fn code(c: i16) -> Result<Ack, Error> {
        Err(Error::from_code(c).unwrap())
    }

    #[test]
    fn sequences_room_and_in_order_delivery() {
        let mut s = Sequencer::new(5);
        assert!(
            s.next_transmit(&tp()).is_none(),
            "nothing sent before an identity"
        );
        s.set_identity(id(0));
        let mut toks = Vec::new();
        for i in 0..5 {
            assert!(s.has_room(&tp()));
            let (t, seq) = s.enqueue(&tp(), 10, 100);
            assert_eq!(seq, i * 10);
            toks.push(t);
        }
        assert!(!s.has_room(&tp()));
        let sent: Vec<_> = (0..5).map(|_| s.next_transmit(&tp()).unwrap()).collect();
        assert!(s.next_transmit(&tp()).is_none());
        assert_eq!(sent[3].base_sequence, 30);
        // Answers out of order: nothing is delivered until the first one is in.
        s.on_result(&tp(), toks[1], 1, ok(10));
        assert!(s.take_delivered(&tp()).is_empty());
        s.on_result(&tp(), toks[0], 1, ok(0));
        let d = s.take_delivered(&tp());
        assert_eq!(
            d.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![toks[0], toks[1]]
        );
        assert!(s.has_room(&tp()));
    }

    #[test]
    fn an_idle_partition_gives_its_queue_back_and_keeps_its_sequence() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (t, _) = s.enqueue(&tp(), 10, 100);
        s.shrink_partition(&tp());
        let _ = s.next_transmit(&tp()).unwrap();
        s.shrink_partition(&tp());
        assert_eq!(s.partitions[&tp()].entries.len(), 1, "unresolved: kept");
        s.on_result(&tp(), t, 1, ok(0));
        assert_eq!(s.take_delivered(&tp()).len(), 1);
        assert!(s.partitions[&tp()].entries.capacity() > 0);
        s.shrink_partition(&tp());
        assert_eq!(s.partitions[&tp()].entries.capacity(), 0);
        assert_eq!(s.enqueue(&tp(), 5, 100).1, 10, "the sequence goes on");
    }

    #[test]
    fn retry_keeps_sequence_and_later_batches_wait_their_turn() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 3, 100);
        let (b, _) = s.enqueue(&tp(), 3, 100);
        let ta = s.next_transmit(&tp()).unwrap();
        let tb = s.next_transmit(&tp()).unwrap();
        // Leader moved: a fails retriably, b then fails out of order (a is missing).
        s.on_result(&tp(), a, ta.attempt, code(6));
        s.on_result(&tp(), b, tb.attempt, code(45));
        assert!(
            !s.needs_identity(),
            "OOOSN behind a failed batch is a retry, not a reset"
        );
        let ra = s.next_transmit(&tp()).unwrap();
        assert_eq!((ra.token, ra.base_sequence, ra.attempt), (a, 0, 2));
        let rb = s.next_transmit(&tp()).unwrap();
        assert_eq!((rb.token, rb.base_sequence), (b, 3));
        s.on_result(&tp(), a, 2, ok(100));
        s.on_result(&tp(), b, 2, code(46)); // duplicate = success
        let d = s.take_delivered(&tp());
        assert_eq!(d.len(), 2);
        assert!(d[1].1.as_ref().unwrap().duplicate);
    }

    #[test]
    fn stale_attempt_errors_are_ignored_but_successes_count() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1, 100);
        let t1 = s.next_transmit(&tp()).unwrap();
        s.on_result(
            &tp(),
            a,
            t1.attempt,
            Err(Error::new(crate::error::ErrorKind::Timeout)),
        );
        let t2 = s.next_transmit(&tp()).unwrap();
        assert_eq!(t2.attempt, 2);
        s.on_result(&tp(), a, 1, code(6)); // stale
        assert!(s.take_delivered(&tp()).is_empty());
        s.on_result(&tp(), a, 2, ok(5));
        assert_eq!(
            s.take_delivered(&tp())[0].1.as_ref().unwrap().base_offset,
            5
        );
    }

    #[test]
    fn out_of_order_at_the_head_bumps_epoch_and_renumbers() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 2, 100);
        let (b, _) = s.enqueue(&tp(), 2, 100);
        let (c, _) = s.enqueue(&tp(), 2, 100);
        for _ in 0..3 {
            s.next_transmit(&tp()).unwrap();
        }
        s.on_result(&tp(), a, 1, ok(0));
        s.on_result(&tp(), b, 1, code(45)); // a acked, so this is a real sequence problem
        assert!(s.needs_identity());
        assert!(s.next_transmit(&tp()).is_none(), "sending stops");
        assert_eq!(s.in_flight(), 1, "c is still in flight");
        s.on_result(&tp(), c, 1, code(45));
        assert_eq!(s.in_flight(), 0);
        s.set_identity(id(1));
        let rb = s.next_transmit(&tp()).unwrap();
        assert_eq!((rb.token, rb.base_sequence, rb.identity.epoch), (b, 0, 1));
        let rc = s.next_transmit(&tp()).unwrap();
        assert_eq!((rc.token, rc.base_sequence), (c, 2));
        assert_eq!(s.peek_sequence(&tp()), 4);
        assert_eq!(s.take_delivered(&tp()).len(), 1, "a is delivered");
    }

    #[test]
    fn permanent_failure_is_delivered_and_resets_the_sequence() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 2, 100);
        let (b, _) = s.enqueue(&tp(), 2, 100);
        s.next_transmit(&tp()).unwrap();
        s.on_result(&tp(), a, 1, code(10)); // MESSAGE_TOO_LARGE
        let d = s.take_delivered(&tp());
        assert_eq!(d[0].1.as_ref().unwrap_err().kafka_code(), Some(10));
        assert_eq!(d[1].0, b);
        assert!(
            d[1].1.is_err(),
            "b is not renumbered and written past the hole"
        );
        assert!(s.needs_identity());
        s.set_identity(id(1));
        s.reset_partition(&tp());
        let (c, seq) = s.enqueue(&tp(), 1, 100);
        let rc = s.next_transmit(&tp()).unwrap();
        assert_eq!((rc.token, rc.base_sequence, seq), (c, 0, 0));
    }

    #[test]
    fn a_batch_failing_for_good_fails_every_later_batch_of_its_partition() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let other: TopicPartition = (Arc::from("t"), 1);
        let (a, _) = s.enqueue(&tp(), 2, 100);
        let (b, _) = s.enqueue(&tp(), 2, 100);
        let (c, _) = s.enqueue(&tp(), 2, 100);
        let (o, _) = s.enqueue(&other, 1, 100);
        let ta = s.next_transmit(&tp()).unwrap();
        let tb = s.next_transmit(&tp()).unwrap();
        s.next_transmit(&other).unwrap();
        s.on_result(&tp(), a, ta.attempt, code(10)); // MESSAGE_TOO_LARGE
        // b is still in flight: its (stale) answer arrives later and changes nothing.
        s.on_result(&tp(), b, tb.attempt, ok(2));
        let d = s.take_delivered(&tp());
        let tokens: Vec<Token> = d.iter().map(|(t, _)| *t).collect();
        assert_eq!(tokens, vec![a, b, c]);
        assert!(
            d.iter().all(|(_, r)| r.is_err()),
            "no batch lands past the hole"
        );
        // A batch enqueued afterwards fails at once and is never sent.
        let (late, _) = s.enqueue(&tp(), 1, 100);
        s.set_identity(id(1));
        assert_eq!(s.peek_transmit(&tp()), None);
        let d = s.take_delivered(&tp());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0, late);
        assert!(d[0].1.is_err());
        // Other partitions go on under the new epoch, renumbered from 0.
        let t = s.next_transmit(&other).unwrap();
        assert_eq!((t.token, t.base_sequence), (o, 0));
        // After a reset the partition takes batches again, from sequence 0.
        s.reset_partition(&tp());
        let (n, seq) = s.enqueue(&tp(), 1, 100);
        assert_eq!(seq, 0);
        assert_eq!(s.next_transmit(&tp()).unwrap().token, n);
    }

    #[test]
    fn reset_all_lets_every_failed_partition_take_batches_again() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tpn(0), 1, 100);
        let (b, _) = s.enqueue(&tpn(1), 1, 100);
        s.next_transmit(&tpn(0)).unwrap();
        s.next_transmit(&tpn(1)).unwrap();
        s.on_result(&tpn(0), a, 1, code(10));
        s.on_result(&tpn(1), b, 1, code(10));
        assert!(s.partition_failure(&tpn(0)).is_some() && s.partition_failure(&tpn(1)).is_some());
        s.take_delivered(&tpn(0));
        s.take_delivered(&tpn(1));
        s.set_identity(id(1));
        s.reset_all();
        for p in 0..2 {
            assert!(s.partition_failure(&tpn(p)).is_none());
            let (t, seq) = s.enqueue(&tpn(p), 1, 100);
            assert_eq!(seq, 0);
            assert_eq!(s.next_transmit(&tpn(p)).unwrap().token, t);
        }
    }

    #[test]
    fn a_delivery_deadline_fails_later_batches_too() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1, 100);
        let (b, _) = s.enqueue(&tp(), 1, 100);
        s.next_transmit(&tp()).unwrap();
        s.next_transmit(&tp()).unwrap();
        s.fail(&tp(), a, Error::new(crate::error::ErrorKind::Timeout));
        assert!(s.partition_failure(&tp()).is_some());
        // Both requests are still in flight: nothing is delivered until they drain.
        assert!(s.take_delivered(&tp()).is_empty());
        s.on_result(&tp(), a, 1, code(7));
        s.on_result(&tp(), b, 1, ok(1));
        let d = s.take_delivered(&tp());
        assert_eq!(d.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![a, b]);
        assert!(d.iter().all(|(_, r)| r.is_err()));
    }

    #[test]
    fn unknown_producer_id_needs_new_identity() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1, 100);
        s.next_transmit(&tp()).unwrap();
        s.on_result(&tp(), a, 1, code(59));
        assert!(s.needs_identity());
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        assert_eq!(increment_sequence(i32::MAX - 1, 1), i32::MAX);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 2, 5), 2);
    }

    fn tpn(i: i32) -> TopicPartition {
        (Arc::from("t"), i)
    }

    /// Takes the ready queue and assembles one request.
    fn request(
        s: &mut Sequencer,
        cands: &mut VecDeque<TopicPartition>,
        max: usize,
    ) -> (Vec<(TopicPartition, Transmit)>, Vec<TopicPartition>, usize) {
        s.take_ready(cands);
        let (mut out, mut again) = (Vec::new(), Vec::new());
        let bytes = s.assemble(cands, max, &mut out, &mut again);
        (out, again, bytes)
    }

    #[test]
    fn assembly_takes_one_batch_per_partition_per_request_in_sequence_order() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        for round in 0..3 {
            for p in 0..4 {
                s.enqueue(&tpn(p), 10, 1000 + round);
            }
        }
        let mut cands = VecDeque::new();
        let mut seen = Vec::new();
        for round in 0..3 {
            let (out, again, bytes) = request(&mut s, &mut cands, 1 << 20);
            assert!(cands.is_empty());
            let parts: Vec<i32> = out.iter().map(|(tp, _)| tp.1).collect();
            assert_eq!(
                parts,
                vec![0, 1, 2, 3],
                "one batch of every partition, in order"
            );
            assert!(out.iter().all(|(_, t)| t.base_sequence == round * 10));
            assert_eq!(bytes, 4 * (1000 + round as usize));
            seen.push(out.len());
            // Partitions with more ready batches are handed back for the next request.
            if round < 2 {
                assert_eq!(again.len(), 4);
            } else {
                assert!(again.is_empty());
            }
            for tp in &again {
                s.mark_ready(tp);
            }
        }
        assert_eq!(seen, vec![4, 4, 4]);
        assert_eq!(s.in_flight(), 12);
        let (out, _, _) = request(&mut s, &mut cands, 1 << 20);
        assert!(out.is_empty(), "everything is in flight");
    }

    #[test]
    fn assembly_respects_the_byte_cap_and_sends_an_oversized_batch_alone() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        s.enqueue(&tpn(0), 1, 400);
        s.enqueue(&tpn(1), 1, 400);
        s.enqueue(&tpn(2), 1, 400);
        s.enqueue(&tpn(3), 1, 5000);
        s.enqueue(&tpn(4), 1, 100);
        let mut cands = VecDeque::new();
        let (out, again, bytes) = request(&mut s, &mut cands, 1000);
        assert_eq!(out.iter().map(|x| x.0.1).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(bytes, 800);
        assert!(again.is_empty());
        assert_eq!(
            cands.front().map(|t| t.1),
            Some(2),
            "the rest wait their turn"
        );
        let (mut out, mut again) = (Vec::new(), Vec::new());
        assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 400);
        assert_eq!(
            out.len(),
            1,
            "partition 3's big batch does not fit after partition 2"
        );
        out.clear();
        assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 5000);
        assert_eq!(out[0].0.1, 3, "an oversized batch goes alone");
        out.clear();
        assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 100);
        assert!(cands.is_empty());
    }

    #[test]
    fn assembly_queues_retries_first_and_waits_for_a_new_identity() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tpn(0), 2, 10);
        let mut cands = VecDeque::new();
        let (out, _, _) = request(&mut s, &mut cands, 1 << 20);
        assert_eq!(out.len(), 1);
        s.enqueue(&tpn(0), 2, 10);
        s.enqueue(&tpn(1), 2, 10);
        // a fails retriably before the second batch is sent: the retry goes first, with
        // its sequence, and the second batch of partition 0 waits for the next request.
        s.on_result(&tpn(0), a, 1, code(6));
        let (out, again, _) = request(&mut s, &mut cands, 1 << 20);
        let got: Vec<_> = out
            .iter()
            .map(|(tp, t)| (tp.1, t.base_sequence, t.attempt))
            .collect();
        assert_eq!(got, vec![(0, 0, 2), (1, 0, 1)]);
        assert_eq!(again.iter().map(|t| t.1).collect::<Vec<_>>(), vec![0]);
        for tp in &again {
            s.mark_ready(tp);
        }
        // A fenced epoch stops assembly; the new identity queues the partition again.
        s.on_result(&tpn(1), out[1].1.token, 1, code(59));
        assert!(s.needs_identity());
        let (out2, _, bytes) = request(&mut s, &mut cands, 1 << 20);
        assert!(out2.is_empty() && bytes == 0);
        s.on_result(&tpn(0), a, 2, ok(0));
        s.set_identity(id(1));
        cands.clear();
        let (out3, _, _) = request(&mut s, &mut cands, 1 << 20);
        let mut got: Vec<_> = out3
            .iter()
            .map(|(tp, t)| (tp.1, t.base_sequence, t.identity.epoch))
            .collect();
        got.sort_unstable(); // set_identity queues partitions in no particular order
        assert_eq!(
            got,
            vec![(0, 0, 1), (1, 0, 1)],
            "renumbered from 0 under epoch 1"
        );
        assert_eq!(s.take_delivered(&tpn(0)).len(), 1);
        assert_eq!(s.unresolved(), 2);
    }

    #[test]
    fn duplicate_sequence_number_is_success_without_an_offset() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1, 100);
        let t = s.next_transmit(&tp()).unwrap();
        s.on_result(&tp(), a, t.attempt, code(46));
        let d = s.take_delivered(&tp());
        assert_eq!(
            d[0].1.as_ref().unwrap(),
            &Ack {
                base_offset: -1,
                log_append_time_ms: -1,
                duplicate: true,
            },
            "the broker gave no offset: -1, never a made-up one"
        );
    }

    #[test]
    fn a_request_takes_batches_up_to_the_byte_cap_inclusive() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        s.enqueue(&tpn(0), 1, 400);
        s.enqueue(&tpn(1), 1, 600);
        s.enqueue(&tpn(2), 1, 1);
        let mut cands = VecDeque::new();
        let (out, _, bytes) = request(&mut s, &mut cands, 1000);
        assert_eq!(out.iter().map(|x| x.0.1).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(bytes, 1000, "a request exactly at the cap is within it");
    }

    #[test]
    fn a_partition_is_queued_as_ready_while_it_has_a_batch_to_send() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        assert!(!s.has_ready(), "nothing enqueued");
        s.enqueue(&tp(), 1, 100);
        assert!(s.has_ready());
        let mut cands = VecDeque::new();
        s.take_ready(&mut cands);
        assert!(!s.has_ready(), "taken by the sink");
        s.mark_ready(&tp());
        assert!(s.has_ready(), "given back, not sent");
    }

    #[test]
    fn the_identity_stamped_is_the_one_installed_last() {
        let mut s = Sequencer::new(5);
        assert_eq!(s.identity(), None);
        s.set_identity(id(0));
        assert_eq!(s.identity(), Some(id(0)));
        s.set_identity(id(1));
        assert_eq!(s.identity(), Some(id(1)));
    }

    #[test]
    fn a_peek_names_the_batch_sent_next_without_sending_it() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1, 100);
        let (b, _) = s.enqueue(&tp(), 1, 100);
        assert_eq!(s.peek_transmit(&tp()), Some(a));
        assert_eq!(s.peek_transmit(&tp()), Some(a), "peeking sends nothing");
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.next_transmit(&tp()).unwrap().token, a);
        assert_eq!(s.peek_transmit(&tp()), Some(b), "in sequence order");
    }
}
