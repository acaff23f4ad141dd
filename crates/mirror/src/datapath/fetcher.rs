//! Fetchers: one per source broker, each with a fetch session (KIP-227, read_committed)
//! for the partitions that broker leads, and the [`Router`] that assigns partitions to
//! the fetcher of their leader and re-routes them on leader changes.
//!
//! A fetcher asks only for partitions whose pipeline has room (its bounded [`Inbox`]) and
//! that are within their quota of the in-flight [`Budget`] (a partition whose target
//! does not acknowledge is left out, not waited for: [`super::quota`]), and only for as
//! many bytes as it could reserve from the budget beforehand, so
//! fetching waits when the budget is full and a response never outgrows it. Each record
//! set takes its share of that reservation before it is handed on. The partition's [`Cursor`] is the fetch
//! position; a pipeline that must re-read (incident handling) bumps its generation, and
//! data fetched under an older generation is dropped.
//!
//! A feed fetches by the topic id its map belongs to (Fetch v13, when the broker reports
//! ids): a source topic deleted and created again is refused, never read at the old
//! position. The partition is routed again, and when the metadata shows its topic under
//! another id ([`super::topic_id`]) the feed is paused and its flow told
//! ([`Recreation`]); the flow applies `on_topic_recreation`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::backoff::{Backoff, BackoffConfig};
use strait_client::{AbortedTxn, Client, FetchOptions, FetchPosition, FetchedPartition};
use strait_records::{Limits, split};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::budget::{Budget, Label, Reservation, Share};
use super::inbox::{Inbound, Inbox};
use super::stability::Stability;
pub use super::topic_id::Recreation;
use super::topic_id::{Seen, compare};
use crate::error::MirrorError;
use crate::metrics::{EngineHistogram, PartitionMetrics};

/// A partition's fetch position as the fetcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Next offset to fetch.
    pub position: i64,
    /// Bumped whenever the pipeline moves the position itself.
    pub generation: u64,
    /// Not fetched until the pipeline resolves an incident.
    pub paused: bool,
    /// Finished: the fetcher forgets the partition.
    pub stopped: bool,
}

/// What a fetcher hands a partition pipeline.
#[derive(Debug)]
pub enum Feed {
    /// A record set (possibly empty: then only the bounds are news). Boxed, as the error
    /// is: every partition's inbox keeps the slots it grew to (4 of 24 bytes boxed, of
    /// 104 unboxed).
    Data(Box<RecordSet>),
    /// OFFSET_OUT_OF_RANGE at `position`; the cursor is paused.
    OutOfRange {
        /// Cursor generation.
        generation: u64,
        /// The position asked for.
        position: i64,
    },
    /// A non-retriable fetch error, naming the source cluster (the partition's pipeline
    /// names the flow, topic and partition).
    Failed(Box<MirrorError>),
    /// The source topic was re-created (its topic id changed) and the flow's policy is
    /// `skip`: restart the partition from the new topic's log start.
    SourceRecreated,
}

/// One partition's share of a Fetch response, as its pipeline receives it.
#[derive(Debug)]
pub struct RecordSet {
    /// Cursor generation it was fetched under.
    pub generation: u64,
    /// The offset it was fetched from.
    pub position: i64,
    /// The record batches (a slice of the response buffer).
    pub records: Bytes,
    /// Aborted transactions overlapping them.
    pub aborted: Vec<AbortedTxn>,
    /// The reachable end (last stable offset, or high watermark).
    pub end: i64,
    /// The last stable offset when the broker is known to compute a real one (below it,
    /// transactional data not in `aborted` is committed: `Stability`); `None` when only
    /// markers decide (Tansu).
    pub stable: Option<i64>,
    /// Its share of the in-flight budget.
    pub reservation: Arc<Reservation>,
    /// When the Fetch response that brought it was received (the start of the engine's
    /// own share of the latency).
    pub received: Instant,
}

