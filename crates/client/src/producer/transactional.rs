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
//!
//! The producer's calls live in child files: [`send`] (admission, batches, records and
//! offsets in the open transaction) and [`end`] (commit, abort and the epoch bump).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use strait_records::Compression;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::producer::idempotent::{IdempotentProducer, ProducerStats};
use crate::producer::state::{Observer, ProducerConfig};
use crate::producer::transaction::{Phase, Transaction, TxnApi, Verdict, classify};
use crate::rpc::txn::ProducerIdentity;

mod end;
mod send;

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
    /// since this one did. First InitProducerId with the current id and epoch
    /// (KIP-360/KIP-588): it succeeds — aborting the open transaction and bumping the
    /// epoch — when the id is still ours, also after the coordinator timed the
    /// transaction out, and fails with PRODUCER_FENCED when another producer took it and
    /// has no transaction open. **It is not a safe question while another producer may
    /// hold the id**: Kafka's coordinator checks only the producer id while a transaction
    /// is ongoing, so it aborts that producer's transaction and fences it (then answers
    /// this one PRODUCER_FENCED). Ask it only when nobody else can own the id (its group
    /// says so) or to end a transaction that is ours. A broker that refuses that form (Tansu: UNKNOWN_SERVER_ERROR) is asked with
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

    fn current_identity(&self) -> Result<ProducerIdentity> {
        self.identity()
            .ok_or_else(|| Error::new(ErrorKind::TransactionFatal("no producer id".into())))
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
