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
//!   state ([`super::eos_failure::run_restarting`]), after confirming with its group that it still owns the
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

use super::partitions::Key;
use super::partitions::{Partitions, Running};
use crate::config::Flow;
use crate::datapath::commit::Gate;
use crate::error::MirrorError;
use crate::metrics::Metrics;
use crate::state::delta::{self, SNAPSHOT_EVERY};
use crate::state::{DeltaSeqs, PartitionState, StateWriter, codec};

/// Largest batch of state records in a transaction.
const STATE_BATCH_BYTES: usize = 1024 * 1024;

/// A flow's exactly-once parts.
pub(super) struct Eos {
    /// The flow's transactional producer (the data path's [`crate::datapath::sink::Sink`]
    /// holds a clone).
    pub producer: TransactionalProducer,
    /// The barrier between the drivers and [`Eos::commit`].
    gate: Arc<Gate>,
    /// Per partition, the registry's committed copy of its map.
    committed: BTreeMap<Key, MapWriter>,
    /// When the open transaction began (for the duration metric).
    began: Instant,
    /// Per partition, the delta records on the state topic since its last snapshot.
    pub deltas: DeltaSeqs,
    /// Partitions whose next checkpoint is a whole snapshot (each one's first of the run:
    /// it starts a new delta chain).
    snapshot_due: BTreeSet<Key>,
    /// Per partition, its re-creation count at the last commit (a change forces a
    /// snapshot: only snapshots carry the topic id).
    recreated: BTreeMap<Key, u64>,
}

impl Eos {
    /// The barrier the partitions' drivers pass their batches through.
    pub(super) fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Partition `key` starts (or starts again): `committed` is the registry's copy of its
    /// map, which moves only when a commit succeeds; its next checkpoint is a whole
    /// snapshot, starting a new delta chain.
    pub(super) fn started(&mut self, key: &Key, committed: MapWriter) {
        self.committed.insert(key.clone(), committed);
        self.snapshot_due.insert(key.clone());
        self.recreated.remove(key);
    }

    /// Partition `key` is no longer replicated here: its committed copy goes.
    pub(super) fn forget(&mut self, key: &Key) {
        self.committed.remove(key);
    }
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
        e.cluster(&flow.target)
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

/// Seals the barrier and waits `bound` at most for every partition to record its
/// batches; an error when one failed or did not (the barrier fails then).
async fn seal(gate: &Gate, bound: Duration) -> Result<(), MirrorError> {
    gate.seal();
    match tokio::time::timeout(bound, gate.ready()).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(MirrorError::other(
            "a partition failed: the open transaction is abandoned (aborted when the \
             flow restarts)",
        )),
        Err(_) => {
            gate.fail();
            Err(MirrorError::other(format!(
                "the partitions {:?} did not record their batches within {bound:?}: the \
                 open transaction is abandoned",
                gate.waiting()
            )))
        }
    }
}

impl Eos {
    /// Ends the open transaction with the states of the partitions that changed, written
    /// by `writer` in it, and opens the next; the barrier waits `bound` at most for the
    /// partitions to record their batches. An error fails the transaction (the flow
    /// stops).
    pub(super) async fn commit(
        &mut self,
        partitions: &Partitions,
        writer: &mut StateWriter,
        metrics: &Metrics,
        flow: &Flow,
        bound: Duration,
    ) -> Result<(), MirrorError> {
        let (gate, producer) = (Arc::clone(&self.gate), self.producer.clone());
        let sealed = Instant::now();
        seal(&gate, bound).await?;
        let (records, applied) = self.transaction_states(partitions.running());
        let result = async {
            writer.write_raw(records).await?;
            producer
                .commit()
                .await
                .map_err(|e| MirrorError::kafka("commit the transaction", e))
        }
        .await;
        if let Err(e) = result {
            gate.fail();
            metrics.transaction_ended(&flow.name, false, 0, 0.0, 0.0);
            return Err(e.cluster(&flow.target));
        }
        let n = applied.len() as u64;
        for a in applied {
            self.committed_one(a)?;
        }
        if n > 0 {
            let now = Instant::now();
            metrics.transaction_ended(
                &flow.name,
                true,
                n,
                now.duration_since(self.began).as_secs_f64(),
                now.duration_since(sealed).as_secs_f64(),
            );
            metrics.state_records_written(&flow.name, n);
        }
        producer
            .begin()
            .map_err(|e| MirrorError::kafka("begin a transaction", e))?;
        self.began = Instant::now();
        gate.open();
        Ok(())
    }

    /// The run failed: the open transaction is abandoned (its drivers stop). The
    /// producer, for what happens to the transaction next
    /// ([`super::eos_failure::after_failed_run`]).
    pub(super) fn abandon(&self) -> TransactionalProducer {
        self.gate.fail();
        self.producer.clone()
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

impl Eos {
    /// The state records of the open transaction: per partition that changed, a delta of
    /// its map since the last commit, or a whole snapshot (the first of a run, every
    /// [`SNAPSHOT_EVERY`] deltas, after a source re-creation, or when the journal
    /// overflowed) with tombstones for the deltas it covers.
    fn transaction_states(&self, running: &BTreeMap<Key, Running>) -> (StateRecords, Vec<Applied>) {
        let (mut records, mut applied) = (Vec::new(), Vec::new());
        for (key, r) in running {
            if !r.progress.dirty.swap(false, Ordering::AcqRel) {
                continue;
            }
            let deltas = self.deltas.get(key).map_or(&[][..], Vec::as_slice);
            let due = self.snapshot_due.contains(key)
                || deltas.len() >= SNAPSHOT_EVERY
                || self.recreated.get(key) != Some(&r.progress.recreated.load(Ordering::Acquire));
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
