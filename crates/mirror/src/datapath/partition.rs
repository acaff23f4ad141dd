//! One partition's pipeline, driven: the decisions are the pure [`Pipeline`] state machine
//! (datapath/pipeline); this task only feeds it events — record sets from the fetcher,
//! acknowledgements from the flow's producer ([`Sink`]: idempotent, or transactional in
//! exactly-once mode, where batches also wait while the commit barrier is sealed; it
//! stamps batches and keeps ≤ 5 in flight), the source log start from ListOffsets, the target's batches around an
//! acknowledgement that landed past the map, the chunks of the target's tail a restart's
//! recovery asks for, stop — and does what it says: hand batches to the producer, write
//! ready updates into the offset map, read the target, move the feed's cursor, count
//! metrics and log.
//!
//! **Recovery chunks.** A chunk of the target's tail ([`Action::ReadTargetTail`](super::pipeline::Action::ReadTargetTail)) is read
//! into a reservation of the in-flight budget taken before the read, and asks the target
//! for no more than it holds (the fetcher's rule: a response is never read into memory
//! the budget does not have). It never waits for the budget: the record sets the
//! partition holds (the steps waiting for the chunk, the inbox) are let go of only once
//! the chunk is read, so a wait could be for bytes only the chunk can free. It takes what
//! is free, up to [`TopicSpec::tail_chunk_bytes`]; with less, the chunk is smaller, and
//! with nothing free it asks for one byte, which still brings one whole batch (KIP-74),
//! so recovery always moves on. Bytes past the reservation (a first batch larger than
//! asked for) are added to it when the budget has them, capped at the budget, like an
//! oversized record set. The reservation is the chunk's pin, kept by the pipeline while
//! recovery holds its records. When the partition is about to wait for the feed while
//! keeping chunks and the budget lacks a chunk's room, it lets go of them
//! ([`Pipeline::release_tail`]; read again when needed): recovering partitions never hold
//! the budget the fetches that feed them need.
//!
//! One task, one `select!`: acknowledgements are awaited in order (the oldest first)
//! while record sets keep being planned, so a slow acknowledgement never stops planning.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use strait_client::{Client, IsolationLevel, OffsetSpec};
use strait_offsets::{MapWriter, Side};
use strait_records::{Batch, CompressedPolicy, Limits, MergeOptions};
use tokio::sync::Notify;

use super::budget::{Budget, Reservation};
use super::commit::GateHandle;
use super::fetcher::PartitionFeed;
use super::pipeline::{Pipeline, Recorded, Settings};
use super::recovery::Recovery;
use super::sink::Sink;
use crate::clock::now_ms;
use crate::config::model::{RecompressPolicy, SMALL_BATCH_BYTES};
use crate::error::MirrorError;
use crate::incident::Policies;

/// A partition's map, shared by its pipeline (the only writer) and the state checkpointer.
pub type SharedMap = Arc<Mutex<MapWriter>>;

/// What the pipeline needs to know about its partition: what the topic's partitions
/// share, once per topic, and what is its own. 40 bytes in every partition's task, where
/// the shared part inline took 184.
#[derive(Debug, Clone)]
pub struct PartitionSpec {
    /// What every partition of the topic shares.
    pub shared: Arc<TopicSpec>,
    /// Partition (same index on both sides).
    pub partition: i32,
    /// `--once`: stop at this source offset.
    pub until: Option<i64>,
    /// Exactly-once: target offsets past the committed map at start (markers and aborted
    /// batches of earlier runs), before the first batch this run writes.
    pub start_gap: u64,
}

