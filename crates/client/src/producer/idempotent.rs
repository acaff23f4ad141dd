//! The I/O around [`Sequencer`]: an idempotent producer for raw record batches.
//!
//! [`IdempotentProducer::send`] stamps a batch, hands it to the pure [`Sequencer`] and wakes
//! the producer's **sink driver**: one long-lived task per producer (started on the first
//! send, gone once every handle is dropped and nothing is left to deliver) that keeps one
//! sink per target broker. Each time it wakes it routes the partitions that have a batch
//! ready to their leaders and, per broker with room (at most
//! [`ProducerConfig::max_requests_in_flight`] Produce requests outstanding), builds requests
//! with [`Sequencer::assemble`]: at most one batch per partition per request, up to
//! [`ProducerConfig::max_request_bytes`]. Requests are queued on the broker's produce
//! connection in assembly order (so every partition's batches reach the wire in sequence
//! order) and their responses are awaited by the same task, without a task or a timer per
//! batch. While a broker has its maximum of requests outstanding, ready batches accumulate
//! and leave together in the next request: under load, requests carry many partitions.
//! While some are outstanding, a request of backlogged partitions only (each with batches
//! of its own in flight) that would be smaller than the largest outstanding one waits for
//! the next response to leave with more (`merge`: request sizes would otherwise only
//! split); a live partition's batch never waits for it.
//!
//! The driver never waits on one broker: leaders come from the metadata cache (a refresh
//! runs as a task of its own), a broker's produce connection is set up by a task of its
//! own (connect timeout + ApiVersions, up to a request timeout on a hung broker) while
//! its partitions wait, and a broker that asked to be throttled is skipped until then.
//! So a hung or slow broker delays only the partitions it leads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use strait_records::{Batch, PatchedBatch, ProducerStamp};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use super::driver::Driver;
use super::state::{Inner, Observer, ProducerConfig, Slot, State, deliver, stamp};
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::sequencer::{Ack, Sequencer};
use crate::rpc::txn::ProducerIdentity;

/// Counters of an [`IdempotentProducer`] since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Produce requests sent.
    pub requests: u64,
    /// Batch transmissions (a retried batch counts once per attempt).
    pub batches: u64,
    /// Batch bytes sent (retries included).
    pub bytes: u64,
}

/// The user-facing handle; dropping the last one lets the driver stop once idle.
struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.wake.notify_one();
    }
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
/// [`Sequencer`].
///
/// One sink per leader broker gathers the ready batches of all partitions it leads into
/// one Produce request (at most one batch per partition, up to
/// [`ProducerConfig::max_request_bytes`]) and pipelines up to
/// [`ProducerConfig::max_requests_in_flight`] requests on the broker's produce connection;
/// [`IdempotentProducer::stats`] counts requests and batches.
#[derive(Clone)]
pub struct IdempotentProducer {
    handle: Arc<Handle>,
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
        self.await
    }
}

