//! The I/O around [`Sequencer`]: an idempotent producer for raw record batches.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strait_records::{Batch, PatchedBatch, ProducerStamp};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::sequencer::{Ack, Sequencer, Token, TopicPartition, Transmit};
use crate::rpc::produce::{Acks, ProduceRequest, RawBatch};
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
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            max_in_flight: 5,
            delivery_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
        }
    }
}

struct Slot {
    batch: Batch,
    /// The batch as last stamped (re-stamped only when the stamp changes).
    patched: Option<(ProducerStamp, PatchedBatch)>,
    tx: Option<oneshot::Sender<Result<Ack>>>,
    deadline: Instant,
}

struct State {
    seq: Sequencer,
    slots: HashMap<Token, Slot>,
}

struct Inner {
    client: Client,
    cfg: ProducerConfig,
    state: Mutex<State>,
    /// Woken on every state change; tasks re-check whether it is their turn.
    changed: Notify,
    /// One batch of a partition is routed and queued on a connection at a time, so batches
    /// reach the wire in sequence order.
    send_locks: Mutex<HashMap<TopicPartition, Arc<tokio::sync::Mutex<()>>>>,
    reinit: tokio::sync::Mutex<()>,
}

/// An idempotent producer for raw v2 record batches (forwarded or built).
///
/// [`IdempotentProducer::send`] takes a batch, stamps producer id, epoch and base sequence
/// into its header (recomputing the CRC with strait-records; the payload is not copied),
/// and returns an [`AckFuture`] once the batch is queued. Per partition at most 5 batches
/// are unresolved, batches are sent in sequence order, retried with the same sequence (also
/// to a new leader) and their acks are delivered strictly in order. DUPLICATE_SEQUENCE_NUMBER
/// counts as success; OUT_OF_ORDER_SEQUENCE_NUMBER at the head, UNKNOWN_PRODUCER_ID or a
/// batch failing for good make the producer bump its epoch (KIP-360) and renumber every
/// unresolved batch from 0. The sequencing rules live in the pure
/// [`crate::producer::Sequencer`].
///
/// Each batch goes in its own Produce request on the leader's produce connection; requests
/// are pipelined.
#[derive(Clone)]
pub struct IdempotentProducer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for IdempotentProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotentProducer")
            .field("identity", &self.identity())
            .finish_non_exhaustive()
    }
}

/// Resolves to the batch's [`Ack`] (in order per partition).
#[derive(Debug)]
pub struct AckFuture {
    rx: oneshot::Receiver<Result<Ack>>,
}

impl AckFuture {
    /// Waits for the acknowledgement.
    pub async fn wait(self) -> Result<Ack> {
        self.rx.await.unwrap_or_else(|_| {
            Err(Error::new(ErrorKind::ConnectionClosed).message("producer dropped"))
        })
    }
}

