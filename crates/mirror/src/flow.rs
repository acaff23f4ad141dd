//! One flow: connect, load state, sync topics, run the data path for every replicated
//! partition, and periodically refresh topics, sync groups, write state and emit
//! heartbeats (each its own task: `control.rs`). Stops gracefully (in-flight
//! batches acknowledged, state written) when told to, or after `--once` reached the ends
//! seen at start.
//!
//! The flow's loop supervises its partitions (`supervise`): a failed partition is
//! restarted in-process from its recovered state after a backoff ([`crate::supervisor`]),
//! a partition whose source topic was deleted is stopped and forgotten, and only an error
//! that [`MirrorError::stops_flow`] stops the flow. In exactly-once mode
//! (`exactly_once`) a failed partition abandons the open transaction and the whole flow
//! restarts from its last commit instead.

mod exactly_once;
mod recreation;
mod scale_out;
mod slots;
mod sole_writer;
mod stop;
mod supervise;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use strait_client::{Client, FetchOptions, IdempotentProducer, IsolationLevel};
use strait_offsets::{MapWriter, OffsetMap, Registry, Side};
use strait_records::Limits;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::acls::AclSync;
use crate::config::model::StartPosition;
use crate::config::{Config, Flow};
use crate::connect::connect;
use crate::control::{Control, Jobs, LeadJobs};
use crate::datapath::budget::Budget;
use crate::datapath::fetcher::{PartitionFeed, Recreation, Router};
use crate::datapath::partition::{self, PartitionSpec, Progress, SharedMap, TopicSpec};
use crate::datapath::probe::{Bounds, bounds};
use crate::datapath::recovery::Recovery;
use crate::datapath::sink::Sink;
use crate::error::MirrorError;
use crate::groups::{GroupSync, ReverseSync};
use crate::heartbeat::Heartbeats;
use crate::incident::{Incident, Noticed, Policies};
use crate::metrics::{FlowState, Metrics, PartitionMetrics};
use crate::state::{self, PartitionState, SavedState, StateWriter};
use crate::supervisor::Restarts;
use crate::topics::{ReplicatedTopic, TopicSync};

/// Record sets a fetcher may queue per partition ahead of its pipeline.
const FEED_DEPTH: usize = 4;

/// Target offsets `from..end` that recovery reads back and checks.
type TargetRange = (i64, i64);

/// A partition: (source topic, partition).
type Key = (String, i32);

/// A partition pipeline not yet spawned: it starts once the partition's birth state is
/// written.
type Pipeline = (
    Key,
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), MirrorError>> + Send>>,
);

/// What a flow did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowSummary {
    /// Flow name.
    pub flow: String,
    /// Source topics replicated.
    pub topics: usize,
    /// Partitions replicated.
    pub partitions: usize,
    /// Records acknowledged by the target.
    pub records: u64,
    /// Bytes acknowledged by the target.
    pub bytes: u64,
    /// Groups translated by the last group sync.
    pub groups_translated: usize,
    /// Produce requests the data path's producer sent.
    pub produce_requests: u64,
    /// Batch transmissions of the data path's producer (after coalescing; a retried
    /// batch counts once per attempt).
    pub produced_batches: u64,
    /// Heap bytes of the partitions' offset maps at the end
    /// ([`strait_offsets::MapWriter::heap_bytes`], summed).
    pub offset_map_bytes: u64,
}

#[derive(Clone)]
struct Running {
    /// The source topic's id as the flow knows it now (re-creations are detected
    /// against it).
    topic_id: Uuid,
    /// The id saved with the map: the one the map belongs to. After a re-creation the
    /// new id is saved only once the pipeline restarted the map (`pending_id`: the new
    /// id and the pipeline's re-creation count when it was told), so a crash in between
    /// never saves the old map under the new id.
    map_id: Uuid,
    pending_id: Option<(Uuid, u64)>,
    /// Its feed ([`PartitionFeed::stop`] stops its pipeline gracefully).
    feed: Arc<PartitionFeed>,
    target_topic: String,
    map: SharedMap,
    progress: Arc<Progress>,
}

impl Running {
    /// The partition's metrics (kept by its feed; one copy per partition).
    fn metrics(&self) -> &PartitionMetrics {
        &self.feed.metrics
    }

    /// The partition's state to save: its map with the id the map belongs to. The
    /// re-creation count is read under the map's lock, where the pipeline publishes it,
    /// so the two always agree.
    fn state(&self) -> PartitionState {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let recreated = self.progress.recreated.load(Ordering::Acquire);
        PartitionState {
            topic_id: saved_topic_id(self.map_id, self.pending_id, recreated),
            target_topic: self.target_topic.clone(),
            snapshot: map.snapshot().bytes,
        }
    }