/// What the partitions of one topic of a flow share ([`PartitionSpec::shared`]).
#[derive(Debug)]
pub struct TopicSpec {
    /// Flow name (context for errors and logs).
    pub flow: Arc<str>,
    /// Source cluster name.
    pub source_cluster: Arc<str>,
    /// Source topic.
    pub source_topic: Arc<str>,
    /// Target topic.
    pub target_topic: Arc<str>,
    /// Largest batch the target accepts.
    pub max_batch_bytes: usize,
    /// Incident policies (source truncation and target mismatch are decided here).
    pub policies: Policies,
    /// Largest number of bytes the partition may hold back while transactions are open
    /// (held batches pin their fetch buffers in the in-flight budget); past it the flow
    /// fails rather than wait for a marker the full budget would keep it from fetching.
    pub max_held_bytes: usize,
    /// The producer's window: batches it keeps unresolved per partition.
    pub max_in_flight: usize,
    /// Largest coalesced batch (`engine.coalesce_max_bytes`; the pipeline also caps it at
    /// `max_batch_bytes`).
    pub coalesce_max_bytes: usize,
    /// Whether coalescing may recompress compressed batches.
    pub recompress: RecompressPolicy,
    /// The in-flight budget (a merged batch reserves its own bytes when it can; a chunk of
    /// the target's tail read for recovery reserves its bytes while held).
    pub budget: Budget,
    /// Most bytes a chunk of the target's tail read for recovery asks for: one partition's
    /// fetch (`engine.fetch_partition_max_bytes`), at most a sixteenth of the budget, like
    /// the fetcher's minimum room.
    pub tail_chunk_bytes: usize,
    /// Exactly-once: the flow's commit barrier (batches wait while it is sealed; the
    /// partition reports when everything it handed on is recorded).
    pub gate: Option<Arc<super::commit::Gate>>,
}

/// Progress shared with the flow.
#[derive(Debug, Default)]
pub struct Progress {
    /// The map changed since the last state write.
    pub dirty: AtomicBool,
    /// `--once`: reached `until`.
    pub done: AtomicBool,
    /// The last end (LSO/HW) seen on the source.
    pub end: AtomicI64,
    /// Woken when `done` turns true.
    pub notify: Notify,
    /// Map restarts for a re-created source topic applied by the pipeline (published
    /// under the map's lock).
    pub recreated: AtomicU64,
}

