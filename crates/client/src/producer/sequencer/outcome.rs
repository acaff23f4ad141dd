//! Batch outcomes: feeding each attempt's answer back (success, a retry, a new epoch, a
//! failure for good that takes the later batches with it), the partition-level failure
//! and its reset, and the resolved batches handed back in order.

use std::collections::VecDeque;

use kafka_protocol::ResponseError;

use super::{Ack, Entry, Sequencer, State, Token, TopicPartition};
use crate::error::Error;

impl Sequencer {
    /// Feeds the outcome of attempt `attempt` of batch `token`. One flat decision over the
    /// answer (success, duplicate, a stale attempt, then the error codes), kept whole.
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