    /// Exactly-once: the map's updates since the last checkpoint (a whole snapshot when
    /// `snapshot`, or when its journal overflowed), with the topic id it belongs to and
    /// the re-creation count, read under one lock; `None` when nothing changed.
    fn checkpoint(&self, snapshot: bool) -> Option<(strait_offsets::Checkpoint, Uuid, u64)> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let recreated = self.progress.recreated.load(Ordering::Acquire);
        let c = if snapshot {
            map.snapshot()
        } else {
            map.take_checkpoint()?
        };
        Some((
            c,
            saved_topic_id(self.map_id, self.pending_id, recreated),
            recreated,
        ))
    }
}

/// The topic id to save with a map: `pending`'s id once the pipeline's re-creation
/// count passed the one it had when told of the re-creation, else the map's own.
fn saved_topic_id(map_id: Uuid, pending: Option<(Uuid, u64)>, recreated: u64) -> Uuid {
    match pending {
        Some((id, seen)) if recreated > seen => id,
        _ => map_id,
    }
}

/// The flow's moving parts.
struct FlowRun {
    flow: Flow,
    source: Client,
    target: Client,
    metrics: Metrics,
    registry: Arc<Registry>,
    producer: Sink,
    /// Exactly-once: the transactional producer, the commit barrier, the committed maps.
    eos: Option<exactly_once::Eos>,
    router: Arc<Router>,
    /// The router's reports of source topics found under a new id.
    recreations: mpsc::UnboundedReceiver<Recreation>,
    /// The ids source topics were re-created away from.
    retired: recreation::Retired,
    fetch_stop: watch::Sender<bool>,
    /// Running pipelines; each ends with its partition and result. The error is boxed: a
    /// task's cell holds its future or its output, and an unboxed 72-byte error made the
    /// output the larger, one more 128-byte step of every partition's task cell.
    tasks: JoinSet<(Key, Result<(), Box<MirrorError>>)>,
    /// Every partition replicated (also those waiting for a restart), with its map.
    running: BTreeMap<Key, Running>,
    /// The topics of the last refresh, by source name.
    topics: BTreeMap<String, ReplicatedTopic>,
    /// Per partition, its restart sequence.
    restarts: BTreeMap<Key, Restarts>,
    /// Partitions whose pipeline is down, waiting for a restart.
    down: BTreeSet<Key>,
    /// Restart timers: each ends with the partition due.
    due: JoinSet<Key>,
    /// Partitions of deleted source topics, stopping.
    deleting: BTreeSet<Key>,
    /// `--once`: the source end seen at a partition's first start (a restart keeps it).
    once_ends: BTreeMap<Key, i64>,
    /// Partitions that were down when their source topic's id changed: the id their map
    /// belongs to, so their restart goes through the topic re-creation check.
    stale_ids: BTreeMap<Key, Uuid>,
    state_writer: StateWriter,
    saved: SavedState,
    once: bool,
    /// Per partition, bytes that may be held back for open transactions.
    max_held_bytes: usize,
    /// The in-flight budget (coalesced batches reserve from it).
    budget: Budget,
    /// Data-path settings handed to each partition pipeline.
    engine: crate::config::Engine,
    /// How long a stop waits for in-flight acknowledgements, and then for the final state
    /// write: the target's request timeout each.
    stop_grace: Duration,
    /// Scale-out: this process's membership in the flow's group (`None`: one process).
    scale: Option<scale_out::Scale>,
    /// Exactly-once scale-out: the one slot this run replicates (`None`: every partition).
    slot: Option<slots::Slot>,
}

/// Runs `flow` until `stop` turns true (or, with `once`, until caught up with the ends
/// seen at start). Returns what it did; an error stops the flow (health turns 503).
pub async fn run_flow(
    flow: Flow,
    config: Config,
    metrics: Metrics,
    budget: Budget,
    once: bool,
    stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    metrics.set_flow_state(&flow.name, FlowState::Starting);
    let result = match flow.scale_out {
        Some(_) => run_mode(&flow, &config, &metrics, budget, once, stop, None).await,
        None => run_sole_writer(&flow, &config, &metrics, budget, once, stop).await,
    };
    match &result {
        Ok(_) => metrics.set_flow_state(&flow.name, FlowState::Stopped),
        Err(e) => metrics.set_flow_state(&flow.name, FlowState::Failed(e.to_string())),
    }
    result
}

