//! One partition's pipeline: a sender that plans fetched record sets and hands batches to
//! the idempotent producer (which stamps them and keeps ≤ 5 in flight), and a recorder
//! that waits for the acknowledgements in order and extends the offset map.
//!
//! Everything that changes the map — acknowledged batches, skipped markers, incident
//! resolutions, records found already written during recovery — goes through the one
//! ordered channel to the recorder, so the map sees the log in order.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use strait_client::{AckFuture, Client, IdempotentProducer, IsolationLevel, OffsetSpec};
use strait_offsets::{MapWriter, Side};
use strait_records::{CompressedPolicy, Limits, MergeOptions};
use tokio::sync::{Notify, mpsc, watch};

use super::budget::{Budget, Reservation};
use super::coalesce::{Coalescer, Next, Outgoing, Written};
use super::fetcher::{Feed, PartitionFeed};
use super::plan::{Planner, Step};
use super::recovery::{Decision, Recovery};
use crate::config::model::{IncidentPolicy, RecompressPolicy};
use crate::error::{IncidentKind, MirrorError};

/// A partition's map, shared by its recorder and the state checkpointer.
pub type SharedMap = Arc<Mutex<MapWriter>>;

/// What the pipeline needs to know about its partition.
#[derive(Debug, Clone)]
pub struct PartitionSpec {
    /// Flow name (context for errors and logs).
    pub flow: String,
    /// Source cluster name.
    pub source_cluster: String,
    /// Source topic.
    pub source_topic: String,
    /// Target topic.
    pub target_topic: String,
    /// Partition (same index on both sides).
    pub partition: i32,
    /// Largest batch the target accepts.
    pub max_batch_bytes: usize,
    /// `--once`: stop at this source offset.
    pub until: Option<i64>,
    /// Reaction to source truncation.
    pub on_source_truncation: IncidentPolicy,
    /// Reaction to a target that does not hold what the map says (truncated/re-created).
    pub on_target_mismatch: IncidentPolicy,
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
    /// The in-flight budget (a merged batch reserves its own bytes when it can).
    pub budget: Budget,
}

/// Batches sent to the producer and not yet acknowledged, counted by the pipeline (the
/// recorder resolves acknowledgements in order), so the sender knows without blocking
/// whether the producer's window for the partition is full.
#[derive(Debug, Default)]
struct Window {
    unresolved: std::sync::atomic::AtomicUsize,
    freed: Notify,
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
}

/// The ack-side view of a produced step (`None` for a skip or a negative offset).
fn written_of(step: &Step) -> Option<Written> {
    match step {
        Step::Forward {
            source_first,
            count,
            ..
        } => Some(Written::Dense {
            source_first: u64::try_from(*source_first).ok()?,
            count: u64::try_from(*count).ok()?,
        }),
        Step::Reencoded { source_offsets, .. } => Some(Written::Listed(
            source_offsets
                .iter()
                .map(|o| u64::try_from(*o).unwrap_or(0))
                .collect(),
        )),
        Step::Skip { .. } => None,
    }
}

/// Work for the recorder, in log order.
enum Record {
    Produced {
        ack: AckFuture,
        written: Written,
        bytes: u64,
        max_timestamp: i64,
        /// Fetch-buffer reservations (or a merged batch's own) held until acknowledged.
        _pins: Vec<Arc<Reservation>>,
    },
    /// Found on the target by recovery, its first record at this target offset.
    AlreadyWritten(Written, u64),
    Advance(u64),
    /// `--once`: everything up to the end seen at start was fetched and every step
    /// released from it is queued before this (transactions still open stay unreplicated).
    ReachedEnd,
    SourceLogStart(u64),
    SourceRecreated(u64),
    /// The target holds records past the map that are not the source's: restart the map's
    /// target side at the target's end, resuming the source at `resume_source`.
    TargetReset {
        target_end: u64,
        resume_source: u64,
    },
}