/// The link between a fetcher and one partition's pipeline.
#[derive(Debug)]
pub struct PartitionFeed {
    /// Source topic (shared by the topic's feeds).
    pub topic: Arc<str>,
    /// Partition.
    pub partition: i32,
    /// The position the feed was created at (the map's source position).
    start: i64,
    /// The source topic id its map belongs to, fetched by (nil: fetched by name), and the
    /// new id last reported to the flow (nil: none).
    ids: Mutex<(Uuid, Uuid)>,
    cursor: Mutex<Cursor>,
    /// What the fetcher hands the pipeline, and the flow's stop.
    inbox: Inbox<Feed>,
    last_end: Mutex<i64>,
    /// Consecutive responses that held only part of the next batch (see [`partial`]).
    partial: std::sync::atomic::AtomicU32,
    /// Its account in the in-flight budget (opened by the first fetcher it is routed to).
    share: OnceLock<Share>,
    /// The partition's metrics.
    pub metrics: PartitionMetrics,
}

impl PartitionFeed {
    /// A feed starting at `position` whose inbox holds `depth` record sets.
    pub fn new(
        topic: Arc<str>,
        partition: i32,
        position: i64,
        depth: usize,
        metrics: PartitionMetrics,
    ) -> Arc<Self> {
        Arc::new(PartitionFeed {
            topic,
            partition,
            start: position,
            ids: Mutex::new((Uuid::nil(), Uuid::nil())),
            cursor: Mutex::new(Cursor {
                position,
                generation: 0,
                paused: false,
                stopped: false,
            }),
            inbox: Inbox::new(depth),
            last_end: Mutex::new(-1),
            partial: std::sync::atomic::AtomicU32::new(0),
            share: OnceLock::new(),
            metrics,
        })
    }

    /// The position the feed was created at. The pipeline's planner starts here, not at
    /// the cursor: the feed is handed to a fetcher before the pipeline task first runs, so
    /// by then the fetcher may already have delivered record sets and moved the cursor
    /// past them (they are waiting in the inbox).
    pub fn start_position(&self) -> i64 {
        self.start
    }