/// A flow without `[flows.scale_out]`: holds the flow's sole-writer guard
/// ([`sole_writer`]) while it runs, so that a second process of it is refused.
async fn run_sole_writer(
    flow: &Flow,
    config: &Config,
    metrics: &Metrics,
    budget: Budget,
    once: bool,
    mut stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    let target = config
        .cluster(&flow.target)
        .ok_or_else(|| MirrorError::other("unknown target cluster").flow(&flow.name))?;
    let (lost_tx, mut lost) = watch::channel(false);
    let Some(guard) = sole_writer::take(flow, target, &mut stop, lost_tx).await? else {
        return Ok(FlowSummary::default());
    };
    // The flow stops when asked, or when another process was given the flow.
    let (inner_tx, inner_stop) = watch::channel(false);
    let forward = tokio::spawn(async move {
        tokio::select! {
            () = until_true(&mut stop) => {}
            () = until_true(&mut lost) => {}
        }
        let _ = inner_tx.send(true);
    });
    let result = run_mode(
        flow,
        config,
        metrics,
        budget,
        once,
        inner_stop,
        Some(&guard),
    )
    .await;
    forward.abort();
    let lost = guard.lost();
    guard.release().await;
    match lost {
        Some(why) if result.is_ok() => Err(MirrorError::other(why).flow(&flow.name)),
        _ => result,
    }
}

/// The flow's state topic as its runs read it: each start of the flow (an exactly-once
/// restart, a slot taken over) reads on from where the previous one left off.
pub(super) type SharedState = Arc<tokio::sync::Mutex<state::StateTail>>;

fn shared_state(flow: &Flow) -> SharedState {
    Arc::new(tokio::sync::Mutex::new(state::StateTail::new(flow)))
}

/// Runs `flow` in its delivery mode.
async fn run_mode(
    flow: &Flow,
    config: &Config,
    metrics: &Metrics,
    budget: Budget,
    once: bool,
    stop: watch::Receiver<bool>,
    guard: Option<&sole_writer::Guard>,
) -> Result<FlowSummary, MirrorError> {
    let state = shared_state(flow);
    if flow.delivery.exactly_once() && flow.scale_out.is_some() {
        slots::run_slotted(flow, config, metrics, &budget, once, stop, &state).await
    } else if flow.delivery.exactly_once() {
        exactly_once::run_restarting(flow, metrics, once, stop, guard, |stop| {
            run_inner(
                flow,
                config,
                metrics.clone(),
                budget.clone(),
                once,
                stop,
                None,
                &state,
            )
        })
        .await
    } else {
        run_inner(
            flow,
            config,
            metrics.clone(),
            budget,
            once,
            stop,
            None,
            &state,
        )
        .await
    }
}