/// Runs the pipeline until `stop` turns true (graceful: in-flight batches are awaited and
/// recorded) or an error stops it.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    spec: PartitionSpec,
    feed: Arc<PartitionFeed>,
    rx: mpsc::Receiver<Feed>,
    map: SharedMap,
    progress: Arc<Progress>,
    producer: IdempotentProducer,
    source: Client,
    recovery: Recovery,
    stop: watch::Receiver<bool>,
) -> Result<(), MirrorError> {
    let (rec_tx, rec_rx) = mpsc::channel::<Record>(16);
    let window = Window::default();
    let sender = send_loop(
        &spec, &feed, &progress, rx, &producer, &source, recovery, rec_tx, stop, &window,
    );
    let recorder = record_loop(&spec, &feed, &map, &progress, rec_rx, &window);
    let result = tokio::try_join!(sender, recorder).map(|_| ());
    feed.with_cursor(|c| c.stopped = true);
    result.map_err(|e| {
        e.flow(&spec.flow)
            .topic(&spec.source_topic)
            .partition(spec.partition)
    })
}

#[allow(clippy::too_many_arguments)]
async fn send_loop(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    progress: &Progress,
    mut rx: mpsc::Receiver<Feed>,
    producer: &IdempotentProducer,
    source: &Client,
    mut recovery: Recovery,
    rec: mpsc::Sender<Record>,
    mut stop: watch::Receiver<bool>,
    window: &Window,
) -> Result<(), MirrorError> {
    let limits = Limits::default();
    let options = MergeOptions {
        max_bytes: spec.coalesce_max_bytes.min(spec.max_batch_bytes).max(1),
        compressed: match spec.recompress {
            RecompressPolicy::Never => CompressedPolicy::Never,
            RecompressPolicy::Fast => CompressedPolicy::RecompressFast,
            RecompressPolicy::Allowed => CompressedPolicy::Recompress,
        },
        limits,
        buffers: spec.budget.merge_buffers().clone(),
    };
    let mut queue: Coalescer<Arc<Reservation>, Record> =
        Coalescer::new(spec.max_in_flight, options);
    // Where the feed started, not the cursor: the fetcher may have delivered record sets
    // (still queued in `rx`) and moved the cursor before this task first ran; planning
    // from the cursor would drop them as "before the position" and leave a silent gap.
    let mut planner: Planner<Arc<Reservation>> =
        Planner::new(feed.start_position(), spec.max_batch_bytes, limits);
    let mut generation = 0u64;
    let send = |r: Record| {
        let rec = rec.clone();
        async move {
            rec.send(r)
                .await
                .map_err(|_| MirrorError::other("the recorder stopped"))
        }
    };
    loop {
        pump(spec, feed, producer, &rec, window, &mut queue).await?;
        if *stop.borrow() {
            return Ok(());
        }
        let item = tokio::select! {
            biased;
            _ = stop.changed() => return Ok(()),
            // A slot freed: send what the queue holds.
            _ = window.freed.notified(), if !queue.is_empty() => continue,
            item = rx.recv() => item,
        };
        let Some(item) = item else {
            // The feed ended: hand on what is queued, then stop.
            while !queue.is_empty() {
                pump(spec, feed, producer, &rec, window, &mut queue).await?;
                if queue.is_empty() {
                    break;
                }
                tokio::select! {
                    _ = stop.changed() => return Ok(()),
                    _ = window.freed.notified() => {}
                }
            }
            return Ok(());
        };
        match item {
            Feed::Data {
                generation: g,
                position,
                records,
                aborted,
                end,
                stable,
                reservation,
            } => {
                if g != generation {
                    continue;
                }
                if let Some(until) = spec.until
                    && position >= until
                {
                    // `--once`: everything up to the end seen at start is planned.
                    feed.with_cursor(|c| c.paused = true);
                    continue;
                }
                progress.end.store(end, Ordering::Relaxed);
                let plan = planner
                    .plan_stable(records, &aborted, stable, position, reservation)
                    .map_err(|e| {
                        MirrorError::records(
                            format!("batch at source offset {}", e.offset),
                            e.source,
                        )
                        .cluster(&spec.source_cluster)
                    })?;
                for _ in 0..plan.dropped_control {
                    feed.metrics.dropped("control");
                }
                for _ in 0..plan.dropped_aborted {
                    feed.metrics.dropped("aborted");
                }
                for r in &plan.slow {
                    feed.metrics.slow_path(r.as_str());
                }
                check_held(spec, feed, &mut planner)?;
                let fetched_to = plan.next_position;
                for (step, reservation) in plan.steps {
                    let recovering = recovery.remaining() > 0;
                    let mut decision = recovery.decide(&step);
                    if recovering && recovery.remaining() == 0 {
                        tracing::info!(flow = %spec.flow, topic = %spec.source_topic,
                            partition = spec.partition, duplicates = recovery.duplicates(),
                            "recovery: every record found on the target past the last state \
                             write was matched to the source by content");
                        for _ in 0..recovery.duplicates() {
                            feed.metrics.dropped("duplicate_on_target");
                        }
                    }
                    if let Decision::Mismatch { at, reason } = &decision {
                        let message = format!(
                            "recovery: the target partition of {} does not hold the source's \
                             data at offset {at}: {reason}; it was written by someone else, \
                             truncated, or a batch is missing",
                            spec.target_topic
                        );
                        feed.metrics.incident(IncidentKind::TargetTruncation);
                        if spec.on_target_mismatch == IncidentPolicy::Fail {
                            return Err(MirrorError::incident(
                                IncidentKind::TargetTruncation,
                                format!(
                                    "{message}; policy fail (on_topic_recreation = \"skip\" \
                                     restarts the map's target side at the target end and \
                                     writes from there)"
                                ),
                            ));
                        }
                        tracing::error!(flow = %spec.flow, topic = %spec.source_topic,
                            partition = spec.partition, "{message}; policy skip: the map restarts at the target end");
                        let resume_source = written_of(&step).map_or(0, |w| w.first_source());
                        queue.push_other(Record::TargetReset {
                            target_end: recovery.target_end(),
                            resume_source,
                        });
                        recovery = Recovery::none();
                        decision = Decision::Produce;
                    }
                    let written = written_of(&step);
                    match (decision, step, written) {
                        (_, Step::Skip { source_next }, _) => queue
                            .push_other(Record::Advance(u64::try_from(source_next).unwrap_or(0))),
                        (Decision::AlreadyWritten { target_base }, _, Some(w)) => {
                            queue.push_other(Record::AlreadyWritten(w, target_base))
                        }
                        (_, Step::Forward { batch, .. }, Some(written)) => {
                            let mergeable = queue.mergeable(&batch);
                            queue.push_batch(Outgoing {
                                batch,
                                written,
                                pins: vec![reservation],
                                mergeable,
                            });
                        }
                        (_, Step::Reencoded { batch, .. }, Some(written)) => {
                            queue.push_batch(Outgoing {
                                batch,
                                written,
                                pins: vec![reservation],
                                mergeable: false,
                            });
                        }
                        (_, _, None) => {
                            return Err(MirrorError::other("negative offset in a fetched batch"));
                        }
                    }
                }
                if let Some(until) = spec.until
                    && fetched_to >= until
                {
                    // `--once`: fetched up to the end seen at start. Batches still held
                    // belong to transactions open at that end: they are not replicated
                    // (the map's source position stays before them for the next run).
                    feed.with_cursor(|c| c.paused = true);
                    queue.push_other(Record::ReachedEnd);
                }
            }
            Feed::OutOfRange {
                generation: g,
                position,
            } => {
                if g != generation {
                    continue;
                }
                if !flush(spec, feed, producer, &rec, window, &mut queue, &mut stop).await? {
                    return Ok(());
                }
                let start = source_log_start(source, spec).await?;
                let (message, record) = if position < start {
                    (
                        format!(
                            "the source log now starts at offset {start}, but offsets \
                             {position}..{start} were not replicated yet (retention or DeleteRecords)"
                        ),
                        Record::SourceLogStart(start as u64),
                    )
                } else {
                    (
                        format!(
                            "offset {position} is past the end of the source log (log start \
                             {start}): the partition was truncated or re-created"
                        ),
                        Record::SourceRecreated(start as u64),
                    )
                };
                feed.metrics.incident(IncidentKind::SourceTruncation);
                if spec.on_source_truncation == IncidentPolicy::Fail {
                    return Err(MirrorError::incident(
                        IncidentKind::SourceTruncation,
                        format!(
                            "{message}; policy fail (set on_source_truncation = \"skip\" to \
                             continue from the log start)"
                        ),
                    )
                    .cluster(&spec.source_cluster));
                }
                tracing::error!(flow = %spec.flow, topic = %spec.source_topic,
                    partition = spec.partition, "source truncation: {message}; policy skip: continuing from offset {start}");
                send(record).await?;
                generation = resume_from(feed, &mut planner, generation, start);
            }
            Feed::SourceRecreated => {
                if !flush(spec, feed, producer, &rec, window, &mut queue, &mut stop).await? {
                    return Ok(());
                }
                let start = source_log_start(source, spec).await?;
                tracing::error!(flow = %spec.flow, topic = %spec.source_topic,
                    partition = spec.partition,
                    "topic re-creation: policy skip: the map restarts and the new topic is \
                     replicated from offset {start}");
                send(Record::SourceRecreated(start as u64)).await?;
                recovery = Recovery::none();
                generation = resume_from(feed, &mut planner, generation, start);
            }
            Feed::Failed(e) => return Err(e),
        }
    }
}

