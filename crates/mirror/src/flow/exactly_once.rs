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
//!   state ([`run_restarting`]), after confirming with its group that it still owns the
//!   flow or the slot (`owner.rs`), since its InitProducerId would fence a successor that
//!   took over while this process was frozen or cut off. No target tail is read back: what an aborted transaction
//!   wrote stays on the target as aborted data, invisible to `read_committed` consumers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use strait_client::{Client, ProducerConfig, TransactionalConfig, TransactionalProducer};
use strait_offsets::{Checkpoint, CheckpointKind, DEFAULT_RUN_BUDGET, MapWriter, OffsetMap};
use strait_records::Compression;
use tokio::sync::watch;

use super::owner::{Confirmed, SlotOwner};
use super::sole_writer::Guard;
use super::{FlowRun, Key};
use crate::config::Flow;
use crate::datapath::commit::Gate;
use crate::error::MirrorError;
use crate::metrics::{FlowState, Metrics};
use crate::restarts::Restarts;
use crate::state::delta::{self, SNAPSHOT_EVERY};
use crate::state::{DeltaSeqs, PartitionState, codec};

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
    /// Per partition, the delta records on the state topic since its last snapshot.
    pub deltas: DeltaSeqs,
    /// Partitions whose next checkpoint is a whole snapshot (each one's first of the run:
    /// it starts a new delta chain).
    pub snapshot_due: BTreeSet<Key>,
    /// Per partition, its re-creation count at the last commit (a change forces a
    /// snapshot: only snapshots carry the topic id).
    pub recreated: BTreeMap<Key, u64>,
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
    let err = |e: strait_client::Error| {
        let what = format!(
            "InitProducerId for transactional.id {:?}",
            d.transactional_id
        );
        // Not allowed (TransactionalId ACL), a timeout above the broker's maximum, no
        // transactions at all: retrying cannot help.
        let stops = e.is_transaction_fatal() || e.is_unsupported();
        let e = if stops {
            MirrorError::config(format!(
                "{what}: {e} (check the principal's WRITE/DESCRIBE on TransactionalId, and \
                 delivery.transaction_timeout against the broker's \
                 transaction.max.timeout.ms)"
            ))
        } else {
            MirrorError::kafka(what, e)
        };
        e.flow(&flow.name).cluster(&flow.target)
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
        deltas: DeltaSeqs::new(),
        snapshot_due: BTreeSet::new(),
        recreated: BTreeMap::new(),
    })
}