#[allow(clippy::too_many_arguments)] // Until the modes own their state (issue 30).
async fn run_inner(
    flow: &Flow,
    config: &Config,
    metrics: Metrics,
    budget: Budget,
    once: bool,
    mut stop: watch::Receiver<bool>,
    slot: Option<slots::Slot>,
    state: &SharedState,
) -> Result<FlowSummary, MirrorError> {
    let cluster = |name: &str| {
        config
            .cluster(name)
            .ok_or_else(|| MirrorError::other(format!("unknown cluster {name}")).flow(&flow.name))
    };
    let (source, target) = tokio::try_join!(
        connect(cluster(&flow.source)?, &flow.name),
        connect(cluster(&flow.target)?, &flow.name)
    )?;
    let producer_config = config.engine.producer_config(cluster(&flow.target)?);
    // Exactly-once: fencing comes first, so that the state read next is final.
    let mut eos = match flow.delivery.exactly_once() {
        true => Some(exactly_once::start_producer(&target, flow, producer_config).await?),
        false => None,
    };
    let producer = match &eos {
        Some(e) => Sink::Transactional(e.producer.clone()),
        None => Sink::Idempotent(
            IdempotentProducer::new(target.clone(), producer_config)
                .await
                .map_err(|e| {
                    MirrorError::kafka("InitProducerId", e)
                        .flow(&flow.name)
                        .cluster(&flow.target)
                })?,
        ),
    };
    state::ensure_state_topic(&target, flow).await?;
    // Read on from where this flow's (or this slot's member's) last start left off.
    let (saved, deltas) = state.lock().await.read(&target, flow).await?;
    if let Some(e) = &mut eos {
        e.deltas = deltas;
    }
    tracing::info!(flow = %flow.name, partitions = saved.len(),
        guarantee = flow.delivery.guarantee.as_str(), "state loaded");
    let mut state_writer =
        StateWriter::new(target.clone(), flow).with_producer_config(producer_config);
    if let Some(e) = &eos {
        state_writer = state_writer.in_transactions(e.producer.clone());
    }
    let (fetch_stop, fetch_stop_rx) = watch::channel(false);
    let opts = FetchOptions {
        max_wait: config.engine.fetch_max_wait.max(Duration::from_millis(5)),
        min_bytes: 1,
        max_bytes: config.engine.fetch_max_bytes,
        isolation: IsolationLevel::ReadCommitted,
    };
    let max_held_bytes = usize::try_from(budget.total() / 2).unwrap_or(usize::MAX);
    let (recreated, recreations) = mpsc::unbounded_channel();
    let router = Router::new(
        source.clone(),
        &flow.name,
        &flow.source,
        opts,
        config.engine.fetch_partition_max_bytes,
        budget.clone(),
        Limits::default(),
        fetch_stop_rx,
        recreated,
        metrics.fetch_wait_handle(&flow.name),
    );
    let registry = Arc::new(Registry::new());
    let mut run = FlowRun {
        flow: flow.clone(),
        state_writer,
        source: source.clone(),
        target: target.clone(),
        metrics: metrics.clone(),
        registry: Arc::clone(&registry),
        producer,
        eos,
        router,
        recreations,
        retired: recreation::Retired::default(),
        fetch_stop,
        tasks: JoinSet::new(),
        running: BTreeMap::new(),
        topics: BTreeMap::new(),
        restarts: BTreeMap::new(),
        down: BTreeSet::new(),
        due: JoinSet::new(),
        deleting: BTreeSet::new(),
        once_ends: BTreeMap::new(),
        stale_ids: BTreeMap::new(),
        saved,
        once,
        max_held_bytes,
        budget,
        engine: config.engine,
        stop_grace: cluster(&flow.target)?.request_timeout,
        scale: None,
        slot,
    };
    let mut topic_sync = TopicSync::new(flow, source.clone(), target.clone(), metrics.clone());
    // An exactly-once slot: its first refresh creates missing target topics (as every
    // scale-out process does at start), later ones only discover; the control owner
    // creates and re-configures topics from then on.
    let slot_writes = Arc::new(std::sync::atomic::AtomicBool::new(true));
    if slot.is_some() {
        topic_sync = topic_sync.with_writes(Arc::clone(&slot_writes));
    } else if let Some(so) = &flow.scale_out {
        if once {
            return Err(MirrorError::config(
                "--once replicates a flow in one process: it cannot be combined with \
                 [flows.scale_out]",
            )
            .flow(&flow.name));
        }
        let scale = scale_out::Scale::join(flow, so, cluster(&flow.target)?).await?;
        // The first refresh creates missing target topics (several processes starting at
        // once are harmless: one creation wins); later ones only on the control owner.
        scale.writes.store(true, Ordering::Release);
        topic_sync = topic_sync.with_writes(Arc::clone(&scale.writes));
        let writer = std::mem::replace(
            &mut run.state_writer,
            StateWriter::new(target.clone(), flow),
        );
        run.state_writer = writer.with_generation(Arc::clone(&scale.stamp));
        run.scale = Some(scale);
    }
    let mut group_sync = GroupSync::new(
        flow,
        source.clone(),
        target.clone(),
        Arc::clone(&registry),
        metrics.clone(),
    );
    let heartbeats = Heartbeats::new(flow, target.clone()).with_metrics(metrics.clone());

    let started = Instant::now();
    let result: Result<usize, MirrorError> = async {
        // A stop during the start is answered too (a cluster may be stalled).
        let Some(topics) = interruptible(&mut stop, topic_sync.refresh()).await else {
            return Ok(0);
        };
        let topics = topics.map_err(|e| e.flow(&flow.name))?;
        slot_writes.store(false, Ordering::Release);
        if let Some(scale) = &mut run.scale {
            scale.writes.store(false, Ordering::Release);
            scale.set_partitions(&all_partitions(&topics));
            if !scale.first_assignment(&flow.name, &mut stop).await? {
                return Ok(0);
            }
        }
        let Some(started) = interruptible(&mut stop, run.start_topics(&topics)).await else {
            return Ok(0);
        };
        started?;
        metrics.set_flow_state(&flow.name, FlowState::Running);
        tracing::info!(flow = %flow.name, topics = topics.len(), partitions = run.running.len(),
            "replicating");
        if once {
            run.supervise(&mut stop, None).await?;
            // Exactly-once: the group sync below translates against committed maps.
            run.commit().await?;
            let report = group_sync.sync_once().await;
            return Ok(report.map(|r| r.groups_translated).unwrap_or_else(|e| {
                tracing::warn!(flow = %flow.name, error = %e, "group sync failed");
                0
            }));
        }
        let provenance = group_sync.provenance();
        let jobs = Jobs {
            topics: topic_sync,
            lead: slot.is_none().then(|| LeadJobs {
                groups: group_sync,
                reverse: ReverseSync::new(
                    flow,
                    source.clone(),
                    target.clone(),
                    Arc::clone(&registry),
                    provenance,
                ),
                heartbeats,
                acls: AclSync::new(flow, source.clone(), target.clone()),
                maps_from_state: None,
            }),
            state: match &run.scale {
                Some(s) => StateWriter::new(target.clone(), flow)
                    .with_producer_config(producer_config)
                    .with_generation(Arc::clone(&s.stamp)),
                None => {
                    StateWriter::new(target.clone(), flow).with_producer_config(producer_config)
                }
            },
        };
        let mut control = Control::start(flow, jobs, metrics.clone());
        let supervised = run.supervise(&mut stop, Some(&mut control)).await;
        control.stop().await;
        supervised.map(|()| control.translated.load(Ordering::Relaxed))
    }
    .await;
    if let Err(e) = &result {
        // Nothing more is written once the flow fails: a batch renumbered under a new
        // epoch after a failed one could duplicate a request whose fate is unknown.
        run.producer.abort(&e.to_string());
    }
    let result = match (result, &run.eos) {
        (Err(e), Some(eos)) => {
            // Exactly-once: the open transaction is abandoned (its drivers stop), and the
            // flow must not start again if it was fenced.
            eos.gate.fail();
            let producer = eos.producer.clone();
            // The root cause: an error that stops the flow, whichever partition saw it
            // (the others fail only because the transaction did).
            let e = match run.shutdown().await {
                Err(s) if s.stops_flow() && !e.stops_flow() => s,
                _ => e,
            };
            let stopping = *stop.borrow();
            match exactly_once::after_failure(e.stops_flow(), stopping) {
                exactly_once::AfterFailure::Abandon => return Err(e.flow(&flow.name)),
                exactly_once::AfterFailure::AbortAndStop => {
                    exactly_once::abort_before_stopping(&producer, flow, run.stop_grace).await;
                    return Err(e.flow(&flow.name));
                }
                exactly_once::AfterFailure::ProbeAndRestart => {}
            }
            return Err(
                match exactly_once::ownership(&producer, flow, &mut stop).await {
                    exactly_once::Ownership::Fenced(f) => f,
                    _ => e,
                }
                .flow(&flow.name),
            );
        }
        (r, _) => r,
    };
    // Graceful stop (also after an error, to save what was acknowledged).
    let stopped = run.shutdown().await;
    if let Some(scale) = &mut run.scale {
        scale.retract(&mut run.state_writer, run.stop_grace).await;
        scale.leave().await;
    }
    if slot.is_some() {
        // An exactly-once slot leaving this process: its partitions' series go with it.
        for (topic, p) in run.running.keys() {
            metrics.remove_partition(&flow.name, topic, *p);
        }
    }
    let groups_translated = result.map_err(|e: MirrorError| e.flow(&flow.name))?;
    stopped?;
    let summary = run.summary(groups_translated);
    tracing::info!(flow = %flow.name, records = summary.records, bytes = summary.bytes,
        elapsed = ?started.elapsed(), "flow stopped");
    Ok(summary)
}