/// Awaiting an `AckFuture` directly is [`AckFuture::wait`] without the boxed `async`
/// block a caller keeping many of them would need (it is `Unpin`).
impl std::future::Future for AckFuture {
    type Output = Result<Ack>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Ack>> {
        std::pin::Pin::new(&mut self.rx).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::ConnectionClosed).message("producer dropped"))
            })
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
        Ok(Self::start(client, cfg, identity, None, None))
    }

    /// A producer with `identity` already obtained; with `transactional_id` it writes
    /// transactional batches and leaves epoch bumps to its caller (the transactional
    /// producer), and `observer` sees every batch outcome.
    pub(crate) fn start(
        client: Client,
        cfg: ProducerConfig,
        identity: ProducerIdentity,
        transactional_id: Option<String>,
        observer: Option<Observer>,
    ) -> Self {
        let mut seq = Sequencer::new(cfg.max_in_flight);
        seq.set_identity(identity);
        let inner = Arc::new(Inner {
            client,
            cfg,
            transactional_id,
            state: Mutex::new(State {
                seq,
                slots: FxHashMap::default(),
                topics: FxHashSet::default(),
                driver: false,
                aborted: None,
                observer,
            }),
            changed: Notify::new(),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        });
        IdempotentProducer {
            handle: Arc::new(Handle { inner }),
        }
    }

    /// True when the sequencer needs a new epoch (transactional mode: a batch broke the
    /// sequence; the caller bumps the epoch after its abort).
    pub(crate) fn needs_identity(&self) -> bool {
        self.inner().state.lock().seq.needs_identity()
    }

    /// Installs a new epoch from the caller's KIP-360 bump: sequences restart from 0 and
    /// every partition takes batches again.
    pub(crate) fn install_identity(&self, identity: ProducerIdentity) {
        let inner = self.inner();
        {
            let mut st = inner.state.lock();
            st.seq.set_identity(identity);
            st.seq.reset_all();
        }
        inner.wake.notify_one();
        inner.changed.notify_waiters();
    }

    /// Waits until every batch queued so far has its outcome.
    pub(crate) async fn flush(&self) {
        let inner = self.inner();
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if inner.state.lock().seq.unresolved() == 0 {
                return;
            }
            notified.await;
        }
    }

    fn inner(&self) -> &Arc<Inner> {
        &self.handle.inner
    }

    /// The current producer id and epoch.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.inner().state.lock().seq.identity()
    }

    /// Requests, batch transmissions and bytes sent so far.
    pub fn stats(&self) -> ProducerStats {
        let i = self.inner();
        ProducerStats {
            requests: i.requests.load(Ordering::Relaxed),
            batches: i.batches.load(Ordering::Relaxed),
            bytes: i.bytes.load(Ordering::Relaxed),
        }
    }

    /// Lets a partition take batches again after one of its batches failed for good (see
    /// the sequencer's rules: until then every send to it fails). Call once the caller has
    /// recovered the partition's position from what the target holds.
    pub fn reset_partition(&self, topic: &str, partition: i32) {
        let inner = self.inner();
        let mut st = inner.state.lock();
        let tp = (intern(&mut st.topics, topic), partition);
        st.seq.reset_partition(&tp);
    }

    /// Gives back the memory a partition with nothing unresolved keeps for its next
    /// batches (a caller whose partition went idle; ~200 bytes each, which adds up over
    /// thousands of partitions). Its sequence is kept; sending to it again just works.
    pub fn shrink_partition(&self, topic: &str, partition: i32) {
        let inner = self.inner();
        let mut st = inner.state.lock();
        let tp = (intern(&mut st.topics, topic), partition);
        st.seq.shrink_partition(&tp);
    }

    /// Stops sending for good: every batch not in flight fails now with `reason`, a batch
    /// in flight gets the outcome of its request (and fails rather than being retried),
    /// and later sends fail. For a caller that gives up on the batches it queued (its
    /// process stops after an error): nothing is written after that, so no batch lands
    /// after one that failed, nor is re-sent under a new epoch (a possible duplicate of a
    /// request whose fate a timeout left unknown).
    pub fn abort(&self, reason: &str) {
        let inner = self.inner();
        {
            let mut st = inner.state.lock();
            if st.aborted.is_some() {
                return;
            }
            st.aborted = Some(
                Error::new(ErrorKind::ConnectionClosed)
                    .message(format!("the producer was aborted: {reason}")),
            );
        }
        inner.wake.notify_one();
        inner.changed.notify_waiters();
    }

    /// Queues `batch` for `topic`/`partition`. Waits while the partition has 5 unresolved
    /// batches. The batch's CRC is verified (`Err` if corrupt, nothing queued). Call `send`
    /// for one partition from one task at a time: the call order is the sequence order.
    /// After a batch of the partition failed for good, `Err` until
    /// [`IdempotentProducer::reset_partition`].
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let inner = self.inner();
        // The first look registers no waiter (the usual case: the window has room); when
        // the window is full, the next pass registers for `changed` before it looks
        // again, so no wake-up between the look and the wait is missed.
        let mut batch = match self.try_send(topic, partition, batch)? {
            TrySend::Queued(ack) => return Ok(ack),
            TrySend::Later(batch) => batch,
        };
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            batch = match self.try_send(topic, partition, batch)? {
                TrySend::Queued(ack) => return Ok(ack),
                TrySend::Later(batch) => batch,
            };
            notified.await;
        }
    }

    /// [`send`](Self::send) without waiting: the batch back as [`TrySend::Later`] when the
    /// partition has 5 unresolved batches. Not a future, so a caller that keeps one task
    /// per partition does not carry a waiting `send` in each (it awaits `send` only when
    /// told `Later`).
    pub fn try_send(&self, topic: &str, partition: i32, batch: Batch) -> Result<TrySend> {
        let inner = self.inner();
        let count = batch.header().last_offset_delta.saturating_add(1);
        if count <= 0 || batch.header().records_count <= 0 {
            return Err(Error::invalid(
                "an idempotent batch needs at least one record",
            ));
        }
        let (tp, identity, seq) = {
            let mut st = inner.state.lock();
            if let Some(e) = &st.aborted {
                return Err(e.clone());
            }
            let tp = (intern(&mut st.topics, topic), partition);
            if let Some(e) = st.seq.partition_failure(&tp) {
                // An earlier batch failed for good: nothing is written past it until the
                // caller resets the partition.
                return Err(e.clone().topic(topic).partition(partition));
            }
            if !st.seq.has_room(&tp) {
                return Ok(TrySend::Later(batch));
            }
            let (id, seq) = (st.seq.identity(), st.seq.peek_sequence(&tp));
            (tp, id, seq)
        };
        // Verify and stamp with the sequence we expect to get, outside the lock (one pass
        // over the payload). If it changes before transmission it is stamped again.
        let patched = verify_and_stamp(&batch, identity, seq, inner.transactional_id.is_some())?;
        let (tx, rx) = oneshot::channel();
        let bytes = batch.as_bytes().len();
        let start = {
            let mut st = inner.state.lock();
            let (token, _) = st.seq.enqueue(&tp, count, bytes);
            st.slots.insert(
                token,
                Slot {
                    tp: tp.clone(),
                    batch,
                    patched,
                    tx: Some(tx),
                    deadline: Instant::now() + inner.cfg.delivery_timeout,
                },
            );
            // A partition that failed meanwhile resolves the batch at once.
            deliver(&mut st, &tp);
            !std::mem::replace(&mut st.driver, true)
        };
        if start {
            tokio::spawn(Driver::new(inner.clone()).run());
        } else {
            inner.wake.notify_one();
        }
        Ok(TrySend::Queued(AckFuture { rx }))
    }
}