    /// The source topic id the feed fetches by (nil: by name).
    pub fn topic_id(&self) -> Uuid {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).0
    }

    /// Fetch by topic id `id` from now on (nil: by name): the id of the topic the
    /// partition's map belongs to, set when the feed is created and when the flow
    /// restarts the map for a re-created topic.
    pub fn set_topic_id(&self, id: Uuid) {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).0 = id;
    }

    /// Compares the feed's id with `seen` (the metadata's, `None`: no such topic) under
    /// the id's lock, so that a new id the flow sets meanwhile is either seen here or set
    /// after the pause (and its reposition unpauses): a re-created topic pauses the
    /// cursor. Returns the ids when the flow is to be told (once per new id).
    fn pause_if_recreated(&self, seen: Option<Uuid>) -> Option<(Uuid, Uuid)> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let Seen::Recreated { old, new } = compare(ids.0, seen) else {
            return None;
        };
        self.with_cursor(|c| c.paused = true);
        (std::mem::replace(&mut ids.1, new) != new).then_some((old, new))
    }

    /// Runs `f` on the cursor under its lock.
    pub fn with_cursor<R>(&self, f: impl FnOnce(&mut Cursor) -> R) -> R {
        f(&mut self.cursor.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Tells the pipeline the source topic was re-created: pauses fetching and queues
    /// [`Feed::SourceRecreated`] behind what was already fetched.
    pub fn source_recreated(&self) {
        self.with_cursor(|c| c.paused = true);
        self.inbox.push_control(Feed::SourceRecreated);
    }

    /// Asks the pipeline to stop (graceful: it records what is in flight).
    pub fn stop(&self) {
        self.inbox.stop();
    }

    /// Whether the pipeline was asked to stop.
    pub fn stop_asked(&self) -> bool {
        self.inbox.stopped()
    }

    /// The pipeline's next item (when it wants `items`) or the stop (when it watches for
    /// `stop`), whichever is there first, the stop first; waits for one.
    pub async fn recv(&self, items: bool, stop: bool) -> Inbound<Feed> {
        self.inbox
            .recv(items, stop, |f| matches!(f, Feed::Data(_)))
            .await
    }

    /// Whether nothing waits in the inbox for the pipeline.
    pub fn is_empty(&self) -> bool {
        self.inbox.is_empty()
    }

    /// Gives back the inbox's capacity when it is empty (a parked pipeline).
    pub fn shrink_if_empty(&self) {
        self.inbox.shrink_if_empty();
    }

    /// Waits until something waits in the inbox for the pipeline, or it was asked to stop
    /// (a parked pipeline's wake-up; takes nothing).
    pub async fn ready(&self) {
        self.inbox.ready().await;
    }

    fn stopped(&self) -> bool {
        self.with_cursor(|c| c.stopped)
    }

    /// Its account in `budget`, opened on first use (`flow` names it in messages).
    pub fn share(&self, budget: &Budget, flow: &Arc<str>) -> &Share {
        self.share.get_or_init(|| {
            budget.register(Label {
                flow: Arc::clone(flow),
                topic: Arc::clone(&self.topic),
                partition: self.partition,
            })
        })
    }

    /// Its account, if a fetcher opened it yet.
    pub fn account(&self) -> Option<&Share> {
        self.share.get()
    }
}

type Assign = mpsc::UnboundedSender<Arc<PartitionFeed>>;

/// Assigns partitions to per-broker fetchers of one source cluster.
pub struct Router {
    client: Client,
    /// Shared with the accounts of its partitions.
    flow: Arc<str>,
    cluster: String,
    opts: FetchOptions,
    partition_max_bytes: i32,
    budget: Budget,
    limits: Limits,
    stop: watch::Receiver<bool>,
    recreations: mpsc::UnboundedSender<Recreation>,
    /// The flow's `strait_fetch_wait_seconds`.
    fetch_wait: EngineHistogram,
    fetchers: Mutex<HashMap<i32, Assign>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("flow", &self.flow)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// A router for `client` (the source cluster `cluster` of `flow`); fetchers stop when
    /// `stop` turns true. A partition whose source topic turns out re-created is reported
    /// on `recreations`; each Fetch's wait for its response is observed in `fetch_wait`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: Client,
        flow: &str,
        cluster: &str,
        opts: FetchOptions,
        partition_max_bytes: i32,
        budget: Budget,
        limits: Limits,
        stop: watch::Receiver<bool>,
        recreations: mpsc::UnboundedSender<Recreation>,
        fetch_wait: EngineHistogram,
    ) -> Arc<Self> {
        Arc::new(Router {
            client,
            flow: Arc::from(flow),
            cluster: cluster.to_owned(),
            opts,
            partition_max_bytes,
            budget,
            limits,
            stop,
            recreations,
            fetch_wait,
            fetchers: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
        })
    }

    /// Free budget a fetcher waits for before it asks: one partition's worth, or a
    /// sixteenth of the budget when that is smaller (a batch larger than the request's
    /// limit still comes whole, KIP-74, and takes its extra bytes when it arrives).
    fn min_fetch_room(&self) -> usize {
        let partition = usize::try_from(self.partition_max_bytes).unwrap_or(0);
        let sixteenth = usize::try_from(self.budget.total() / 16).unwrap_or(usize::MAX);
        partition.min(sixteenth).max(1)
    }

    /// Hands `feed` to the fetcher of its leader: at once when the metadata cache is
    /// fresh and names it, else in the background (a task that asks the cluster). Not a
    /// task per partition when the cache can tell: a flow starting 10,000 partitions kept
    /// 10,000 routing futures of 4.4 KB alive at once, 44 MB.
    pub fn assign(self: &Arc<Self>, feed: Arc<PartitionFeed>) {
        if !*self.stop.borrow()
            && !feed.stopped()
            && let Some((leader, _)) = self.client.fresh_leader(&feed.topic, feed.partition)
        {
            self.check_topic_id(&feed);
            self.hand_to(leader, feed);
            return;
        }
        let router = Arc::clone(self);
        tokio::spawn(async move { router.route(feed).await });
    }

    async fn route(self: Arc<Self>, feed: Arc<PartitionFeed>) {
        let mut backoff = Backoff::new(BackoffConfig {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
        });
        let leader = loop {
            if *self.stop.borrow() || feed.stopped() {
                return;
            }
            let found = self.client.leader_for(&feed.topic, feed.partition).await;
            // Also when the partition has no leader: the re-created topic may have fewer
            // partitions.
            self.check_topic_id(&feed);
            match found {
                Ok((leader, _)) if leader >= 0 => break leader,
                Ok(_) => {}
                Err(e) => {
                    feed.metrics.fetch_error();
                    tracing::warn!(flow = %self.flow, cluster = %self.cluster, topic = %feed.topic,
                        partition = feed.partition, error = %e, "no leader for the partition; retrying");
                }
            }
            self.client.invalidate_metadata();
            tokio::time::sleep(backoff.next_delay()).await;
        };
        self.hand_to(leader, feed);
    }

    /// Hands `feed` to the fetcher of `leader`, starting one if there is none.
    fn hand_to(self: &Arc<Self>, leader: i32, feed: Arc<PartitionFeed>) {
        let mut fetchers = self.fetchers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = fetchers.get(&leader)
            && tx.send(Arc::clone(&feed)).is_ok()
        {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        // Cannot fail: we hold the receiver.
        let _ = tx.send(feed);
        fetchers.insert(leader, tx);
        let task = tokio::spawn(run_fetcher(Arc::clone(self), leader, rx));
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(task);
    }

    /// Compares the feed's topic id with the one in the client's metadata (just refreshed
    /// by the leader lookup); a re-created topic pauses the feed and is reported once per
    /// new id (`super::topic_id` has the rules).
    fn check_topic_id(&self, feed: &PartitionFeed) {
        let seen = self
            .client
            .cached_metadata()
            .topics
            .get(&*feed.topic)
            .map(|t| t.id);
        if let Some((old, new)) = feed.pause_if_recreated(seen) {
            tracing::warn!(flow = %self.flow, cluster = %self.cluster, topic = %feed.topic,
                partition = feed.partition, old = %old, new = %new,
                "the source topic has a new topic id (deleted and created again): nothing of \
                 the new topic is fetched until on_topic_recreation decides");
            // A flow that is gone stops its fetchers anyway.
            let _ = self.recreations.send(Recreation {
                topic: feed.topic.to_string(),
                partition: feed.partition,
                old,
                new,
            });
        }
    }

    /// Waits for every fetcher to exit (after `stop` turned true).
    pub async fn join(&self) {
        let tasks: Vec<_> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// The fetch wait used while the last response left more data behind than it brought
/// (falling behind, or catching up): Kafka answers at once
/// when data is there, so it costs nothing; Tansu gathers data for about half the wait and
/// returns what it has, so a short `fetch_max_wait` (tuned for latency at the end of the
/// log) would starve a fetcher that is catching up (docs/compatibility.md).
const CATCH_UP_MAX_WAIT: Duration = Duration::from_millis(500);

/// Retry timing after a failed fetch (jittered, so the fetchers of a cluster that came back
/// do not all ask at once).
const FETCH_BACKOFF: BackoffConfig = BackoffConfig {
    initial: Duration::from_millis(100),
    max: Duration::from_secs(3),
};

/// Kafka codes after which the partition is routed again: NOT_LEADER_OR_FOLLOWER,
/// UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH,
/// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID, REPLICA_NOT_AVAILABLE.
/// Routing looks the topic up again, which finds a re-created topic
/// ([`Router::check_topic_id`]); Tansu refuses an unknown topic id with
/// UNKNOWN_TOPIC_OR_PARTITION, Kafka with UNKNOWN_TOPIC_ID.
const REROUTE: [i16; 8] = [6, 3, 5, 74, 75, 100, 110, 9];
/// OFFSET_OUT_OF_RANGE.
const OUT_OF_RANGE: i16 = 1;

async fn run_fetcher(
    router: Arc<Router>,
    broker: i32,
    mut assigned: mpsc::UnboundedReceiver<Arc<PartitionFeed>>,
) {
    let mut stop = router.stop.clone();
    let mut session = router.client.fetch_session(broker);
    let mut parts: Vec<Arc<PartitionFeed>> = Vec::new();
    let mut failures: u32 = 0;
    let mut backoff = Backoff::new(FETCH_BACKOFF);
    let mut stability = Stability::default();
    stability.check_advertised(&router.client, broker);
    let fetch_max = usize::try_from(router.opts.max_bytes).unwrap_or(0);
    // Whether the last response stopped short of some partition's end.
    let mut behind = false;
    loop {
        if *stop.borrow() {
            return;
        }
        while let Ok(p) = assigned.try_recv() {
            parts.push(p);
        }
        parts.retain(|p| !p.stopped());
        // Another partition found this one holding the most bytes over the held limit:
        // make its pipeline look (an empty record set), which spills or fails it.
        for p in &parts {
            if p.share(&router.budget, &router.flow).take_nudge() {
                nudge(&router, p);
            }
        }
        let min_room = router.min_fetch_room();
        let mut wanted: Vec<(Arc<PartitionFeed>, Cursor, Uuid)> = Vec::new();
        for p in &parts {
            // The id before the cursor: the flow sets a new id before it moves the cursor.
            let id = p.topic_id();
            let c = p.with_cursor(|c| *c);
            let share = p.share(&router.budget, &router.flow);
            if !c.paused && p.inbox.has_room() && router.budget.may_fetch(share, min_room) {
                wanted.push((Arc::clone(p), c, id));
            }
        }
        if wanted.is_empty() {
            tokio::select! {
                p = assigned.recv() => match p {
                    Some(p) => parts.push(p),
                    None => return,
                },
                _ = stop.changed() => return,
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
            continue;
        }
        // Reserve before asking: the response is read into memory the budget has.
        let asked_at = Instant::now();
        let mut upfront = tokio::select! {
            r = router.budget.reserve_response(min_room, fetch_max) => r,
            _ = stop.changed() => return,
        };
        let room = i32::try_from(upfront.bytes()).unwrap_or(i32::MAX).max(1);
        let opts = FetchOptions {
            max_bytes: room,
            max_wait: if behind {
                router.opts.max_wait.max(CATCH_UP_MAX_WAIT)
            } else {
                router.opts.max_wait
            },
            ..router.opts
        };
        let positions: Vec<FetchPosition> = wanted
            .iter()
            .map(|(p, c, id)| {
                let mut pos =
                    FetchPosition::new(&*p.topic, p.partition, c.position).with_topic_id(*id);
                let partial = p.partial.load(std::sync::atomic::Ordering::Relaxed);
                pos.max_bytes = partition_limit(router.partition_max_bytes, partial, room);
                pos
            })
            .collect();
        let sent_at = Instant::now();
        let result = tokio::select! {
            r = session.fetch(&positions, &opts) => r,
            _ = stop.changed() => return,
        };
        let received = Instant::now();
        tracing::trace!(flow = %router.flow, broker, partitions = positions.len(), room,
            waited_for_budget = ?(sent_at - asked_at), took = ?(received - sent_at),
            bytes = result.as_ref().map_or(0, |r| {
                r.partitions.iter().map(|p| p.records.len()).sum::<usize>()
            }),
            "fetch");
        match result {
            Err(e) => {
                failures += 1;
                for (p, _, _) in &wanted {
                    p.metrics.fetch_error();
                }
                if failures == 1 || failures.is_multiple_of(20) {
                    tracing::warn!(flow = %router.flow, cluster = %router.cluster, broker,
                        error = %e, failures, "fetch failed; retrying");
                }
                if failures >= 3 || e.is_stale_metadata() {
                    // The broker may be gone: let the router find the leaders again.
                    router.client.invalidate_metadata();
                    for p in parts.drain(..) {
                        router.assign(p);
                    }
                }
                tokio::time::sleep(backoff.next_delay()).await;
            }
            Ok(result) => {
                router
                    .fetch_wait
                    .observe((received - sent_at).as_secs_f64());
                failures = 0;
                backoff = Backoff::new(FETCH_BACKOFF);
                behind = false;
                stability.observe(&result.partitions);
                // A response may name 10,000 partitions: look each up, not scan for it.
                let index: HashMap<(&str, i32), usize> = wanted
                    .iter()
                    .enumerate()
                    .map(|(i, (p, _, _))| ((&*p.topic, p.partition), i))
                    .collect();
                for fp in result.partitions {
                    // Answered by id: only for the id asked for.
                    let Some((p, c, _)) = index
                        .get(&(fp.topic.as_str(), fp.partition))
                        .map(|&i| &wanted[i])
                        .filter(|(_, _, id)| fp.topic_id.is_none_or(|got| got == *id))
                    else {
                        continue;
                    };
                    let delivered = tokio::select! {
                        d = deliver(&router, p, *c, fp, &mut upfront, &mut behind, &stability, received) => d,
                        // Waiting for budget that pipelines blocked on the target hold: a
                        // stop must not wait for it.
                        _ = stop.changed() => return,
                    };
                    if let Some(drop) = delivered {
                        if drop {
                            parts.retain(|x| !Arc::ptr_eq(x, p));
                        }
                        if *stop.borrow() {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// Hands the pipeline an empty record set at its cursor, so that it plans (and checks what
/// it holds) without new data.
fn nudge(router: &Router, p: &PartitionFeed) {
    let end = *p.last_end.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(zero) = router.budget.try_reserve(0) else {
        return;
    };
    p.with_cursor(|c| {
        let feed = Feed::Data(Box::new(RecordSet {
            generation: c.generation,
            position: c.position,
            records: Bytes::new(),
            aborted: Vec::new(),
            end: end.max(c.position),
            stable: None,
            reservation: Arc::new(zero),
            received: Instant::now(),
        }));
        // A full inbox: the pipeline has data to plan anyway, and sees the eviction then.
        let _ = p.inbox.offer(feed);
    });
}

/// The most a partition may bring in one fetch: the configured limit, doubled for each
/// consecutive response that held only part of its next batch, within the fetch's room.
fn partition_limit(configured: i32, partial_streak: u32, room: i32) -> i32 {
    configured
        .saturating_mul(1i32 << partial_streak.min(16))
        .min(room.max(configured))
        .max(1)
}

/// What to do about a response that held only the start of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Partial {
    /// Ask for more next time.
    Grow,
    /// The batch (this many bytes, from its header) can never fit in the budget.
    TooLarge(u64),
}

/// Decides on a record set that holds no whole batch: the batch's length is in its first
/// 12 bytes (offset, length), when they came.
fn partial(records: &[u8], budget: u64) -> Partial {
    let size = records
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes)
        .and_then(|len| u64::try_from(len).ok())
        .map(|len| len + 12);
    match size {
        Some(n) if n > budget => Partial::TooLarge(n),
        _ => Partial::Grow,
    }
}

/// A first batch the budget can never hold, though Kafka returned it whole (it does past
/// the fetch's limits, KIP-74): its size from its header, or `None` when it fits.
fn beyond_budget(records: &[u8], budget: u64) -> Option<u64> {
    match partial(records, budget) {
        Partial::TooLarge(first) => Some(first),
        Partial::Grow => None,
    }
}

/// Fails the partition (pausing its feed) for a batch of `bytes` larger than the whole
/// in-flight budget, with an error naming the setting to raise.
fn fail_too_large(router: &Router, p: &PartitionFeed, asked: Cursor, bytes: u64) {
    let err = MirrorError::other(format!(
        "the batch at source offset {} is {bytes} bytes, more than the whole in-flight budget \
         (engine.in_flight_memory = {} bytes) can hold: raise engine.in_flight_memory above it",
        asked.position,
        router.budget.total()
    ))
    .cluster(&router.cluster);
    p.with_cursor(|c| c.paused = true);
    p.inbox.push_control(Feed::Failed(Box::new(err)));
}

/// Handles one partition of a response, taking its share of the fetch's `upfront`
/// reservation, and sets `behind` when data is left past what was returned; `Some(true)`
/// when the fetcher must forget the partition. `received`: when the response came.
#[allow(clippy::too_many_arguments)]
async fn deliver(
    router: &Arc<Router>,
    p: &Arc<PartitionFeed>,
    asked: Cursor,
    fp: FetchedPartition,
    upfront: &mut Reservation,
    behind: &mut bool,
    stability: &Stability,
    received: Instant,
) -> Option<bool> {
    match fp.error_code {
        0 => {
            let end = if fp.last_stable_offset >= 0 {
                fp.last_stable_offset
            } else {
                fp.high_watermark
            };
            let split = split(fp.records.clone(), &router.limits);
            let next = match &split {
                Ok(s) => s.batches.last().map_or(asked.position, |b| {
                    b.header().next_offset().max(asked.position)
                }),
                // The pipeline reports the error with context.
                Err(_) => asked.position,
            };
            if let Ok(s) = &split
                && s.batches.is_empty()
                && !fp.records.is_empty()
            {
                // Only the start of a batch came back (it is larger than what this
                // partition may bring): ask for more next time instead of re-fetching the
                // same piece in a loop, or fail clearly if it can never fit.
                let streak = p.partial.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                match partial(&fp.records, router.budget.total()) {
                    Partial::Grow => {
                        tokio::time::sleep(Duration::from_millis(u64::from(streak.min(10)) * 5))
                            .await;
                        return None;
                    }
                    Partial::TooLarge(bytes) => {
                        fail_too_large(router, p, asked, bytes);
                        return Some(true);
                    }
                }
            }
            p.partial.store(0, std::sync::atomic::Ordering::Relaxed);
            // Behind: more is waiting than this response brought (at the end of a busy log a
            // few records always arrive during the response; that is not falling behind).
            *behind |= end.saturating_sub(next) > next.saturating_sub(asked.position).max(1);
            let news = next != asked.position || {
                let mut last = p.last_end.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::replace(&mut *last, end) != end
            };
            if !news && fp.records.is_empty() {
                return None;
            }
            if let Some(bytes) = beyond_budget(&fp.records, router.budget.total()) {
                // Kafka returns a first batch whole even when it is larger than the fetch
                // asked for (KIP-74): waiting for room the budget can never give would hold
                // this response's reservation forever and stall every other partition.
                fail_too_large(router, p, asked, bytes);
                return Some(true);
            }
            let account = p.share(&router.budget, &router.flow);
            // More than the fetch reserved: a first batch larger than the limit (KIP-74),
            // or a broker that returns more than asked (Tansu). The rest is never waited
            // for while holding part of it (`Budget::grow`).
            let share = upfront.take_for(fp.records.len(), account);
            let reservation = Arc::new(router.budget.grow(share, fp.records.len()).await);
            let feed = Feed::Data(Box::new(RecordSet {
                generation: asked.generation,
                position: asked.position,
                records: fp.records,
                stable: stability
                    .trusted()
                    .then_some(fp.last_stable_offset)
                    .filter(|&o| o >= 0),
                aborted: fp.aborted_transactions,
                end,
                reservation,
                received,
            }));
            p.with_cursor(|c| {
                if c.generation == asked.generation && c.position == asked.position && !c.paused {
                    // Only this fetcher offers data and it had room: never full.
                    if p.inbox.offer(feed).is_ok() {
                        c.position = next;
                    }
                }
            });
            None
        }
        OUT_OF_RANGE => {
            p.with_cursor(|c| {
                if c.generation == asked.generation {
                    c.paused = true;
                    p.inbox.push_control(Feed::OutOfRange {
                        generation: asked.generation,
                        position: asked.position,
                    });
                }
            });
            None
        }
        code if REROUTE.contains(&code) => {
            p.metrics.fetch_retry();
            router.client.invalidate_metadata();
            router.assign(Arc::clone(p));
            Some(true)
        }
        _ => {
            let e = fp.error()?;
            p.metrics.fetch_error();
            if e.is_retriable() {
                return None;
            }
            let err = MirrorError::kafka("fetch", e).cluster(&router.cluster);
            p.inbox.push_control(Feed::Failed(Box::new(err)));
            Some(true)
        }
    }
}

#[cfg(test)]
mod tests;