/// Every partition of `topics`.
fn all_partitions(topics: &[ReplicatedTopic]) -> BTreeSet<Key> {
    topics
        .iter()
        .flat_map(|t| (0..t.partitions).map(|p| (t.source_topic.clone(), p)))
        .collect()
}

/// Runs `job` unless `stop` turns true first (then `None`).
async fn interruptible<T>(
    stop: &mut watch::Receiver<bool>,
    job: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        r = job => Some(r),
        _ = until_true(stop) => None,
    }
}

/// Resolves once `flag` is true (or its sender is gone). Unlike `changed`, it also sees a
/// change an earlier wait already marked seen.
async fn until_true(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|v| *v).await;
}

/// A pipeline task's partition and result; a task that panicked or was cancelled is an
/// error of the flow.
fn flatten(
    r: Result<(Key, Result<(), Box<MirrorError>>), tokio::task::JoinError>,
) -> Result<(Key, Result<(), MirrorError>), MirrorError> {
    r.map(|(key, result)| (key, result.map_err(|e| *e)))
        .map_err(|e| MirrorError::other(format!("partition task failed: {e}")))
}

impl FlowRun {
    /// Starts the partitions of `topics` that are not running yet. On an error none of
    /// them runs (a later refresh starts them again).
    async fn start_topics(&mut self, topics: &[ReplicatedTopic]) -> Result<(), MirrorError> {
        let mut births = Vec::new();
        let mut pipelines = Vec::new();
        let mut result = self
            .start_topics_into(topics, &mut births, &mut pipelines)
            .await;
        if result.is_ok() {
            // New and reset partitions are saved before their pipelines start (nothing is
            // produced before), so a crash before the first checkpoint can still tell our
            // records from older ones.
            result = self.state_writer.write(&births).await;
        }
        if let Err(e) = result {
            let keys: Vec<Key> = pipelines.into_iter().map(|(k, _)| k).collect();
            self.forget(&keys);
            return Err(e);
        }
        self.metrics
            .state_records_written(&self.flow.name, births.len() as u64);
        self.spawn(pipelines);
        if self.eos.is_some() && !births.is_empty() {
            // Exactly-once: a new partition's start is durable once committed (a crash
            // before would start it again elsewhere: `latest`, a timestamp).
            self.commit().await?;
        }
        Ok(())
    }

