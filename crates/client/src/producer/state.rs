//! The idempotent producer's settings and the state that its handles
//! ([`IdempotentProducer`](super::idempotent::IdempotentProducer)) and its sink driver (`driver`)
//! share: the sequencer, the queued batches, the counters, and the delivery of each
//! batch's outcome to its sender.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use strait_records::{Batch, PatchedBatch, ProducerStamp};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::producer::sequencer::{Ack, Sequencer, Token, TopicPartition};
use crate::rpc::txn::ProducerIdentity;

/// Idempotent producer settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Unresolved batches per partition (Kafka allows at most 5 with idempotence).
    pub max_in_flight: usize,
    /// How long one batch may keep being retried before it fails (which forces an epoch bump).
    pub delivery_timeout: Duration,
    /// The broker-side Produce timeout.
    pub request_timeout: Duration,
    /// Produce requests outstanding per broker (Kafka's
    /// `max.in.flight.requests.per.connection`). While a broker has this many, ready batches
    /// wait and leave together in the next request.
    pub max_requests_in_flight: usize,
    /// Cap on the batch bytes of one Produce request; a single larger batch goes alone.
    pub max_request_bytes: usize,
    /// How long the sink waits for more batches before sending what is ready (Kafka's
    /// `linger.ms`). Zero (the default): a request leaves as soon as a batch is ready.
    pub linger: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            max_in_flight: 5,
            delivery_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            max_requests_in_flight: 5,
            max_request_bytes: 4 * 1024 * 1024,
            linger: Duration::ZERO,
        }
    }
}

/// A queued batch, under its sequencer token, until its outcome reaches its sender.
pub(super) struct Slot {
    /// Its partition (to fail the batches after one that failed for good).
    pub(super) tp: TopicPartition,
    pub(super) batch: Batch,
    /// The batch as last stamped (re-stamped only when the stamp changes).
    pub(super) patched: Option<(ProducerStamp, PatchedBatch)>,
    pub(super) tx: Option<oneshot::Sender<Result<Ack>>>,
    pub(super) deadline: Instant,
}

/// What the producer's lock guards.
pub(super) struct State {
    pub(super) seq: Sequencer,
    pub(super) slots: FxHashMap<Token, Slot>,
    /// Interned topic names, so that a partition key never allocates.
    pub(super) topics: FxHashSet<Arc<str>>,
    /// The sink driver task is running (or about to).
    pub(super) driver: bool,
    /// Set by [`IdempotentProducer::abort`](super::idempotent::IdempotentProducer::abort): nothing is
    /// sent any more.
    pub(super) aborted: Option<Error>,
    /// Transactional mode: told every batch outcome as it is delivered.
    pub(super) observer: Option<Observer>,
}

/// Called (under the producer's lock) with each batch outcome, in delivery order.
pub(crate) type Observer = Arc<dyn Fn(&Result<Ack>) + Send + Sync>;

/// What every handle and the sink driver hold.
pub(super) struct Inner {
    pub(super) client: Client,
    pub(super) cfg: ProducerConfig,
    /// Transactional mode: batches carry the transactional bit, Produce requests the id,
    /// and a broken sequence fails the batches instead of bumping the epoch here.
    pub(super) transactional_id: Option<String>,
    pub(super) state: Mutex<State>,
    /// Woken when batches are delivered: senders waiting for room re-check.
    pub(super) changed: Notify,
    /// Wakes the sink driver (new batch, last handle dropped).
    pub(super) wake: Notify,
    /// Every [`IdempotentProducer`](super::idempotent::IdempotentProducer) handle is gone.
    pub(super) closed: AtomicBool,
    pub(super) requests: AtomicU64,
    pub(super) batches: AtomicU64,
    pub(super) bytes: AtomicU64,
}

/// Hands the resolved batches at the front of `tp` to their senders. After a batch that
/// failed for good, every later batch of the partition fails too: written after it (under
/// the new epoch, renumbered) they would leave a gap in the partition that its writer
/// could not tell from a complete log.
pub(super) fn deliver(st: &mut State, tp: &TopicPartition) {
    loop {
        let mut failed = None;
        for (token, r) in st.seq.take_delivered(tp) {
            if let Some(observe) = &st.observer {
                observe(&r);
            }
            if let Err(e) = &r {
                failed = Some(e.clone());
            }
            if let Some(mut slot) = st.slots.remove(&token)
                && let Some(tx) = slot.tx.take()
            {
                let _ = tx.send(r.map_err(|e| e.topic(tp.0.to_string()).partition(tp.1)));
            }
        }
        let Some(cause) = failed else { return };
        let mut later: Vec<Token> = st
            .slots
            .iter()
            .filter(|(_, s)| s.tp == *tp)
            .map(|(t, _)| *t)
            .collect();
        if later.is_empty() {
            return;
        }
        later.sort_unstable();
        for token in later {
            let e = cause
                .clone()
                .message("an earlier batch of the partition failed (not sent after it)");
            st.seq.fail(tp, token, e);
        }
    }
}

/// The producer id, epoch and base sequence stamped into a batch's header.
pub(super) fn stamp(id: ProducerIdentity, seq: i32) -> ProducerStamp {
    ProducerStamp {
        producer_id: id.id,
        producer_epoch: id.epoch,
        base_sequence: seq,
    }
}
