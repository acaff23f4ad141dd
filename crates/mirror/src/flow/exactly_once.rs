//! Exactly-once (`delivery.guarantee = "exactly_once"`): the flow's transactional
//! producer, its committer, and the committed view of the offset maps.
//!
//! - **Fencing first.** The producer is initialised (InitProducerId with the flow's
//!   `transactional.id`) before the state is read: that fences an older process of the
//!   same flow and aborts its open transaction, so the state read back is final.
//! - **One transaction per interval.** Every `transaction_interval` the committer seals the
//!   barrier ([`crate::datapath::commit`]), waits until each partition recorded every
//!   batch it handed on, writes the states of the partitions that changed into the same
//!   transaction, and commits. The batches and the maps that describe them become
//!   visible together or not at all.
//! - **Committed maps for everyone else.** The pipelines write their own maps; the
//!   registry (group offset sync, checkpoints, status) holds copies that move only when a
//!   commit succeeds, so nothing outside the data path ever sees an uncommitted position.
//! - **Failure.** A partition failure, a failed write or commit fails the transaction;
//!   the flow stops and, unless fenced or misconfigured, starts again from the committed
//!   state ([`run_restarting`]). No target tail is read back: what an aborted transaction
//!   wrote stays on the target as aborted data, invisible to `read_committed` consumers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use strait_client::{Client, ProducerConfig, TransactionalConfig, TransactionalProducer};
use strait_offsets::{MapWriter, OffsetMap};
use strait_records::Compression;
use tokio::sync::watch;

use super::{FlowRun, Key};
use crate::config::Flow;
use crate::datapath::commit::Gate;
use crate::error::MirrorError;
use crate::state::PartitionState;
use crate::supervisor::Restarts;

/// Largest batch of state records in a transaction.
const STATE_BATCH_BYTES: usize = 1024 * 1024;

/// A flow's exactly-once parts.
pub(super) struct Eos {
    /// The flow's transactional producer (the data path's [`crate::datapath::sink::Sink`]
    /// holds a clone).
    pub producer: TransactionalProducer,
    /// The barrier between the drivers and [`FlowRun::commit`].
    pub gate: Arc<Gate>,
    /// Per partition, the registry's committed copy of its map.
    pub committed: BTreeMap<Key, MapWriter>,
    /// When the open transaction began (for the duration metric).
    pub began: Instant,
}

/// Initialises the flow's transactional producer (fencing any older one with its id)
/// and opens the first transaction.
pub(super) async fn start_producer(
    target: &Client,
    flow: &Flow,
    producer: ProducerConfig,
) -> Result<Eos, MirrorError> {
    let d = &flow.delivery;
    let cfg = TransactionalConfig {
        transactional_id: d.transactional_id.clone(),
        transaction_timeout: d.transaction_timeout,
        producer,
        compression: Compression::Lz4,
        max_batch_bytes: STATE_BATCH_BYTES,
    };
    let err = |e| {
        MirrorError::kafka(
            format!(
                "InitProducerId for transactional.id {:?}",
                d.transactional_id
            ),
            e,
        )
        .flow(&flow.name)
        .cluster(&flow.target)
    };
    let p = TransactionalProducer::new(target.clone(), cfg)
        .await
        .map_err(err)?;
    p.begin().map_err(err)?;
    Ok(Eos {
        producer: p,
        gate: Gate::new(),
        committed: BTreeMap::new(),
        began: Instant::now(),
    })
}