    async fn start_topics_into(
        &mut self,
        topics: &[ReplicatedTopic],
        births: &mut Vec<(Key, PartitionState)>,
        pipelines: &mut Vec<Pipeline>,
    ) -> Result<(), MirrorError> {
        for t in topics {
            let mut t = t.clone();
            t.topic_id = self.refreshed_id(&t.source_topic, t.topic_id);
            let t = &t;
            self.topics.insert(t.source_topic.clone(), t.clone());
            let new: Vec<i32> = (0..t.partitions)
                .map(|p| (t.source_topic.clone(), p))
                .filter(|k| !self.running.contains_key(k) && self.may_start(k))
                .map(|(_, p)| p)
                .collect();
            // The partitions running already: a re-created topic (`recreation`).
            self.apply_topic_id(&t.source_topic, t.topic_id).await?;
            if new.is_empty() {
                continue;
            }
            let (b, p) = self.start_partitions(t, &new).await?;
            births.extend(b);
            pipelines.extend(p);
        }
        Ok(())
    }

    /// Spawns started pipelines. A partition's restart sequence is created at its first
    /// failure ([`FlowRun::on_failed`]), not here: one that never failed needs none, and a
    /// new sequence then is the same as one that ran healthy (a fresh backoff, the first
    /// attempt), so 10,000 healthy partitions do not keep 10,000 of them.
    fn spawn(&mut self, pipelines: Vec<Pipeline>) {
        for (key, pipeline) in pipelines {
            self.tasks
                .spawn(async move { (key, pipeline.await.map_err(Box::new)) });
        }
    }

    /// Forgets partitions that were started but do not run: their feeds stop, their maps
    /// leave the registry.
    fn forget(&mut self, keys: &[Key]) {
        for key in keys {
            if let Some(r) = self.running.remove(key) {
                r.feed.with_cursor(|c| c.stopped = true);
            }
            if let Some(eos) = &mut self.eos {
                eos.committed.remove(key);
            }
            self.registry.remove(&key.0, key.1);
        }
    }

