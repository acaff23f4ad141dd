//! The transactional producer: the I/O around the pure [`Transaction`] state machine, on top
//! of the idempotent producer (same sequencer, same zero-copy header patch, with the
//! transactional bit set and the `transactional.id` in every Produce request).
//!
//! - [`TransactionalProducer::new`] sends InitProducerId with the `transactional.id` to the
//!   transaction coordinator (FindCoordinator type 1), which fences any earlier producer
//!   of that id and aborts its open transaction;
//! - [`TransactionalProducer::send`] (raw batches) and
//!   [`TransactionalProducer::send_records`] (records, batched here) add the partition to
//!   the transaction first (AddPartitionsToTxn, once per partition per transaction;
//!   partitions wanted meanwhile go in the next request together);
//! - [`TransactionalProducer::commit`] waits for every batch's acknowledgement, then sends
//!   EndTxn(commit); [`TransactionalProducer::abort`] waits until every queued batch has its
//!   outcome (its sequence is taken, so it is sent rather than dropped), then sends
//!   EndTxn(abort) and, if a batch broke the sequence, bumps the epoch (KIP-360);
//! - coordinator calls are retried with [`Backoff`] while [`classify`] says `Retry`
//!   (CONCURRENT_TRANSACTIONS, a moved or loading coordinator, network errors), until the
//!   client's retry timeout.
//!
//! Lock order: the idempotent producer's state, then the transaction (the batch observer
//! runs under the first and takes the second); this module never calls the producer while
//! holding the transaction's lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use strait_records::{Batch, Compression};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::idempotent::{AckFuture, IdempotentProducer, ProducerStats, TrySend};
use crate::producer::records::{ProducerRecord, build_batches};
use crate::producer::sequencer::TopicPartition;
use crate::producer::state::{Observer, ProducerConfig};
use crate::producer::transaction::{Admission, End, Phase, Transaction, TxnApi, Verdict, classify};
use crate::rpc::offsets::{CommitOffset, GroupMember};
use crate::rpc::txn::ProducerIdentity;

/// Transactional producer settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionalConfig {
    /// The `transactional.id`: stable across restarts of the same writer, so that a new
    /// instance fences the old one.
    pub transactional_id: String,
    /// How long the coordinator lets a transaction stay open before aborting it (Kafka's
    /// `transaction.timeout.ms`; at most the broker's `transaction.max.timeout.ms`).
    pub transaction_timeout: Duration,
    /// The underlying idempotent producer's settings.
    pub producer: ProducerConfig,
    /// Codec of the batches [`TransactionalProducer::send_records`] builds.
    pub compression: Compression,
    /// Uncompressed size at which [`TransactionalProducer::send_records`] cuts a batch.
    pub max_batch_bytes: usize,
}

impl TransactionalConfig {
    /// Defaults (60 s transaction timeout, default producer settings, uncompressed 1 MiB
    /// record batches) for `transactional_id`.
    pub fn new(transactional_id: impl Into<String>) -> Self {
        TransactionalConfig {
            transactional_id: transactional_id.into(),
            transaction_timeout: Duration::from_secs(60),
            producer: ProducerConfig::default(),
            compression: Compression::None,
            max_batch_bytes: 1024 * 1024,
        }
    }
}

/// Counters of a [`TransactionalProducer`] since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionStats {
    /// Transactions committed.
    pub committed: u64,
    /// Transactions aborted.
    pub aborted: u64,
    /// AddPartitionsToTxn requests that succeeded.
    pub partition_adds: u64,
}

struct Inner {
    client: Client,
    cfg: TransactionalConfig,
    producer: IdempotentProducer,
    txn: Arc<Mutex<Transaction>>,
    /// Woken on every change of the transaction (batch outcome, add answered, send done).
    changed: Arc<Notify>,
    committed: AtomicU64,
    aborted: AtomicU64,
    adds: AtomicU64,
}