/// Restarts planning and fetching at source offset `start` under a new cursor generation
/// (data fetched under older ones is dropped), and returns that generation.
fn resume_from(
    feed: &PartitionFeed,
    planner: &mut Planner<Arc<Reservation>>,
    generation: u64,
    start: i64,
) -> u64 {
    let next = generation + 1;
    planner.reposition(start);
    feed.with_cursor(|c| {
        c.position = start;
        c.generation = next;
        c.paused = false;
    });
    next
}

/// Hands on everything the queue lets go now: items for the recorder, and batches while
/// the partition's window has room (merged when more are queued than it has slots).
async fn pump(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    producer: &IdempotentProducer,
    rec: &mpsc::Sender<Record>,
    window: &Window,
    queue: &mut Coalescer<Arc<Reservation>, Record>,
) -> Result<(), MirrorError> {
    let stopped = || MirrorError::other("the recorder stopped");
    while let Some(next) = queue.next(window.unresolved.load(Ordering::Acquire)) {
        match next {
            Next::Other(r) => rec.send(r).await.map_err(|_| stopped())?,
            Next::Send { mut out, coalesced } => {
                if let Some(c) = coalesced {
                    feed.metrics.coalesced(c.inputs as u64, c.bytes as u64);
                    // The merged batch is a new allocation: it holds a reservation of its
                    // own when the budget has room, and lets go of its inputs' fetch
                    // buffers; otherwise it keeps the inputs' reservations, which cover
                    // about as many bytes (never waiting here: no deadlock with fetchers).
                    if let Some(r) = spec.budget.try_reserve(c.bytes) {
                        out.pins = vec![Arc::new(r)];
                    }
                }
                let bytes = out.batch.size() as u64;
                let max_timestamp = out.batch.header().max_timestamp;
                let ack = producer
                    .send(&spec.target_topic, spec.partition, out.batch)
                    .await
                    .map_err(|e| MirrorError::kafka("produce", e))?;
                window.unresolved.fetch_add(1, Ordering::AcqRel);
                rec.send(Record::Produced {
                    ack,
                    written: out.written,
                    bytes,
                    max_timestamp,
                    _pins: out.pins,
                })
                .await
                .map_err(|_| stopped())?;
            }
        }
    }
    Ok(())
}