    async fn start_partitions(
        &mut self,
        t: &ReplicatedTopic,
        partitions: &[i32],
    ) -> Result<(Vec<(Key, PartitionState)>, Vec<Pipeline>), MirrorError> {
        let flow = &self.flow;
        let mut pipelines: Vec<Pipeline> = Vec::new();
        let src = bounds(
            &self.source,
            &t.source_topic,
            partitions,
            IsolationLevel::ReadCommitted,
        )
        .await
        .map_err(|e| {
            MirrorError::kafka("partition bounds", e)
                .cluster(&flow.source)
                .topic(&t.source_topic)
        })?;
        let dst = bounds(
            &self.target,
            &t.target_topic,
            partitions,
            IsolationLevel::ReadUncommitted,
        )
        .await
        .map_err(|e| {
            MirrorError::kafka("partition bounds", e)
                .cluster(&flow.target)
                .topic(&t.target_topic)
        })?;
        let max_batch_bytes =
            crate::datapath::probe::max_message_bytes(&self.target, &t.target_topic).await;
        let by_time = self.offsets_by_time(t, &src).await?;
        let mut births = Vec::new();
        // Shared by the topic's partitions (10,000 partitions: one copy, not one each).
        let shared = Arc::new(TopicSpec {
            flow: Arc::from(flow.name.as_str()),
            source_cluster: Arc::from(flow.source.as_str()),
            source_topic: Arc::from(t.source_topic.as_str()),
            target_topic: Arc::from(t.target_topic.as_str()),
            max_batch_bytes,
            policies: Policies::of(flow),
            max_held_bytes: self.max_held_bytes,
            max_in_flight: self.engine.max_in_flight(),
            coalesce_max_bytes: self.engine.coalesce_max_bytes,
            recompress: self.engine.recompress,
            budget: self.budget.clone(),
            tail_chunk_bytes: crate::datapath::tail::chunk_bytes(
                self.engine.fetch_partition_max_bytes,
                self.budget.total(),
            ),
            gate: self.eos.as_ref().map(|e| Arc::clone(&e.gate)),
        });
        for &p in partitions {
            let key = (t.source_topic.clone(), p);
            let (Some(s), Some(d)) = (src.get(&p), dst.get(&p)) else {
                continue;
            };
            let (map, tail, birth) = self.initial_map(t, p, *s, *d, by_time.get(&p).copied())?;
            // Exactly-once: past the committed map the target holds only our markers and
            // aborted batches (invisible to read_committed consumers); nothing to read back.
            let start_gap = match (&self.eos, tail) {
                (Some(_), Some((from, end))) => u64::try_from(end - from).unwrap_or(0),
                _ => 0,
            };
            let tail = if self.eos.is_some() {
                if let Some((from, end)) = tail {
                    tracing::info!(flow = %flow.name, topic = %t.target_topic, partition = p,
                        offsets = end - from, "exactly-once: the target offsets past the last \
                        commit hold aborted data and markers of an earlier run; replication \
                        resumes after them");
                }
                None
            } else {
                tail
            };
            // Read chunk by chunk as the pipeline's steps need it, within the budget
            // (datapath::partition): only the target's bounds are read here.
            let recovery = match tail {
                None => Recovery::none(),
                Some((from, end)) => Recovery::tail(
                    u64::try_from((from - crate::datapath::tail::LOOKBACK).max(d.log_start))
                        .unwrap_or(0),
                    u64::try_from(from).unwrap_or(0),
                    u64::try_from(end).unwrap_or(0),
                    Limits::default(),
                ),
            };
            let map_for_state = if birth {
                let mut m = map;
                let snapshot = m.snapshot().bytes;
                births.push((
                    key.clone(),
                    PartitionState {
                        topic_id: t.topic_id,
                        target_topic: t.target_topic.clone(),
                        snapshot,
                    },
                ));
                m
            } else {
                map
            };
            let position = map_for_state.next(Side::Source) as i64;
            // Re-register after a restart of the partition (not today: topics only grow).
            self.registry.remove(&t.source_topic, p);
            let writer = match &mut self.eos {
                // The registry gets the committed copy; the pipeline writes its own.
                Some(eos) => {
                    let committed = self
                        .registry
                        .register(&t.source_topic, p, map_for_state.clone())
                        .map_err(|e| MirrorError::state(e.to_string()))?;
                    eos.committed.insert(key.clone(), committed);
                    eos.snapshot_due.insert(key.clone());
                    eos.recreated.remove(&key);
                    MapWriter::new(map_for_state)
                }
                None => self
                    .registry
                    .register(&t.source_topic, p, map_for_state)
                    .map_err(|e| MirrorError::state(e.to_string()))?,
            };
            let map: SharedMap = Arc::new(Mutex::new(writer));
            let progress = Arc::new(Progress::default());
            progress.end.store(s.end, Ordering::Relaxed);
            let pm = self.metrics.partition(&flow.name, &t.source_topic, p);
            let feed = PartitionFeed::new(
                Arc::clone(&shared.source_topic),
                p,
                position,
                FEED_DEPTH,
                pm,
            );
            // Fetched by the id of the topic the map belongs to: a re-created topic is
            // refused, never read at this position.
            feed.set_topic_id(t.topic_id);
            let spec = PartitionSpec {
                shared: Arc::clone(&shared),
                partition: p,
                until: self
                    .once
                    .then(|| *self.once_ends.entry(key.clone()).or_insert(s.end)),
                start_gap,
            };
            if recovery.remaining() > 0 {
                tracing::info!(flow = %flow.name, topic = %t.source_topic, partition = p,
                    records = recovery.remaining(),
                    "recovery: records on the target past the last state write will be \
                     matched to the source by content before anything is produced");
            }
            self.router.assign(Arc::clone(&feed));
            let feed_for_pipeline = Arc::clone(&feed);
            let pipeline = partition::run(
                spec,
                feed_for_pipeline,
                Arc::clone(&map),
                Arc::clone(&progress),
                self.producer.clone(),
                self.source.clone(),
                self.target.clone(),
                recovery,
            );
            // Spawned once the partition's birth state is written (`start_topics`).
            pipelines.push((key.clone(), Box::pin(pipeline)));
            self.running.insert(
                key,
                Running {
                    topic_id: t.topic_id,
                    map_id: t.topic_id,
                    pending_id: None,
                    target_topic: t.target_topic.clone(),
                    map,
                    progress,
                    feed,
                },
            );
        }
        Ok((births, pipelines))
    }

    /// With `topics.start_position` a timestamp: per partition not started before, the
    /// first source offset whose timestamp is at or after it (none when no record is that
    /// recent) — the broker's ListOffsets by timestamp, checked against the record it
    /// points at, else a search of the log ([`crate::replay::lookup`], shared with
    /// `strait replay`). Empty otherwise.
    async fn offsets_by_time(
        &self,
        t: &ReplicatedTopic,
        src: &BTreeMap<i32, Bounds>,
    ) -> Result<BTreeMap<i32, i64>, MirrorError> {
        let StartPosition::Timestamp(ms) = self.flow.start_position else {
            return Ok(BTreeMap::new());
        };
        let new: BTreeMap<i32, Bounds> = src
            .iter()
            .filter(|(p, _)| !self.saved.contains_key(&(t.source_topic.clone(), **p)))
            .map(|(p, b)| (*p, *b))
            .collect();
        if new.is_empty() {
            return Ok(BTreeMap::new());
        }
        let found =
            crate::replay::lookup::offsets_for_time(&self.source, &t.source_topic, &new, ms)
                .await
                .map_err(|e| e.flow(&self.flow.name).cluster(&self.flow.source))?;
        Ok(found
            .into_iter()
            .filter_map(|(p, f)| match f.offset {
                crate::replay::decide::TimeOffset::At(o) => Some((p, o)),
                crate::replay::decide::TimeOffset::None => None,
            })
            .collect())
    }