impl IdempotentProducer {
    /// Gets a producer id (InitProducerId without a transactional id) and returns the
    /// producer.
    pub async fn new(client: Client, cfg: ProducerConfig) -> Result<Self> {
        let identity = client
            .init_producer_id(None, Duration::from_secs(60), None)
            .await?;
        let mut seq = Sequencer::new(cfg.max_in_flight);
        seq.set_identity(identity);
        Ok(IdempotentProducer {
            inner: Arc::new(Inner {
                client,
                cfg,
                state: Mutex::new(State {
                    seq,
                    slots: HashMap::new(),
                }),
                changed: Notify::new(),
                send_locks: Mutex::new(HashMap::new()),
                reinit: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The current producer id and epoch.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.inner.state.lock().seq.identity()
    }

    /// Queues `batch` for `topic`/`partition`. Waits while the partition has 5 unresolved
    /// batches. The batch's CRC is verified (`Err` if corrupt, nothing queued). Call `send`
    /// for one partition from one task at a time: the call order is the sequence order.
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let tp: TopicPartition = (topic.to_string(), partition);
        let count = batch.header().last_offset_delta.saturating_add(1);
        if count <= 0 || batch.header().records_count <= 0 {
            return Err(Error::invalid(
                "an idempotent batch needs at least one record",
            ));
        }
        // Wait for room.
        let (identity, seq) = loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.inner.state.lock();
                if st.seq.has_room(&tp) {
                    break (st.seq.identity(), st.seq.peek_sequence(&tp));
                }
            }
            notified.await;
        };
        // Verify and stamp with the sequence we expect to get, outside the lock (one pass
        // over the payload). If it changes before transmission it is stamped again.
        let patched = identity
            .map(|id| {
                let stamp = stamp(id, seq);
                batch
                    .verify_and_patch(stamp)
                    .map(|p| (stamp, p))
                    .map_err(|e| Error::invalid(format!("batch rejected: {e}")))
            })
            .transpose()?;
        let (tx, rx) = oneshot::channel();
        let token = {
            let mut st = self.inner.state.lock();
            let (token, _) = st.seq.enqueue(&tp, count);
            st.slots.insert(
                token,
                Slot {
                    batch,
                    patched,
                    tx: Some(tx),
                    deadline: Instant::now() + self.inner.cfg.delivery_timeout,
                },
            );
            token
        };
        tokio::spawn(drive(self.inner.clone(), tp, token));
        Ok(AckFuture { rx })
    }
}

fn stamp(id: ProducerIdentity, seq: i32) -> ProducerStamp {
    ProducerStamp {
        producer_id: id.id,
        producer_epoch: id.epoch,
        base_sequence: seq,
    }
}

enum Step {
    Exit,
    Wait,
    Reinit,
    Send(Transmit, RawBatch),
}

/// Drives one batch until it is resolved.
async fn drive(inner: Arc<Inner>, tp: TopicPartition, token: Token) {
    let mut backoff = Backoff::new(inner.client.config().backoff);
    let lock = inner
        .send_locks
        .lock()
        .entry(tp.clone())
        .or_default()
        .clone();
    loop {
        let notified = inner.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let guard = lock.lock().await;
        let step = {
            let mut st = inner.state.lock();
            let st = &mut *st;
            if !st.slots.contains_key(&token) {
                Step::Exit
            } else if st.seq.needs_identity() {
                if st.seq.in_flight() == 0 {
                    Step::Reinit
                } else {
                    Step::Wait
                }
            } else {
                match st.seq.peek_transmit(&tp) {
                    Some(t) if t == token => match st.seq.next_transmit(&tp) {
                        Some(t) => {
                            let slot = st.slots.get_mut(&token).expect("slot exists");
                            let want = stamp(t.identity, t.base_sequence);
                            if slot.patched.as_ref().is_none_or(|(s, _)| *s != want) {
                                slot.patched = Some((want, slot.batch.patch(want)));
                            }
                            let parts = slot.patched.as_ref().map(|(_, p)| p.parts().to_vec());
                            Step::Send(t, RawBatch::from_parts(parts.unwrap_or_default()))
                        }
                        None => Step::Wait,
                    },
                    // An earlier batch's turn (its own task sends it), or nothing to send.
                    _ => Step::Wait,
                }
            }
        };
        match step {
            Step::Exit => return,
            Step::Wait => {
                drop(guard);
                notified.await;
            }
            Step::Reinit => {
                drop(guard);
                reinit(&inner).await;
            }
            Step::Send(t, batch) => {
                let result = send_one(&inner, &tp, batch).await;
                drop(guard);
                // Queued on the connection: the next batch may go now (pipelining).
                inner.changed.notify_waiters();
                let result = match result {
                    Ok(pending) => pending.await,
                    Err(e) => Err(e),
                };
                let retry = result.as_ref().err().filter(|e| e.is_retriable()).cloned();
                {
                    let mut st = inner.state.lock();
                    st.seq.on_result(&tp, t.token, t.attempt, result);
                    if let Some(e) = &retry
                        && st
                            .slots
                            .get(&token)
                            .is_some_and(|s| Instant::now() >= s.deadline)
                    {
                        st.seq
                            .fail(&tp, token, e.clone().message("delivery timeout"));
                    }
                    deliver(&mut st, &tp);
                }
                inner.changed.notify_waiters();
                if let Some(e) = retry {
                    if e.is_stale_metadata() || e.is_network() {
                        inner.client.invalidate_metadata();
                    }
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
        }
    }
}

fn deliver(st: &mut State, tp: &TopicPartition) {
    for (token, r) in st.seq.take_delivered(tp) {
        if let Some(mut slot) = st.slots.remove(&token)
            && let Some(tx) = slot.tx.take()
        {
            let _ = tx.send(r.map_err(|e| e.topic(tp.0.clone()).partition(tp.1)));
        }
    }
}

/// Routes to the leader and queues the Produce request; returns the response future.
async fn send_one(
    inner: &Arc<Inner>,
    tp: &TopicPartition,
    batch: RawBatch,
) -> Result<impl Future<Output = Result<Ack>> + use<>> {
    let client = &inner.client;
    let broker = client.leader_broker(&tp.0, tp.1).await?;
    let mut req = ProduceRequest::new(Acks::All);
    req.timeout = inner.cfg.request_timeout;
    req.push(&tp.0, tp.1, batch);
    let (pending, _) = client.submit_produce(&broker, &req).await?;
    let broker_id = broker.id;
    Ok(async move {
        let results = pending.wait().await?;
        let r = results
            .into_iter()
            .next()
            .ok_or_else(|| Error::protocol("Produce response without the partition"))?;
        match r.error() {
            Some(e) => Err(e.broker(broker_id)),
            None => Ok(Ack {
                base_offset: r.base_offset,
                log_append_time_ms: r.log_append_time_ms,
                duplicate: false,
            }),
        }
    })
}

/// Bumps the epoch (or gets a fresh id if the broker refuses the bump) and renumbers.
async fn reinit(inner: &Arc<Inner>) {
    let _g = inner.reinit.lock().await;
    let current = {
        let st = inner.state.lock();
        if !st.seq.needs_identity() || st.seq.in_flight() != 0 {
            return;
        }
        st.seq.identity()
    };
    let client = &inner.client;
    let tmo = Duration::from_secs(60);
    let new = match client.init_producer_id(None, tmo, current).await {
        Ok(id) => Ok(id),
        Err(e) if current.is_some() => {
            tracing::debug!(error = %e, "epoch bump refused; getting a new producer id");
            client.init_producer_id(None, tmo, None).await
        }
        Err(e) => Err(e),
    };
    match new {
        Ok(id) => {
            tracing::info!(producer_id = id.id, epoch = id.epoch, "new producer epoch");
            inner.state.lock().seq.set_identity(id);
            inner.changed.notify_waiters();
        }
        Err(e) => {
            tracing::warn!(error = %e, "InitProducerId failed; will retry");
            tokio::time::sleep(client.config().backoff.max).await;
        }
    }
}