/// Hands on everything queued, waiting for window slots; `false` if stopped first.
async fn flush(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    producer: &IdempotentProducer,
    rec: &mpsc::Sender<Record>,
    window: &Window,
    queue: &mut Coalescer<Arc<Reservation>, Record>,
    stop: &mut watch::Receiver<bool>,
) -> Result<bool, MirrorError> {
    loop {
        pump(spec, feed, producer, rec, window, queue).await?;
        if queue.is_empty() {
            return Ok(true);
        }
        tokio::select! {
            _ = stop.changed() => return Ok(false),
            _ = window.freed.notified() => {}
        }
    }
}

/// The source partition's log start offset (ListOffsets EARLIEST).
async fn source_log_start(source: &Client, spec: &PartitionSpec) -> Result<i64, MirrorError> {
    let offsets = source
        .list_offsets(
            &spec.source_topic,
            &[(spec.partition, OffsetSpec::Earliest)],
            IsolationLevel::ReadCommitted,
        )
        .await
        .map_err(|e| MirrorError::kafka("list offsets", e).cluster(&spec.source_cluster))?;
    Ok(offsets.first().map_or(0, |o| o.offset.max(0)))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn record_loop(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    map: &SharedMap,
    progress: &Progress,
    mut rx: mpsc::Receiver<Record>,
    window: &Window,
) -> Result<(), MirrorError> {
    let lock = || map.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(until) = spec.until
        && lock().read(|m| m.next(Side::Source)) as i64 >= until
    {
        mark_done(progress);
    }
    while let Some(r) = rx.recv().await {
        let mut newest_ts = None;
        match r {
            Record::Produced {
                ack,
                written,
                bytes,
                max_timestamp,
                _pins,
            } => {
                let acked = ack.wait().await;
                window.unresolved.fetch_sub(1, Ordering::AcqRel);
                window.freed.notify_one();
                let a = match acked {
                    Ok(a) => a,
                    Err(e) => {
                        feed.metrics.produce_error();
                        return Err(MirrorError::kafka("produce", e));
                    }
                };
                let mut m = lock();
                let expected = m.read(|m| m.next(Side::Target));
                let base = match ack_base(a.base_offset, expected) {
                    AckBase::At(base) => base,
                    AckBase::Mismatch { acked, expected } => {
                        let message = format!(
                            "the target acknowledged a batch at offset {acked} of {} but Strait, \
                             its only writer, expected {expected}: the target partition was \
                             written by someone else, truncated or re-created",
                            spec.target_topic
                        );
                        feed.metrics.incident(IncidentKind::TargetTruncation);
                        if spec.on_target_mismatch == IncidentPolicy::Fail {
                            return Err(MirrorError::incident(
                                IncidentKind::TargetTruncation,
                                format!(
                                    "{message}; policy fail (on_topic_recreation = \"skip\" \
                                     restarts the map's target side at the acknowledged offset)"
                                ),
                            ));
                        }
                        tracing::error!(flow = %spec.flow, topic = %spec.source_topic,
                            partition = spec.partition,
                            "{message}; policy skip: the map's target side restarts at {acked}");
                        let resume = written.first_source();
                        m.update(|m| m.target_recreated(acked, resume))
                            .map_err(MirrorError::offset_map)?;
                        acked
                    }
                };
                append(&mut m, &written, base)?;
                drop(m);
                let latency = (now_ms() - max_timestamp) as f64 / 1000.0;
                feed.metrics.acked(written.records(), bytes, latency);
                newest_ts = Some(max_timestamp);
            }
            Record::AlreadyWritten(written, base) => {
                let mut m = lock();
                append(&mut m, &written, base)?;
            }
            Record::ReachedEnd => mark_done(progress),
            Record::Advance(next) => lock()
                .update(|m| {
                    if next > m.next(Side::Source) {
                        m.advance_source(next)
                    } else {
                        Ok(())
                    }
                })
                .map_err(MirrorError::offset_map)?,
            Record::SourceLogStart(start) => lock()
                .update(|m| m.set_source_log_start(start))
                .map_err(MirrorError::offset_map)?,
            Record::SourceRecreated(start) => lock()
                .update(|m| {
                    let t = m.next(Side::Target);
                    m.source_recreated(start, t)
                })
                .map_err(MirrorError::offset_map)?,
            Record::TargetReset {
                target_end,
                resume_source,
            } => lock()
                .update(|m| {
                    let end = target_end.max(m.next(Side::Target));
                    m.target_recreated(end, resume_source)
                })
                .map_err(MirrorError::offset_map)?,
        }
        progress.dirty.store(true, Ordering::Release);
        let (source_next, runs) = lock().read(|m| (m.next(Side::Source), m.runs().len()));
        feed.metrics.map_runs(runs);
        let end = progress.end.load(Ordering::Relaxed);
        let lag = (end - source_next as i64).max(0);
        let lag_secs = match newest_ts {
            Some(ts) if lag > 0 => ((now_ms() - ts) as f64 / 1000.0).max(0.0),
            _ => 0.0,
        };
        feed.metrics.lag(lag, lag_secs);
        if let Some(until) = spec.until
            && source_next as i64 >= until
        {
            mark_done(progress);
        }
    }
    Ok(())
}

/// Where an acknowledged batch landed on the target, given what the broker answered and
/// where the map expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckBase {
    /// Record the batch at this target offset.
    At(u64),
    /// The broker put it somewhere else: someone else wrote or reset the target partition.
    Mismatch {
        /// Where the broker says it landed.
        acked: u64,
        /// Where the map expected it (`next(Target)`).
        expected: u64,
    },
}