/// What [`IdempotentProducer::try_send`] did with a batch.
#[derive(Debug)]
pub enum TrySend {
    /// Queued: the acknowledgement to await.
    Queued(AckFuture),
    /// Not queued, given back: the partition's window is full (or, in a transaction, the
    /// partition must join it first); [`IdempotentProducer::send`] waits for that.
    Later(Batch),
}

fn intern(topics: &mut FxHashSet<Arc<str>>, topic: &str) -> Arc<str> {
    if let Some(t) = topics.get(topic) {
        return t.clone();
    }
    let t: Arc<str> = Arc::from(topic);
    topics.insert(t.clone());
    t
}

/// Checks `batch` and patches it with the stamp of `identity` and `seq` (and the
/// transactional bit), or `None` while the producer has no id yet.
fn verify_and_stamp(
    batch: &Batch,
    identity: Option<ProducerIdentity>,
    seq: i32,
    transactional: bool,
) -> Result<Option<(ProducerStamp, PatchedBatch)>> {
    identity
        .map(|id| {
            let stamp = stamp(id, seq);
            batch
                .verify_and_patch(stamp)
                .map(|p| (stamp, p.with_transactional(transactional)))
                .map_err(|e| Error::invalid(format!("batch rejected: {e}")))
        })
        .transpose()
}