    /// The map a partition starts with, the target range recovery must check (records past
    /// the last state write: `map.next(Target)..end`), and whether the state must be
    /// written before producing (new or reset partitions). `by_time`: where a timestamp
    /// start position puts a new partition.
    fn initial_map(
        &self,
        t: &ReplicatedTopic,
        p: i32,
        src: Bounds,
        dst: Bounds,
        by_time: Option<i64>,
    ) -> Result<(OffsetMap, Option<TargetRange>, bool), MirrorError> {
        let flow = &self.flow;
        let ctx = |e: MirrorError| e.topic(&t.source_topic).partition(p);
        let fresh = |source_start: i64| -> Result<OffsetMap, MirrorError> {
            // Recorded as where replication started: positions before it (a group behind
            // a `latest` start, target records that were there before) never translate
            // as exact.
            let mut m = OffsetMap::new();
            m.start_at(source_start.max(0) as u64, dst.end.max(0) as u64)
                .map_err(|e| ctx(MirrorError::offset_map(e)))?;
            Ok(m)
        };
        let start = match flow.start_position {
            StartPosition::Earliest => src.log_start,
            StartPosition::Latest => src.end,
            // No record that recent: everything from now on.
            StartPosition::Timestamp(_) => by_time.unwrap_or(src.end).clamp(src.log_start, src.end),
        };
        let Some(saved) = self.saved.get(&(t.source_topic.clone(), p)) else {
            return Ok((fresh(start)?, None, true));
        };
        if saved.target_topic != t.target_topic {
            tracing::warn!(flow = %flow.name, topic = %t.source_topic, partition = p,
                old = %saved.target_topic, new = %t.target_topic,
                "the target topic name changed (naming policy?); starting a new map");
            return Ok((fresh(start)?, None, true));
        }
        let mut map = state::decode_map(saved).map_err(ctx)?;
        let policies = Policies::of(flow);
        let count = |kind| self.metrics.incident(&flow.name, &t.source_topic, p, kind);
        if !saved.topic_id.is_nil() && !t.topic_id.is_nil() && saved.topic_id != t.topic_id {
            let incident = Incident::topic_recreated(
                saved.topic_id,
                t.topic_id,
                Noticed::SinceLastRun {
                    log_start: src.log_start,
                },
            );
            count(incident.kind());
            let skipped = incident.decide(&policies).into_result().map_err(ctx)?;
            tracing::error!(flow = %flow.name, topic = %t.source_topic, partition = p, "{skipped}");
            let target_next = map.next(Side::Target).max(dst.end.max(0) as u64);
            map.source_recreated(src.log_start.max(0) as u64, target_next)
                .map_err(|e| ctx(MirrorError::offset_map(e)))?;
            return Ok((map, None, true));
        }
        let written = map.next(Side::Target) as i64;
        match dst.end - written {
            0 => Ok((map, None, false)),
            d if d > 0 => Ok((map, Some((written, dst.end)), false)),
            _ => {
                let incident =
                    Incident::target_shorter(&t.target_topic, dst.end, map.next(Side::Target));
                count(incident.kind());
                let skipped = incident.decide(&policies).into_result().map_err(ctx)?;
                tracing::error!(flow = %flow.name, topic = %t.source_topic, partition = p, "{skipped}");
                let resume = map.next(Side::Source);
                map.target_recreated(dst.end.max(0) as u64, resume)
                    .map_err(|e| ctx(MirrorError::offset_map(e)))?;
                Ok((map, None, true))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: Uuid = Uuid::from_bytes([1; 16]);
    const NEW: Uuid = Uuid::from_bytes([2; 16]);

    #[test]
    fn a_new_topic_id_is_saved_only_with_a_map_restarted_for_it() {
        assert_eq!(saved_topic_id(OLD, None, 7), OLD);
        // Told at count 3: until the pipeline applied the restart, the old map's id.
        assert_eq!(saved_topic_id(OLD, Some((NEW, 3)), 3), OLD);
        assert_eq!(saved_topic_id(OLD, Some((NEW, 3)), 4), NEW);
    }
}