impl FlowRun {
    /// Exactly-once: ends the open transaction with the states of the partitions that
    /// changed, and opens the next. Does nothing in at-least-once mode. An error fails
    /// the transaction (the flow stops).
    pub(super) async fn commit(&mut self) -> Result<(), MirrorError> {
        let Some(eos) = self.role.eos() else {
            return Ok(());
        };
        let (gate, producer) = (Arc::clone(&eos.gate), eos.producer.clone());
        let sealed = Instant::now();
        gate.seal();
        // Every batch handed on resolves within the delivery timeout (a request past it);
        // past the transaction timeout the coordinator has aborted it anyway.
        let bound = (self.engine.delivery_timeout + self.stop_grace)
            .min(self.flow.delivery.transaction_timeout);
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
        let (records, applied) = self.transaction_states();
        let result = async {
            self.state_writer.write_raw(records).await?;
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
        let Some(eos) = self.role.eos_mut() else {
            return Ok(());
        };
        let n = applied.len() as u64;
        for a in applied {
            eos.committed_one(a).map_err(|e| e.flow(&self.flow.name))?;
        }
        if n > 0 {
            let now = Instant::now();
            self.metrics.transaction_ended(
                &self.flow.name,
                true,
                n,
                now.duration_since(eos.began).as_secs_f64(),
                now.duration_since(sealed).as_secs_f64(),
            );
            self.metrics.state_records_written(&self.flow.name, n);
        }
        producer
            .begin()
            .map_err(|e| MirrorError::kafka("begin a transaction", e).flow(&self.flow.name))?;
        eos.began = Instant::now();
        gate.open();
        Ok(())
    }
}

/// Encoded state records (key, value; `None`: a tombstone).
type StateRecords = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A partition's checkpoint written in the open transaction, applied to the committed
/// copy once it commits.
pub(super) struct Applied {
    key: Key,
    checkpoint: Checkpoint,
    recreated: u64,
}

impl FlowRun {
    /// The state records of the open transaction: per partition that changed, a delta of
    /// its map since the last commit, or a whole snapshot (the first of a run, every
    /// [`SNAPSHOT_EVERY`] deltas, after a source re-creation, or when the journal
    /// overflowed) with tombstones for the deltas it covers.
    fn transaction_states(&self) -> (StateRecords, Vec<Applied>) {
        let (mut records, mut applied) = (Vec::new(), Vec::new());
        let Some(eos) = self.role.eos() else {
            return (records, applied);
        };
        for (key, r) in &self.running {
            if !r.progress.dirty.swap(false, Ordering::AcqRel) {
                continue;
            }
            let deltas = eos.deltas.get(key).map_or(&[][..], Vec::as_slice);
            let due = eos.snapshot_due.contains(key)
                || deltas.len() >= SNAPSHOT_EVERY
                || eos.recreated.get(key) != Some(&r.progress.recreated.load(Ordering::Acquire));
            let Some((checkpoint, topic_id, recreated)) = r.checkpoint(due) else {
                continue;
            };
            let (topic, partition) = (&key.0, key.1);
            match checkpoint.kind {
                CheckpointKind::Snapshot => {
                    let state = PartitionState {
                        topic_id,
                        target_topic: r.target_topic.clone(),
                        snapshot: checkpoint.bytes.clone(),
                    };
                    records.push((
                        codec::encode_key(topic, partition),
                        Some(codec::encode_value(&state)),
                    ));
                    for seq in deltas {
                        records.push((delta::encode_delta_key(topic, partition, *seq), None));
                    }
                }
                CheckpointKind::Delta => records.push((
                    delta::encode_delta_key(topic, partition, checkpoint.seq),
                    Some(delta::encode_delta_value(&checkpoint.bytes)),
                )),
            }
            applied.push(Applied {
                key: key.clone(),
                checkpoint,
                recreated,
            });
        }
        (records, applied)
    }
}

impl Eos {
    /// A committed checkpoint: the registry's copy of the map follows it, and the delta
    /// bookkeeping with it.
    fn committed_one(&mut self, a: Applied) -> Result<(), MirrorError> {
        let Applied {
            key,
            checkpoint,
            recreated,
        } = a;
        if let Some(w) = self.committed.get_mut(&key) {
            match checkpoint.kind {
                CheckpointKind::Snapshot => {
                    let map = OffsetMap::from_snapshot(&checkpoint.bytes, DEFAULT_RUN_BUDGET)
                        .map_err(|e| MirrorError::state(format!("committed snapshot: {e}")))?;
                    w.update(|m| *m = map);
                }
                CheckpointKind::Delta => {
                    w.update(|m| m.replay(&checkpoint.bytes))
                        .map_err(|e| MirrorError::state(format!("committed delta: {e}")))?;
                }
            }
        }
        match checkpoint.kind {
            CheckpointKind::Snapshot => {
                self.deltas.remove(&key);
                self.snapshot_due.remove(&key);
            }
            CheckpointKind::Delta => self
                .deltas
                .entry(key.clone())
                .or_default()
                .push(checkpoint.seq),
        }
        self.recreated.insert(key, recreated);
        Ok(())
    }
}

impl FlowRun {
    /// An exactly-once run failed with `e`: the open transaction is abandoned (its
    /// drivers stop), the partitions stop, and what happens to the transaction follows
    /// [`AfterFailure`]. The error the run ends with: the root cause (an error that stops
    /// the flow, whichever partition saw it: the others fail only because the transaction
    /// did), or that the flow was fenced.
    pub(super) async fn fail_transaction(
        &mut self,
        e: MirrorError,
        stop: &mut watch::Receiver<bool>,
    ) -> MirrorError {
        let Some(eos) = self.role.eos() else {
            return e;
        };
        eos.gate.fail();
        let producer = eos.producer.clone();
        let e = match self.shutdown().await {
            Err(s) if s.stops_flow() && !e.stops_flow() => s,
            _ => e,
        };
        let stopping = *stop.borrow();
        match after_failure(e.stops_flow(), stopping) {
            AfterFailure::Abandon => e,
            AfterFailure::AbortAndStop => {
                abort_before_stopping(&producer, &self.flow, self.stop_grace).await;
                e
            }
            AfterFailure::ProbeAndRestart => match ownership(&producer, &self.flow, stop).await {
                Ownership::Fenced(f) => f,
                Ownership::Ours | Ownership::Stopped => e,
            },
        }
    }
}

/// Runs an exactly-once flow, starting it again from its committed state after an error
/// that does not stop it for good (a fenced producer — another process took the flow's
/// `transactional.id` — and configuration errors and `fail` incidents do), with the
/// restart backoff (reset once a run stayed up [`crate::restarts::HEALTHY_AFTER`];
/// `--once` gives up after [`crate::restarts::ONCE_RESTART_LIMIT`] restarts). While it
/// waits, the flow's state names the error (`/health` answers 503).
pub(super) async fn run_restarting<F, Fut, T>(
    flow: &Flow,
    metrics: &Metrics,
    once: bool,
    mut stop: watch::Receiver<bool>,
    owner: Option<&Owner<'_>>,
    mut run: F,
) -> Result<T, MirrorError>
where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = Result<T, MirrorError>>,
{
    let mut restarts = Restarts::new(Instant::now());
    if once {
        restarts = restarts.with_limit(crate::restarts::ONCE_RESTART_LIMIT);
    }
    loop {
        restarts.started(Instant::now());
        let mut e = match run(stop.clone()).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if e.is_fenced() || e.stops_flow() || *stop.borrow() {
            return Err(e);
        }
        // Back off, then confirm with the group that this process still owns the run
        // (`owner.rs`): the restart's InitProducerId fences whoever holds the
        // transactional id. No answer counts as another failed attempt.
        loop {
            let (delay, attempt) = match restarts.failed(Instant::now(), &e) {
                crate::restarts::Verdict::Restart { delay, attempt } => (delay, attempt),
                crate::restarts::Verdict::StopFlow => return Err(e),
            };
            tracing::warn!(flow = %flow.name, error = %e, attempt,
                "the flow's transaction failed; restarting the flow from its last commit in \
                 {delay:?}");
            metrics.set_flow_state(
                &flow.name,
                FlowState::Failed(format!(
                    "restarting from the last commit (attempt {attempt}): {e}"
                )),
            );
            tokio::select! {
                () = tokio::time::sleep(delay.max(Duration::from_millis(100))) => {}
                _ = stop.wait_for(|v| *v) => return Err(e),
            }
            let Some(owner) = owner else { break };
            let confirmed = tokio::select! {
                c = owner.confirm() => c,
                _ = stop.wait_for(|v| *v) => return Err(e),
            };
            match confirmed {
                Confirmed::Held => {
                    tracing::info!(flow = %flow.name,
                        "the group confirmed in a new generation that this process still owns \
                         the run; restarting it");
                    break;
                }
                Confirmed::Taken(why) => {
                    tracing::error!(flow = %flow.name, cause = %e, "{why}");
                    return Err(owner.taken(why).flow(&flow.name));
                }
                Confirmed::Unknown(why) => e = MirrorError::other(why).flow(&flow.name),
            }
        }
    }
}

/// The owner of an exactly-once run, asked before it restarts.
pub(super) enum Owner<'a> {
    /// A one-process flow's sole-writer guard.
    Flow(&'a Guard),
    /// One slot of an exactly-once scale-out flow.
    Slot(SlotOwner),
}

impl Owner<'_> {
    /// Whether this process still owns the run (`owner.rs`, rules 1 to 4).
    pub(super) async fn confirm(&self) -> Confirmed {
        match self {
            Owner::Flow(guard) => guard.confirm().await,
            Owner::Slot(slot) => slot.confirm().await,
        }
    }