/// A transactional producer: raw batches (forwarded, zero-copy) and record batches written
/// in one transaction under one producer id, committed or aborted together.
///
/// Use: [`begin`](Self::begin), any number of [`send`](Self::send) /
/// [`send_records`](Self::send_records) (per partition from one task at a time, like the
/// idempotent producer), then [`commit`](Self::commit) or [`abort`](Self::abort). Errors:
/// [`Error::is_fenced`] (another producer took the `transactional.id`; terminal),
/// [`Error::is_transaction_fatal`] (terminal), [`Error::is_transaction_abortable`] (abort,
/// then go on). The lifecycle rules are in [`crate::producer::transaction`].
#[derive(Clone)]
pub struct TransactionalProducer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TransactionalProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionalProducer")
            .field("transactional_id", &self.inner.cfg.transactional_id)
            .field("identity", &self.identity())
            .field("phase", &self.phase())
            .finish_non_exhaustive()
    }
}

/// Marks an admitted send as returned, however it ends.
struct Sending<'a>(&'a Inner);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.0.txn.lock().sent();
        self.0.changed.notify_waiters();
    }
}

/// Gives an AddPartitionsToTxn back to the state machine if its caller is cancelled.
struct Adding<'a> {
    inner: &'a Inner,
    done: bool,
}

impl Drop for Adding<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.inner.txn.lock().on_add_abandoned();
            self.inner.changed.notify_waiters();
        }
    }
}

impl TransactionalProducer {
    /// Initialises the producer id for `cfg.transactional_id` at its transaction
    /// coordinator (fencing any earlier producer with that id and aborting its open
    /// transaction).
    pub async fn new(client: Client, cfg: TransactionalConfig) -> Result<Self> {
        if cfg.transactional_id.is_empty() {
            return Err(Error::invalid("transactional_id must not be empty"));
        }
        let id = retrying(&client, TxnApi::InitProducerId, || {
            client.init_producer_id(Some(&cfg.transactional_id), cfg.transaction_timeout, None)
        })
        .await
        .map_err(|e| terminal(TxnApi::InitProducerId, e))?;
        tracing::info!(
            transactional_id = %cfg.transactional_id,
            producer_id = id.id,
            epoch = id.epoch,
            "transactional producer initialised"
        );
        let txn = Arc::new(Mutex::new(Transaction::new()));
        let changed = Arc::new(Notify::new());
        let observer: Observer = {
            let (txn, changed) = (txn.clone(), changed.clone());
            Arc::new(move |r| {
                txn.lock().on_batch(r);
                changed.notify_waiters();
            })
        };
        let producer = IdempotentProducer::start(
            client.clone(),
            cfg.producer,
            id,
            Some(cfg.transactional_id.clone()),
            Some(observer),
        );
        Ok(TransactionalProducer {
            inner: Arc::new(Inner {
                client,
                cfg,
                producer,
                txn,
                changed,
                committed: AtomicU64::new(0),
                aborted: AtomicU64::new(0),
                adds: AtomicU64::new(0),
            }),
        })
    }

    /// The `transactional.id`.
    pub fn transactional_id(&self) -> &str {
        &self.inner.cfg.transactional_id
    }

    /// The current producer id and epoch.
    pub fn identity(&self) -> Option<ProducerIdentity> {
        self.inner.producer.identity()
    }

    /// Where the transaction is.
    pub fn phase(&self) -> Phase {
        self.inner.txn.lock().phase()
    }

    /// Transactions committed and aborted so far, and the underlying producer's counters.
    pub fn stats(&self) -> (TransactionStats, ProducerStats) {
        let i = &self.inner;
        let t = TransactionStats {
            committed: i.committed.load(Ordering::Relaxed),
            aborted: i.aborted.load(Ordering::Relaxed),
            partition_adds: i.adds.load(Ordering::Relaxed),
        };
        (t, i.producer.stats())
    }

    /// Stops sending for good, as [`IdempotentProducer::abort`]: batches not in flight
    /// fail with `reason`, later sends fail. The open transaction is left to be aborted by
    /// the coordinator (its timeout) or by the next producer with this `transactional.id`.
    pub fn halt(&self, reason: &str) {
        self.inner.producer.abort(reason);
    }