/// Decides where an acknowledged batch landed. Strait is the only writer of its target
/// partitions and acknowledgements arrive in order, so a batch lands at the map's
/// `next(Target)` (`expected`). An answer without an offset (−1: Tansu's
/// DUPLICATE_SEQUENCE_NUMBER for a re-sent batch, some acks settings) means exactly
/// that; an offset that differs is a [`AckBase::Mismatch`].
pub fn ack_base(acked: i64, expected: u64) -> AckBase {
    match u64::try_from(acked) {
        Err(_) => AckBase::At(expected),
        Ok(acked) if acked == expected => AckBase::At(acked),
        Ok(acked) => AckBase::Mismatch { acked, expected },
    }
}

/// Publishes the partition's held bytes (its budget account and the `strait_held_bytes`
/// metric; `/health` names the oldest open transaction while every partition together
/// holds more than the budget's held limit) and acts when the partition holds more than it
/// may while transactions are open — more than `spec.max_held_bytes` alone, or the most of
/// all partitions while they exceed the held limit together (rules 5–6 of
/// [`super::quota`]; when another partition holds the most, that one is told through its
/// account and its fetcher makes it look with an empty record set): it spills ([`Planner::spill`]: the held batches are dropped, the partition reads
/// ahead for the markers and then re-reads from where its steps stopped, moving the fetch
/// cursor back when the planner asks) or, with `--once` or when already spilling, fails
/// with an error naming the transaction.
fn check_held(
    spec: &PartitionSpec,
    feed: &PartitionFeed,
    planner: &mut Planner<Arc<Reservation>>,
) -> Result<(), MirrorError> {
    if let Some(at) = planner.take_rewind() {
        tracing::info!(flow = %spec.flow, topic = %spec.source_topic, partition = spec.partition,
            from = at, "every transaction held before the spill is decided: re-reading");
        feed.with_cursor(|c| c.position = at);
    }
    let held = planner.held_bytes();
    let oldest = planner.oldest_open();
    let share = feed.share(&spec.budget, &spec.flow);
    share.set_held(held as u64, oldest.map(|t| (t.producer_id, t.first_offset)));
    feed.metrics.held(held as u64);
    let over = spec.budget.held() > spec.budget.held_limit();
    feed.metrics.held_alarm(over.then(|| {
        let oldest = spec.budget.oldest_held().map_or_else(String::new, |o| {
            format!(
                "; the oldest open transaction: producer id {} since source offset {} of {}",
                o.producer_id, o.first_offset, o.partition
            )
        });
        format!(
            "{} bytes are held for open transactions, more than the {} allowed{oldest}",
            spec.budget.held(),
            spec.budget.held_limit()
        )
    }));
    let err = if held > spec.max_held_bytes {
        let txn = oldest.map_or_else(
            || "no open transaction".to_owned(),
            |t| {
                format!(
                    "the transaction of producer id {} open since source offset {}",
                    t.producer_id, t.first_offset
                )
            },
        );
        format!(
            "{held} bytes ({} batches) of {}/{} are held back waiting for {txn} to commit or \
             abort, more than the {} allowed (half of engine.in_flight_memory); raise \
             engine.in_flight_memory or end the transaction",
            planner.held_batches(),
            spec.source_topic,
            spec.partition,
            spec.max_held_bytes
        )
    } else if let Some(why) = share.take_eviction() {
        why
    } else {
        match spec.budget.check_held(share) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        }
    };
    // `--once` stops at the end seen at start: it does not read ahead for markers.
    if spec.until.is_none() && planner.spill() {
        tracing::warn!(flow = %spec.flow, topic = %spec.source_topic, partition = spec.partition,
            "{err}: dropping the held batches and reading ahead for the markers; the \
             partition re-reads them once decided");
        share.set_held(0, None);
        feed.metrics.held(0);
        if spec.budget.held() <= spec.budget.held_limit() {
            feed.metrics.held_alarm(None);
        }
        return Ok(());
    }
    Err(MirrorError::other(err))
}