    /// The error a run ends with when it is taken (`owner.rs`, rule 3): a slot ends as a
    /// fenced run does, a one-process flow stops.
    pub(super) fn taken(&self, why: String) -> MirrorError {
        match self {
            Owner::Flow(_) => MirrorError::other(why),
            Owner::Slot(_) => MirrorError::fenced(why),
        }
    }
}

/// What a failed exactly-once run does with its open transaction (rules, unit-tested):
///
/// 1. **a stop wins**: when the process is stopping, the transaction is abandoned: a
///    stalled target must not hold the exit up, and the next start's InitProducerId
///    aborts it (as after kill -9);
/// 2. **stopping for good aborts now**: an error that stops the flow for good (a `fail`
///    incident, a configuration error) gets no next start from this process, and an open
///    transaction holds every `read_committed` consumer of its partitions at its first
///    offset until the coordinator's `transaction_timeout` (Kafka; Tansu never times it
///    out): it is aborted before the flow stops;
/// 3. **otherwise ask, then restart**: the coordinator is asked whether the
///    `transactional.id` is still ours ([`ownership`], which aborts the transaction when
///    it is) and the flow starts again, or stops if fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterFailure {
    /// Rule 1.
    Abandon,
    /// Rule 2.
    AbortAndStop,
    /// Rule 3.
    ProbeAndRestart,
}