    /// Asks the coordinator whether another producer initialised the `transactional.id`
    /// since this one did — for a caller deciding, after a failure, whether it may start
    /// again (which would fence whoever owns the id now). First InitProducerId with the
    /// current id and epoch (KIP-360/KIP-588): it succeeds — aborting the open transaction
    /// and bumping the epoch — when the id is still ours, also after the coordinator
    /// timed the transaction out, and fails with PRODUCER_FENCED when another producer
    /// took it. A broker that refuses that form (Tansu: UNKNOWN_SERVER_ERROR) is asked with
    /// an AddPartitionsToTxn of `topic`/`partition` under the current epoch instead.
    /// `Ok(true)`: fenced. Afterwards this producer must not be used for transactions (its
    /// epoch may have moved); the caller starts a new one or stops.
    pub async fn probe_fenced(&self, topic: &str, partition: i32) -> Result<bool> {
        let id = self.current_identity()?;
        let (client, tid) = (&self.inner.client, &self.inner.cfg.transactional_id);
        let fenced = |e: &Error| {
            e.is_fenced()
                || e.kafka_error() == Some(kafka_protocol::ResponseError::InvalidProducerEpoch)
        };
        let tmo = self.inner.cfg.transaction_timeout;
        match client.init_producer_id(Some(tid), tmo, Some(id)).await {
            Ok(_) => return Ok(false),
            Err(e) if fenced(&e) => return Ok(true),
            Err(e) if e.is_retriable() => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, "InitProducerId with the current epoch refused; \
                    asking with AddPartitionsToTxn");
            }
        }
        let list: [(&str, &[i32]); 1] = [(topic, &[partition])];
        match client.add_partitions_to_txn(tid, id, &list).await {
            Ok(()) => Ok(false),
            Err(e) if fenced(&e) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Starts a transaction (nothing is sent until the first batch).
    pub fn begin(&self) -> Result<()> {
        self.inner.txn.lock().begin()
    }

    /// Queues a raw batch (forwarded or built) for `topic`/`partition` in the open
    /// transaction: stamped with our producer id, epoch and sequence and the transactional
    /// bit, the payload not copied. Adds the partition to the transaction first if needed.
    /// The [`AckFuture`] resolves when the batch is written (not yet committed).
    pub async fn send(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let tp: TopicPartition = (Arc::from(topic), partition);
        let _sending = self.admit(&tp).await?;
        self.queue(topic, partition, batch).await
    }

    /// [`send`](Self::send) without waiting: the batch back as [`TrySend::Later`] when the
    /// partition is not yet in the transaction (or is being added) or its window is full;
    /// `send` waits for those. Not a future (see [`IdempotentProducer::try_send`]).
    pub fn try_send(&self, topic: &str, partition: i32, batch: Batch) -> Result<TrySend> {
        let inner = &*self.inner;
        let tp: TopicPartition = (Arc::from(topic), partition);
        if !inner.txn.lock().try_admit(&tp) {
            return Ok(TrySend::Later(batch));
        }
        let _sending = Sending(inner);
        let sent = inner.producer.try_send(topic, partition, batch);
        self.sent(sent)
    }

    /// Batches `records` (the configured codec and batch size) for `topic`/`partition` and
    /// queues them in the open transaction, through the same producer id as
    /// [`send`](Self::send): e.g. the state records describing the forwarded batches.
    pub async fn send_records(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProducerRecord],
    ) -> Result<Vec<AckFuture>> {
        let cfg = &self.inner.cfg;
        let batches = build_batches(records, cfg.compression, cfg.max_batch_bytes)?;
        let tp: TopicPartition = (Arc::from(topic), partition);
        let _sending = self.admit(&tp).await?;
        let mut acks = Vec::with_capacity(batches.len());
        for b in batches {
            acks.push(self.queue(topic, partition, b).await?);
        }
        Ok(acks)
    }

    async fn queue(&self, topic: &str, partition: i32, batch: Batch) -> Result<AckFuture> {
        let sent = self.inner.producer.send(topic, partition, batch).await;
        self.sent(sent)
    }

    /// What a send's outcome does to the transaction: a batch not queued fails it, unless
    /// it was a refused input (a corrupt batch is never queued: the transaction is intact).
    fn sent<T>(&self, sent: Result<T>) -> Result<T> {
        match sent {
            Ok(t) => Ok(t),
            Err(e) if matches!(e.kind(), ErrorKind::InvalidInput(_)) => Err(e),
            Err(e) => {
                self.inner.txn.lock().on_batch(&Err(e.clone()));
                Err(e)
            }
        }
    }

    /// Waits until a batch for `tp` may be sent, adding the partition to the transaction
    /// (or waiting for the add under way).
    async fn admit(&self, tp: &TopicPartition) -> Result<Sending<'_>> {
        let inner = &*self.inner;
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let admission = inner.txn.lock().admit(tp)?;
            match admission {
                Admission::Go => return Ok(Sending(inner)),
                Admission::Wait => notified.await,
                Admission::Add(partitions) => {
                    let mut guard = Adding { inner, done: false };
                    // Boxed: the AddPartitionsToTxn round trip is a large future that is
                    // awaited once per partition per transaction; inline, every `send`
                    // future (one per partition in flight, in the caller's task) would
                    // carry its ~5.5 KiB.
                    let r = Box::pin(self.add_partitions(&partitions)).await;
                    guard.done = true;
                    if r.is_ok() {
                        inner.adds.fetch_add(1, Ordering::Relaxed);
                    }
                    inner.txn.lock().on_added(r);
                    inner.changed.notify_waiters();
                }
            }
        }
    }

    async fn add_partitions(&self, partitions: &[TopicPartition]) -> Result<()> {
        let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
        for (t, p) in partitions {
            match by_topic.iter_mut().find(|(x, _)| *x == &**t) {
                Some((_, ps)) => ps.push(*p),
                None => by_topic.push((t, vec![*p])),
            }
        }
        let list: Vec<(&str, &[i32])> = by_topic.iter().map(|(t, ps)| (*t, &ps[..])).collect();
        let id = self.current_identity()?;
        let (client, tid) = (&self.inner.client, &self.inner.cfg.transactional_id);
        retrying(client, TxnApi::AddPartitions, || {
            client.add_partitions_to_txn(tid, id, &list)
        })
        .await
    }

    /// Commits `offsets` of consumer group `group` inside the open transaction
    /// (AddOffsetsToTxn once per group per transaction, then TxnOffsetCommit to the group
    /// coordinator): they become the group's committed offsets only if the transaction
    /// commits. `member` is the group member committing ([`GroupMember::standalone`] for
    /// a group without members).
    pub async fn send_offsets(
        &self,
        group: &str,
        member: &GroupMember,
        offsets: &[CommitOffset],
    ) -> Result<()> {
        let inner = &*self.inner;
        let needs_add = inner.txn.lock().admit_offsets(group)?;
        let _sending = Sending(inner);
        let id = self.current_identity()?;
        let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
        if needs_add {
            let r = retrying(client, TxnApi::AddOffsets, || {
                client.add_offsets_to_txn(tid, id, group)
            })
            .await;
            let mut t = inner.txn.lock();
            t.on_offsets_added(group, r.clone());
            if let Err(e) = r {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        let r = retrying(client, TxnApi::TxnOffsetCommit, || {
            client.txn_offset_commit(tid, group, id, member, offsets)
        })
        .await;
        let mut t = inner.txn.lock();
        t.on_offsets_committed(r.clone());
        r.map_err(|e| t.cause().cloned().unwrap_or(e))
    }

    fn current_identity(&self) -> Result<ProducerIdentity> {
        self.identity()
            .ok_or_else(|| Error::new(ErrorKind::TransactionFatal("no producer id".into())))
    }

    /// Waits until no send is between admission and queueing, then until every queued
    /// batch has its outcome.
    async fn settle(&self) {
        let inner = &*self.inner;
        loop {
            let notified = inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if inner.txn.lock().sending() == 0 {
                break;
            }
            notified.await;
        }
        inner.producer.flush().await;
    }

    /// Commits the open transaction: waits for every batch to be acknowledged, then sends
    /// EndTxn(commit). A failed batch makes it fail with an abortable error (call
    /// [`abort`](Self::abort)); a retriable EndTxn failure leaves the outcome unknown and
    /// `commit` must be called again.
    pub async fn commit(&self) -> Result<()> {
        let inner = &*self.inner;
        let started = Instant::now();
        inner.txn.lock().begin_commit()?;
        self.settle().await;
        let end = inner.txn.lock().end()?;
        if let End::Send { commit } = end {
            let id = self.current_identity()?;
            let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
            let r = retrying(client, TxnApi::EndTxn, || client.end_txn(tid, id, commit)).await;
            let mut t = inner.txn.lock();
            t.on_ended(r.clone(), false);
            if let Err(e) = r {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        inner.committed.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(elapsed = ?started.elapsed(), "transaction committed");
        Ok(())
    }

    /// Aborts the open transaction (or does nothing when none is open): waits until every
    /// queued batch has its outcome, sends EndTxn(abort), and bumps the epoch (KIP-360)
    /// when a batch broke the sequence. Call it again after a retriable failure.
    pub async fn abort(&self) -> Result<()> {
        let inner = &*self.inner;
        if !inner.txn.lock().begin_abort()? {
            return Ok(());
        }
        self.settle().await;
        let (client, tid) = (&inner.client, &inner.cfg.transactional_id);
        let bump = inner.txn.lock().needs_epoch_bump();
        if !bump {
            let end = inner.txn.lock().end()?;
            let r = match end {
                End::Done => Ok(()),
                End::Send { commit } => {
                    let id = self.current_identity()?;
                    retrying(client, TxnApi::EndTxn, || client.end_txn(tid, id, commit)).await
                }
            };
            let needs_new_epoch = inner.producer.needs_identity();
            let mut t = inner.txn.lock();
            t.on_ended(r.clone(), needs_new_epoch);
            if let Err(e) = r
                && !t.needs_epoch_bump()
            {
                return Err(t.cause().cloned().unwrap_or(e));
            }
        }
        if inner.txn.lock().needs_epoch_bump() {
            let current = self.current_identity()?;
            let tmo = inner.cfg.transaction_timeout;
            let r = retrying(client, TxnApi::InitProducerId, || {
                client.init_producer_id(Some(tid), tmo, Some(current))
            })
            .await;
            match r {
                Ok(id) => {
                    tracing::info!(producer_id = id.id, epoch = id.epoch, "epoch bumped");
                    inner.producer.install_identity(id);
                    inner.txn.lock().on_bumped(Ok(()));
                }
                Err(e) => {
                    let mut t = inner.txn.lock();
                    t.on_bumped(Err(e.clone()));
                    return Err(t.cause().cloned().unwrap_or(e));
                }
            }
        }
        inner.aborted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Runs a coordinator call until it succeeds, fails with an error [`classify`] does not
/// retry, or the client's retry timeout passes (then its last error).
async fn retrying<T, F, Fut>(client: &Client, api: TxnApi, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let deadline = Instant::now() + client.config().retry_timeout;
    let mut backoff = Backoff::new(client.config().backoff);
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if classify(api, &e) == Verdict::Retry => {
                let delay = backoff.next_delay();
                if Instant::now() + delay >= deadline {
                    return Err(e);
                }
                tracing::debug!(?api, error = %e, ?delay, "transactional call retried");
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A failed InitProducerId as the typed error its verdict calls for.
fn terminal(api: TxnApi, e: Error) -> Error {
    match classify(api, &e) {
        Verdict::Fenced => Error::new(ErrorKind::Fenced(e.to_string())),
        Verdict::Fatal => Error::new(ErrorKind::TransactionFatal(e.to_string())),
        _ => e,
    }
}
