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
use strait_client::{AbortedTxn, Client, FetchOptions};
use strait_records::Limits;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::budget::{Budget, Label, Reservation, Share};
use super::inbox::{Inbound, Inbox};
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
    /// Consecutive responses that held only part of the next batch (see [`broker::partial`]).
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
        let task = tokio::spawn(broker::run_fetcher(Arc::clone(self), leader, rx));
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

mod broker;
#[cfg(test)]
mod tests;