/// Runs the pipeline until the feed is told to stop ([`PartitionFeed::stop`]; graceful:
/// in-flight batches are awaited and recorded) or an error stops it.
///
/// Not an `async fn`: one copies its arguments into the future a second time (they are
/// rebound for drop order), and this future is kept once per partition.
///
/// **Parked while idle.** The partition's state (`Parts`: its machine, its batches in
/// flight, the barrier's batches) is boxed once; the driver's own future
/// (`Driver::run`, ~700 bytes) is boxed only while the partition has something to do.
/// When the driver would wait for the inbox alone — nothing in flight, no read of the
/// source's log start, the machine wants data, the inbox is empty, and no commit barrier
/// (exactly-once partitions never park: the barrier's seal needs an answer) — it returns,
/// and this future waits on [`PartitionFeed::ready`] with nothing else alive, then runs
/// the driver again. That wait is exactly the one the driver would have made, so parking
/// changes no decision; it frees the driver's future of every partition with no data
/// (10,000 partitions, one task each), for one allocation per wake-up.
#[allow(clippy::too_many_arguments)]
pub fn run(
    spec: PartitionSpec,
    feed: Arc<PartitionFeed>,
    map: SharedMap,
    progress: Arc<Progress>,
    producer: Sink,
    source: Client,
    target: Client,
    recovery: Recovery,
) -> impl Future<Output = Result<(), MirrorError>> + Send {
    // Built before the future, which then holds the machine rather than what it is
    // built from.
    let mut parts =
        Box::new(Parts {
            machine: machine(&spec, &feed, &map, recovery, &producer),
            acks: VecDeque::new(),
            held: Held {
                gate: spec.shared.gate.as_ref().map(|g| {
                    Box::new(g.join((spec.shared.source_topic.to_string(), spec.partition)))
                }),
                waiting: VecDeque::new(),
                last_sent: None,
            },
        });
    async move {
        let result = loop {
            // In a block of its own: neither the driver nor the run's outcome lives across
            // the park's await, where they would size the parked future (they took 128 of
            // its 520 bytes).
            {
                let driver = Driver {
                    spec: &spec,
                    feed: &feed,
                    map: &map,
                    progress: &progress,
                    producer: &producer,
                    source: &source,
                    target: &target,
                };
                let ran = Box::pin(driver.run(&mut parts)).await;
                match ran {
                    Ok(Ran::Idle { produced }) => {
                        if !produced || parts.machine.is_done() {
                            // Woken for nothing to send, or `--once` and done: the
                            // queues' room is not about to be used again. A partition
                            // with steady data keeps it (no allocation per wake-up).
                            parts.shrink_to_fit();
                            feed.shrink_if_empty();
                            producer.shrink_partition(&spec.shared.target_topic, spec.partition);
                        }
                    }
                    Ok(Ran::Finished) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
            feed.ready().await;
        };
        // Boxed: the end's settling is rare and would otherwise size the parked future.
        Box::pin(ended(*parts, result, &spec, &feed)).await
    }
}

/// The pipeline ended with `result`: leaves the barrier, marks the feed stopped and, after
/// an error, settles what was handed on.
async fn ended(
    parts: Parts,
    result: Result<(), MirrorError>,
    spec: &PartitionSpec,
    feed: &PartitionFeed,
) -> Result<(), MirrorError> {
    let Parts { acks, mut held, .. } = parts;
    // Leaves the barrier: the committer no longer waits for this partition. After an
    // error, batches of the open transaction may be written without being in the map: it
    // must not commit.
    if let Some(g) = held.gate.take() {
        match &result {
            Ok(()) => g.release(),
            Err(_) => g.fail(),
        }
    }
    drop(held);
    feed.with_cursor(|c| c.stopped = true);
    if result.is_err() {
        // Settle the batches handed to the producer whose outcome nobody recorded: a
        // restart of the partition reads the target's end only once they resolved (each
        // by its delivery timeout), so none lands after it (what landed is found by the
        // restart's recovery).
        for sent in acks {
            let _ = sent.ack.await;
        }
    }
    result.map_err(|e| {
        e.flow(&*spec.shared.flow)
            .topic(&*spec.shared.source_topic)
            .partition(spec.partition)
    })
}

/// A partition's state across parking (see [`run`]).
struct Parts {
    machine: Pipeline<BatchPin>,
    /// Batches handed on and not yet acknowledged, oldest first (settled by [`run`] after
    /// an error).
    acks: VecDeque<InFlight>,
    held: Held,
}

impl Parts {
    /// Gives back the capacity the partition's queues do not use now.
    fn shrink_to_fit(&mut self) {
        self.machine.shrink_to_fit();
        self.acks.shrink_to_fit();
        self.held.waiting.shrink_to_fit();
    }
}

/// How a run of the driver ended without an error.
enum Ran {
    /// The machine finished (stopped and everything handed on recorded).
    Finished,
    /// Nothing to wait for but the inbox: park until it holds something or the stop.
    /// `produced`: the run planned a batch to produce.
    Idle { produced: bool },
}

/// The partition's machine, from its map as it is now and what recovery must check.
fn machine(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    map: &SharedMap,
    recovery: Recovery,
    producer: &Sink,
) -> Pipeline<BatchPin> {
    let limits = Limits::default();
    let settings = Settings {
        // Where the feed started, not the cursor: the fetcher may have delivered record
        // sets (still queued in the inbox) and moved the cursor before this task first
        // ran; planning from the cursor would drop them as "before the position" and
        // leave a silent gap.
        start: feed.start_position(),
        max_batch_bytes: spec.shared.max_batch_bytes,
        until: spec.until,
        policies: spec.shared.policies,
        max_in_flight: spec.shared.max_in_flight,
        merge: {
            let (compressed, max_compressed_input_bytes) = merging(spec.shared.recompress);
            MergeOptions {
                max_bytes: spec
                    .shared
                    .coalesce_max_bytes
                    .min(spec.shared.max_batch_bytes)
                    .max(1),
                max_compressed_input_bytes,
                compressed,
                limits,
                buffers: spec.shared.budget.merge_buffers().clone(),
            }
        },
        target_topic: spec.shared.target_topic.clone(),
        source_cluster: spec.shared.source_cluster.clone(),
        recovers_by_content: matches!(producer, Sink::Idempotent(_)),
    };
    map.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .read(|m| Pipeline::new(settings, m, recovery))
}

/// The merge options' policy for compressed inputs and the largest one merged, under
/// `engine.recompress`.
fn merging(policy: RecompressPolicy) -> (CompressedPolicy, usize) {
    match policy {
        RecompressPolicy::Small => (CompressedPolicy::RecompressFast, SMALL_BATCH_BYTES - 1),
        RecompressPolicy::Never => (CompressedPolicy::Never, usize::MAX),
        RecompressPolicy::Fast => (CompressedPolicy::RecompressFast, usize::MAX),
        RecompressPolicy::Allowed => (CompressedPolicy::Recompress, usize::MAX),
    }
}

/// What a planned batch keeps alive until it is recorded: its share of the in-flight
/// budget, and when the Fetch response that brought it was received (a merged batch: its
/// oldest input's), for `strait_replication_engine_latency_seconds`.
#[derive(Debug, Clone)]
struct BatchPin {
    reservation: Arc<Reservation>,
    fetched: Instant,
}

/// A batch handed on and not yet acknowledged, oldest first (one queue per partition).
struct InFlight {
    /// Its acknowledgement (unboxed).
    ack: strait_client::AckFuture,
    /// The target offsets known to lie before it that hold none of our data.
    gap: u64,
    /// When the Fetch response of its oldest input was received.
    fetched: Instant,
    /// When it was handed on.
    handed: Instant,
}
type LogStartWait<'a> = Pin<Box<dyn Future<Output = Result<i64, MirrorError>> + Send + 'a>>;

/// Exactly-once: the driver's membership of the commit barrier and the batches released
/// by the pipeline while it is sealed (handed on, in order, when it opens).
struct Held {
    /// Boxed: only exactly-once partitions have one, and every partition keeps a `Held`
    /// (80 bytes unboxed).
    gate: Option<Box<GateHandle>>,
    waiting: VecDeque<(Batch, Instant)>,
    /// The transaction the last batch handed on belongs to.
    last_sent: Option<u64>,
}

impl Held {
    /// Whether a batch released now must wait.
    fn must_wait(&self) -> bool {
        !self.waiting.is_empty() || self.must_wait_gate()
    }

    /// Whether the barrier is sealed.
    fn must_wait_gate(&self) -> bool {
        self.gate.as_deref().is_some_and(GateHandle::sealed)
    }
}

struct Driver<'a> {
    spec: &'a PartitionSpec,
    feed: &'a PartitionFeed,
    map: &'a SharedMap,
    progress: &'a Progress,
    producer: &'a Sink,
    source: &'a Client,
    target: &'a Client,
}

impl<'a> Driver<'a> {
    /// Metrics and progress after map updates.
    fn recorded(&self, recorded: &[Recorded]) {
        let metrics = &self.feed.metrics;
        let now = now_ms();
        for r in recorded {
            let latency = (now - r.max_timestamp) as f64 / 1000.0;
            metrics.acked(r.records, r.bytes, latency);
        }
        self.progress.dirty.store(true, Ordering::Release);
        let (source_next, runs) = self.lock().read(|m| (m.next(Side::Source), m.runs().len()));
        metrics.map_runs(runs);
        let end = self.progress.end.load(Ordering::Relaxed);
        let lag = (end - source_next as i64).max(0);
        let lag_secs = match recorded.last() {
            Some(r) if lag > 0 => ((now - r.max_timestamp) as f64 / 1000.0).max(0.0),
            _ => 0.0,
        };
        metrics.lag(lag, lag_secs);
    }

    /// Counts an incident that stops the pipeline (policy `fail`).
    fn counted<T>(&self, r: Result<T, MirrorError>) -> Result<T, MirrorError> {
        r.inspect_err(|e| {
            if let Some(kind) = e.incident_kind() {
                self.feed.metrics.incident(kind);
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'a, MapWriter> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The source partition's log start offset (ListOffsets EARLIEST).
async fn source_log_start(source: &Client, spec: &PartitionSpec) -> Result<i64, MirrorError> {
    let offsets = source
        .list_offsets(
            &spec.shared.source_topic,
            &[(spec.partition, OffsetSpec::Earliest)],
            IsolationLevel::ReadCommitted,
        )
        .await
        .map_err(|e| MirrorError::kafka("list offsets", e).cluster(&*spec.shared.source_cluster))?;
    Ok(offsets.first().map_or(0, |o| o.offset.max(0)))
}

fn mark_done(progress: &Progress) {
    if !progress.done.swap(true, Ordering::AcqRel) {
        progress.notify.notify_waiters();
    }
}

mod act;
mod drive;
mod hand_on;
mod held_bytes;
#[cfg(test)]
mod tests;
