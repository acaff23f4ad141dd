//! The idempotent-producer sequencing state machine. Pure: no I/O, no clock, no tasks; the
//! driver in [`super::idempotent`] feeds it events and does what it says.
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

use std::collections::{HashMap, VecDeque};

use kafka_protocol::ResponseError;

use crate::error::Error;
use crate::rpc::txn::ProducerIdentity;

/// A partition: `(topic, partition)`.
pub type TopicPartition = (String, i32);

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
    attempt: u32,
    in_flight: u32,
    state: State,
}

#[derive(Debug, Default)]
struct Partition {
    next_seq: i32,
    entries: VecDeque<Entry>,
}

/// The sequencing state for one producer id across partitions.
#[derive(Debug)]
pub struct Sequencer {
    identity: Option<ProducerIdentity>,
    needs_new_epoch: bool,
    max_in_flight: usize,
    next_token: Token,
    partitions: HashMap<TopicPartition, Partition>,
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
            partitions: HashMap::new(),
        }
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

    /// Adds a batch of `count` records (`lastOffsetDelta + 1`) to `tp`; returns its token
    /// and base sequence. The caller must have checked [`Sequencer::has_room`].
    pub fn enqueue(&mut self, tp: &TopicPartition, count: i32) -> (Token, i32) {
        let token = self.next_token;
        self.next_token += 1;
        let p = self.partitions.entry(tp.clone()).or_default();
        let seq = p.next_seq;
        p.next_seq = increment_sequence(seq, count);
        p.entries.push_back(Entry {
            token,
            seq,
            count,
            attempt: 0,
            in_flight: 0,
            state: State::Ready,
        });
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
            }
            Some(
                ResponseError::OutOfOrderSequenceNumber
                | ResponseError::UnknownProducerId
                | ResponseError::InvalidProducerEpoch
                | ResponseError::ProducerFenced,
            ) => {
                e.state = State::Ready;
                self.needs_new_epoch = true;
            }
            _ if err.is_retriable() => e.state = State::Ready,
            _ => {
                // The batch failed for good: its sequence numbers were never written, so
                // the sequence must restart under a new epoch.
                e.state = State::Done(Err(err));
                self.needs_new_epoch = true;
            }
        }
    }

    /// Fails batch `token` for good (its delivery deadline passed). Like any permanent
    /// failure this forces a new epoch.
    pub fn fail(&mut self, tp: &TopicPartition, token: Token, err: Error) {
        if let Some(e) = self
            .partitions
            .get_mut(tp)
            .and_then(|p| p.entries.iter_mut().find(|e| e.token == token))
            && !matches!(e.state, State::Done(_))
        {
            e.state = State::Done(Err(err));
            self.needs_new_epoch = true;
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
        ("t".to_string(), 0)
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
            let (t, seq) = s.enqueue(&tp(), 10);
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
    fn retry_keeps_sequence_and_later_batches_wait_their_turn() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 3);
        let (b, _) = s.enqueue(&tp(), 3);
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
        let (a, _) = s.enqueue(&tp(), 1);
        let t1 = s.next_transmit(&tp()).unwrap();
        s.on_result(
            &tp(),
            a,
            t1.attempt,
            Err(Error::new(crate::ErrorKind::Timeout)),
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
        let (a, _) = s.enqueue(&tp(), 2);
        let (b, _) = s.enqueue(&tp(), 2);
        let (c, _) = s.enqueue(&tp(), 2);
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
        let (a, _) = s.enqueue(&tp(), 2);
        let (b, _) = s.enqueue(&tp(), 2);
        s.next_transmit(&tp()).unwrap();
        s.on_result(&tp(), a, 1, code(10)); // MESSAGE_TOO_LARGE
        let d = s.take_delivered(&tp());
        assert_eq!(d[0].1.as_ref().unwrap_err().kafka_code(), Some(10));
        assert!(s.needs_identity());
        s.set_identity(id(1));
        let rb = s.next_transmit(&tp()).unwrap();
        assert_eq!((rb.token, rb.base_sequence), (b, 0));
    }

    #[test]
    fn unknown_producer_id_needs_new_identity() {
        let mut s = Sequencer::new(5);
        s.set_identity(id(0));
        let (a, _) = s.enqueue(&tp(), 1);
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
}