/// [`AfterFailure`] for an error that does (`stops_flow`) or does not stop the flow for
/// good, while the process is (`stopping`) or is not stopping.
fn after_failure(stops_flow: bool, stopping: bool) -> AfterFailure {
    if stopping {
        AfterFailure::Abandon
    } else if stops_flow {
        AfterFailure::AbortAndStop
    } else {
        AfterFailure::ProbeAndRestart
    }
}

/// Rule 2 of [`AfterFailure`]: aborts the open transaction before the flow stops for good,
/// through InitProducerId with the producer's own id and epoch
/// ([`TransactionalProducer::probe_fenced`]: Kafka's coordinator aborts the ongoing
/// transaction and bumps the epoch), retried within `bound`. A failure is only logged:
/// the coordinator still aborts it after `transaction_timeout`.
async fn abort_before_stopping(producer: &TransactionalProducer, flow: &Flow, bound: Duration) {
    let deadline = Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline.into(), producer.probe_fenced(&flow.state_topic, 0))
            .await
        {
            Ok(Ok(false)) => {
                tracing::info!(flow = %flow.name,
                    "the flow stops for good: its open transaction is aborted, so \
                     read_committed consumers of the target are not held at it");
                return;
            }
            Ok(Ok(true)) => {
                tracing::info!(flow = %flow.name,
                    "the flow stops for good; another process took its transactional.id \
                     (and ended the open transaction)");
                return;
            }
            Ok(Err(e)) if e.is_retriable() && Instant::now() < deadline => {
                tracing::debug!(flow = %flow.name, error = %e,
                    "aborting the open transaction: asking again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => {
                tracing::warn!(flow = %flow.name, error = %e,
                    "the flow stops for good but its open transaction could not be aborted: \
                     the coordinator aborts it after delivery.transaction_timeout");
                return;
            }
            Err(_) => {
                tracing::warn!(flow = %flow.name, ?bound,
                    "the flow stops for good but its open transaction was not aborted within \
                     the bound: the coordinator aborts it after delivery.transaction_timeout");
                return;
            }
        }
    }
}

/// Whether the flow still owns its `transactional.id` after a failure.
enum Ownership {
    /// The coordinator says so: the flow may start again.
    Ours,
    /// Another producer took it: the flow stops for good (this error says why).
    Fenced(MirrorError),
    /// A stop came before the coordinator answered.
    Stopped,
}

/// Asks the coordinator ([`TransactionalProducer::probe_fenced`]) until it answers or a
/// stop comes: a flow that starts again without knowing would fence its successor.
async fn ownership(
    producer: &TransactionalProducer,
    flow: &Flow,
    stop: &mut watch::Receiver<bool>,
) -> Ownership {
    let mut backoff = strait_client::backoff::Backoff::new(Default::default());
    loop {
        match producer.probe_fenced(&flow.state_topic, 0).await {
            Ok(true) => {
                return Ownership::Fenced(MirrorError::fenced(format!(
                    "fenced: another process now replicates this flow with transactional.id \
                     {:?} (this one stops; nothing it wrote after that is committed)",
                    flow.delivery.transactional_id
                )));
            }
            Ok(false) => return Ownership::Ours,
            Err(e) => {
                tracing::warn!(flow = %flow.name, error = %e,
                    "cannot tell yet whether another process took the flow's transactional.id; \
                     asking again before restarting");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.next_delay()) => {}
            _ = stop.wait_for(|v| *v) => return Ownership::Stopped,
        }
    }
}

#[cfg(test)]
mod after_failure_tests {
    use super::{AfterFailure, after_failure};

    #[test]
    fn a_stop_wins() {
        assert_eq!(after_failure(true, true), AfterFailure::Abandon);
        assert_eq!(after_failure(false, true), AfterFailure::Abandon);
    }

    #[test]
    fn stopping_for_good_aborts_now() {
        assert_eq!(after_failure(true, false), AfterFailure::AbortAndStop);
    }

    #[test]
    fn otherwise_ask_then_restart() {
        assert_eq!(after_failure(false, false), AfterFailure::ProbeAndRestart);
    }
}