fn mark_done(progress: &Progress) {
    if !progress.done.swap(true, Ordering::AcqRel) {
        progress.notify.notify_waiters();
    }
}

fn append(m: &mut MapWriter, written: &Written, target_base: u64) -> Result<(), MirrorError> {
    match written {
        Written::Dense {
            source_first,
            count,
        } => m.append_dense(*source_first, *count, target_base),
        Written::Listed(offsets) => m.append_listed(offsets, target_base),
        Written::Runs(_) => m.update(|m| written.append_to(m, target_base)),
    }
    .map_err(MirrorError::offset_map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planner_starts_where_the_feed_started_not_where_the_fetcher_moved_it() {
        // The feed goes to a fetcher before the pipeline task first runs: the fetcher can
        // deliver 100..125 and move the cursor to 125 first. Planning from the cursor
        // would drop that record set as "before the position": a silent gap.
        let (tx, _rx) = mpsc::channel(4);
        let metrics = crate::metrics::Metrics::new().partition("f", "t", 0);
        let feed = PartitionFeed::new("t", 0, 100, tx, metrics);
        feed.with_cursor(|c| c.position = 125);
        assert_eq!(feed.start_position(), 100);
    }

    #[test]
    fn an_ack_without_an_offset_lands_where_the_map_expects_it() {
        // Tansu's DUPLICATE_SEQUENCE_NUMBER answer to a re-sent batch: base offset −1.
        assert_eq!(ack_base(-1, 42), AckBase::At(42));
        assert_eq!(ack_base(i64::MIN, 0), AckBase::At(0));
    }

    #[test]
    fn an_ack_at_the_expected_offset_is_recorded_there() {
        assert_eq!(ack_base(0, 0), AckBase::At(0));
        assert_eq!(ack_base(42, 42), AckBase::At(42));
    }

    #[test]
    fn an_ack_elsewhere_is_a_mismatch_never_offset_zero() {
        // Someone else wrote the partition: our batch landed further on.
        assert_eq!(
            ack_base(50, 42),
            AckBase::Mismatch {
                acked: 50,
                expected: 42
            }
        );
        // The partition was reset: our batch landed at its start.
        assert_eq!(
            ack_base(0, 42),
            AckBase::Mismatch {
                acked: 0,
                expected: 42
            }
        );
    }
}