impl FlowRun {
    /// Exactly-once: ends the open transaction with the states of the partitions that
    /// changed, and opens the next. Does nothing in at-least-once mode. An error fails
    /// the transaction (the flow stops).
    pub(super) async fn commit(&mut self) -> Result<(), MirrorError> {
        let Some(eos) = &self.eos else {
            return Ok(());
        };
        let (gate, producer) = (Arc::clone(&eos.gate), eos.producer.clone());
        let sealed = Instant::now();
        gate.seal();
        // Every batch handed on resolves within the delivery timeout; a request past it.
        let bound = self.engine.delivery_timeout + self.stop_grace;
        match tokio::time::timeout(bound, gate.ready()).await {
            Ok(true) => {}
            Ok(false) => {
                return Err(MirrorError::other(
                    "a partition failed: the open transaction is abandoned (aborted when the \
                     flow restarts)",
                ));
            }
            Err(_) => {
                gate.fail();
                return Err(MirrorError::other(format!(
                    "the partitions {:?} did not record their batches within {bound:?}: the \
                     open transaction is abandoned",
                    gate.waiting()
                )));
            }
        }
        let mut states: Vec<(Key, PartitionState)> = Vec::new();
        let mut maps: Vec<(Key, OffsetMap)> = Vec::new();
        for (key, r) in &self.running {
            if r.progress.dirty.swap(false, Ordering::AcqRel) {
                let (state, map) = r.committed_view();
                states.push((key.clone(), state));
                maps.push((key.clone(), map));
            }
        }
        let result = async {
            self.state_writer.write(&states).await?;
            producer
                .commit()
                .await
                .map_err(|e| MirrorError::kafka("commit the transaction", e))
        }
        .await;
        if let Err(e) = result {
            gate.fail();
            self.metrics
                .transaction_ended(&self.flow.name, false, 0, 0.0, 0.0);
            return Err(e.flow(&self.flow.name).cluster(&self.flow.target));
        }
        let Some(eos) = &mut self.eos else {
            return Ok(());
        };
        for (key, map) in maps {
            if let Some(w) = eos.committed.get_mut(&key) {
                w.update(|m| *m = map);
            }
        }
        if !states.is_empty() {
            let now = Instant::now();
            self.metrics.transaction_ended(
                &self.flow.name,
                true,
                states.len() as u64,
                now.duration_since(eos.began).as_secs_f64(),
                now.duration_since(sealed).as_secs_f64(),
            );
            self.metrics
                .state_records_written(&self.flow.name, states.len() as u64);
        }
        producer
            .begin()
            .map_err(|e| MirrorError::kafka("begin a transaction", e).flow(&self.flow.name))?;
        eos.began = Instant::now();
        gate.open();
        Ok(())
    }
}

/// Runs an exactly-once flow, starting it again from its committed state after an error
/// that does not stop it for good (a fenced producer — another process took the flow's
/// `transactional.id` — and configuration errors do), with the supervisor's backoff.
pub(super) async fn run_restarting<F, Fut, T>(
    flow: &Flow,
    mut stop: watch::Receiver<bool>,
    mut run: F,
) -> Result<T, MirrorError>
where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = Result<T, MirrorError>>,
{
    let mut restarts = Restarts::new(Instant::now());
    loop {
        let e = match run(stop.clone()).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if e.is_fenced() {
            return Err(MirrorError::other(format!(
                "fenced: another process now replicates this flow with transactional.id {:?} \
                 (this one stops; nothing it wrote after that is committed): {e}",
                flow.delivery.transactional_id
            ))
            .flow(&flow.name));
        }
        if e.stops_flow() || *stop.borrow() {
            return Err(e);
        }
        let delay = match restarts.failed(Instant::now(), &e) {
            crate::supervisor::Verdict::Restart { delay, .. } => delay,
            crate::supervisor::Verdict::StopFlow => return Err(e),
        };
        tracing::warn!(flow = %flow.name, error = %e,
            "the flow's transaction failed; restarting the flow from its last commit in \
             {delay:?}");
        tokio::select! {
            () = tokio::time::sleep(delay.max(Duration::from_millis(100))) => {}
            _ = stop.wait_for(|v| *v) => return Err(e),
        }
    }
}

/// After a failure: a fenced-producer error when the coordinator says another producer
/// owns the flow's `transactional.id` now ([`TransactionalProducer::probe_fenced`], asked
/// a few times when the cluster does not answer), `None` when the epoch is still ours.
pub(super) async fn fenced(producer: &TransactionalProducer, flow: &Flow) -> Option<MirrorError> {
    let mut backoff = strait_client::backoff::Backoff::new(Default::default());
    for _ in 0..3 {
        match producer.probe_fenced(&flow.state_topic, 0).await {
            Ok(true) => {
                return Some(MirrorError::kafka(
                    "the flow's transactional producer",
                    strait_client::Error::new(strait_client::ErrorKind::Fenced(format!(
                        "transactional.id {:?} was initialised by another producer",
                        flow.delivery.transactional_id
                    ))),
                ));
            }
            Ok(false) => return None,
            Err(e) => {
                tracing::debug!(flow = %flow.name, error = %e, "fencing probe failed");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
    None
}
