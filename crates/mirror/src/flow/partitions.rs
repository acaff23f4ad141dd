//! The supervisor's table of partitions: every partition the run replicates
//! ([`Running`]: its feed, map and progress), its pipeline task, and where it stands in
//! the restart cycle (down, due, deleting). The flow's loop (`supervise.rs`) decides; this
//! table only records, through a small API, so that the bookkeeping of one partition is
//! changed in one place.
//!
//! Rules:
//!
//! - **Every partition replicated has an entry**, also one that is down (waiting for its
//!   restart) or stopping (its source topic deleted, or released to another member):
//!   [`Partitions::running`]. It leaves only by [`Partitions::retire`] (with its restart
//!   state and stale id) or [`Partitions::remove`] (started, but never spawned).
//! - **A restart sequence exists only after a failure** ([`Partitions::restarts_for`]): a
//!   partition that never failed needs none, and a new sequence then is the same as one
//!   that ran healthy (a fresh backoff, the first attempt), so 10,000 healthy partitions
//!   do not keep 10,000 of them.
//! - **A new topic id is saved only with a map restarted for it** ([`saved_topic_id`]): a
//!   crash between the re-creation and the pipeline's restart of the map never saves the
//!   old map under the new id.
//! - **`--once` ends are fixed at the first start** ([`Partitions::once_end`]): a restart
//!   keeps them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::{JoinError, JoinSet};
use uuid::Uuid;

use super::Pipeline;
use super::recreation::{IdNews, Retired};
use crate::config::Flow;
use crate::control::Checkpoint;
use crate::datapath::fetcher::PartitionFeed;
use crate::datapath::partition::{Progress, SharedMap};
use crate::error::MirrorError;
use crate::incident::{Incident, Noticed, Policies};
use crate::metrics::{Metrics, PartitionMetrics};
use crate::restarts::Restarts;
use crate::state::PartitionState;

/// A partition: (source topic, partition).
pub(super) type Key = (String, i32);

/// A partition replicated by the run (also while down, waiting for its restart).
#[derive(Clone)]
pub(super) struct Running {
    /// The source topic's id as the flow knows it now (re-creations are detected
    /// against it).
    pub topic_id: Uuid,
    /// The id saved with the map: the one the map belongs to. After a re-creation the
    /// new id is saved only once the pipeline restarted the map (`pending_id`: the new
    /// id and the pipeline's re-creation count when it was told), so a crash in between
    /// never saves the old map under the new id.
    pub map_id: Uuid,
    pub pending_id: Option<(Uuid, u64)>,
    /// Its feed ([`PartitionFeed::stop`] stops its pipeline gracefully).
    pub feed: Arc<PartitionFeed>,
    pub target_topic: String,
    pub map: SharedMap,
    pub progress: Arc<Progress>,
}

impl Running {
    /// The partition's metrics (kept by its feed; one copy per partition).
    pub(super) fn metrics(&self) -> &PartitionMetrics {
        &self.feed.metrics
    }

    /// The partition's state to save: its map with the id the map belongs to. The
    /// re-creation count is read under the map's lock, where the pipeline publishes it,
    /// so the two always agree.
    pub(super) fn state(&self) -> PartitionState {
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
    pub(super) fn checkpoint(
        &self,
        snapshot: bool,
    ) -> Option<(strait_offsets::Checkpoint, Uuid, u64)> {
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

    /// The source topic was found under `id`: the feed fetches by it and the pipeline
    /// restarts the map; the map is saved with `id` once the pipeline did
    /// ([`saved_topic_id`]).
    fn recreated(&mut self, id: Uuid) {
        // Before the pipeline is told: its restart of the map counts past this.
        let seen = self.progress.recreated.load(Ordering::Acquire);
        // The id first: the fetcher reads it before the cursor the pipeline moves.
        self.feed.set_topic_id(id);
        // A pipeline that is gone has stopped the flow with its own error, or is down
        // (its restart applies the policy: `keep_ids_of_down`).
        self.feed.source_recreated();
        // Saved with the new id only once its pipeline was told (a stop that cuts the
        // caller's loop short saves the others with the id their maps belong to).
        self.topic_id = id;
        // Saved with the map once the pipeline restarted it (`Running::state`).
        let now = self.progress.recreated.load(Ordering::Acquire);
        self.map_id = saved_topic_id(self.map_id, self.pending_id, now);
        self.pending_id = Some((id, seen));
        self.progress.dirty.store(true, Ordering::Release);
    }
}

/// The topic id to save with a map: `pending`'s id once the pipeline's re-creation
/// count passed the one it had when told of the re-creation, else the map's own.
pub(super) fn saved_topic_id(map_id: Uuid, pending: Option<(Uuid, u64)>, recreated: u64) -> Uuid {
    match pending {
        Some((id, seen)) if recreated > seen => id,
        _ => map_id,
    }
}

/// What the table has for the loop next.
pub(super) enum Event {
    /// A pipeline ended (or its task panicked or was cancelled).
    Ended(Result<(Key, Result<(), MirrorError>), JoinError>),
    /// A partition's restart delay passed.
    Due(Key),
}

/// Every partition the run replicates, and where each stands.
#[derive(Default)]
pub(super) struct Partitions {
    /// Every partition replicated (also those waiting for a restart), with its map.
    running: BTreeMap<Key, Running>,
    /// Running pipelines; each ends with its partition and result (the error is one
    /// pointer, so the output never makes a task's cell larger than its future).
    tasks: JoinSet<(Key, Result<(), MirrorError>)>,
    /// Per partition, its restart sequence (created at its first failure).
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
    /// The ids source topics were re-created away from.
    retired: Retired,
}

impl Partitions {
    /// Every partition replicated, with its entry.
    pub(super) fn running(&self) -> &BTreeMap<Key, Running> {
        &self.running
    }

    /// A partition started: its entry (replacing the one it had, returned).
    pub(super) fn insert(&mut self, key: Key, run: Running) -> Option<Running> {
        self.running.insert(key, run)
    }

    /// Forgets a partition that was started but does not run.
    pub(super) fn remove(&mut self, key: &Key) -> Option<Running> {
        self.running.remove(key)
    }

    /// Spawns started pipelines. A partition's restart sequence is created at its first
    /// failure ([`Partitions::restarts_for`]), not here.
    pub(super) fn spawn(&mut self, pipelines: Vec<Pipeline>) {
        for (key, pipeline) in pipelines {
            self.tasks.spawn(async move { (key, pipeline.await) });
        }
    }

    /// The next pipeline that ended, or partition due for a restart; pending while there
    /// is neither.
    pub(super) async fn next(&mut self) -> Event {
        tokio::select! {
            Some(done) = self.tasks.join_next() => Event::Ended(done),
            Some(Ok(key)) = self.due.join_next() => Event::Due(key),
            else => std::future::pending().await,
        }
    }

    /// Whether every partition is up and reached its `--once` end.
    pub(super) fn caught_up(&self) -> bool {
        self.down.is_empty()
            && self
                .running
                .values()
                .all(|r| r.progress.done.load(Ordering::Acquire))
    }

    /// The states of partitions that changed since the last checkpoint (their flags
    /// cleared; the writer sets them again if the write fails).
    pub(super) fn dirty_states(&self) -> Checkpoint {
        self.running
            .iter()
            .filter(|(_, r)| r.progress.dirty.swap(false, Ordering::AcqRel))
            .map(|(key, r)| (key.clone(), r.state(), r.progress.clone()))
            .collect()
    }

    /// `--once`: the source end `key` stops at, `end` at its first start.
    pub(super) fn once_end(&mut self, key: &Key, end: i64) -> i64 {
        *self.once_ends.entry(key.clone()).or_insert(end)
    }

    /// Whether `key` is down, waiting for its restart.
    pub(super) fn is_down(&self, key: &Key) -> bool {
        self.down.contains(key)
    }

    /// Whether `key` is stopping because its source topic was deleted.
    pub(super) fn is_deleting(&self, key: &Key) -> bool {
        self.deleting.contains(key)
    }

    /// Whether a partition of `topic` is stopping because the topic was deleted.
    pub(super) fn topic_deleting(&self, topic: &str) -> bool {
        self.deleting.iter().any(|(t, _)| t == topic)
    }

    /// The last partition of a deleted `topic` stopped: the ids it was re-created away
    /// from are forgotten with it (a topic of that name later is a new one).
    pub(super) fn topic_deleted(&mut self, topic: &str) {
        if !self.running.keys().any(|(t, _)| t == topic) {
            self.retired.forget(topic);
        }
    }

    /// The partitions of `topic` not already stopping for its deletion.
    pub(super) fn not_deleting(&self, topic: &str) -> Vec<Key> {
        self.running
            .keys()
            .filter(|(t, _)| t == topic)
            .filter(|k| !self.deleting.contains(*k))
            .cloned()
            .collect()
    }

    /// `key`'s source topic was deleted: it is stopping. True when it is down (nothing
    /// to stop: it is retired now); otherwise its feed stops its pipeline.
    pub(super) fn delete(&mut self, key: &Key) -> bool {
        self.deleting.insert(key.clone());
        if self.down.contains(key) {
            return true;
        }
        if let Some(run) = self.running.get(key) {
            run.feed.stop();
        }
        false
    }

    /// `key`'s deletion finished.
    pub(super) fn deleted(&mut self, key: &Key) {
        self.deleting.remove(key);
    }

    /// The restart sequence of a partition that failed (created at its first failure,
    /// limited with `--once`).
    pub(super) fn restarts_for(&mut self, key: &Key, now: Instant, once: bool) -> &mut Restarts {
        self.restarts.entry(key.clone()).or_insert_with(|| {
            let r = Restarts::new(now);
            if once {
                r.with_limit(crate::restarts::ONCE_RESTART_LIMIT)
            } else {
                r
            }
        })
    }

    /// `key` is down: it is due again after `delay`.
    pub(super) fn schedule_restart(&mut self, key: Key, delay: Duration) {
        self.down.insert(key.clone());
        self.due.spawn(async move {
            tokio::time::sleep(delay).await;
            key
        });
    }

    /// `first` and every other partition due now that still runs and is not stopping,
    /// by topic (one bounds request per topic and cluster).
    pub(super) fn due_by_topic(&mut self, first: Key) -> BTreeMap<String, Vec<i32>> {
        let mut keys = vec![first];
        while let Some(Ok(k)) = self.due.try_join_next() {
            keys.push(k);
        }
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for key in keys {
            if self.running.contains_key(&key) && !self.deleting.contains(&key) {
                by_topic.entry(key.0).or_default().push(key.1);
            }
        }
        by_topic
    }

    /// The entries of `partitions` of `topic`, before a restart replaces them.
    pub(super) fn entries(&self, topic: &str, partitions: &[i32]) -> Vec<(Key, Running)> {
        partitions
            .iter()
            .filter_map(|p| {
                let key = (topic.to_owned(), *p);
                Some((key.clone(), self.running.get(&key)?.clone()))
            })
            .collect()
    }

    /// The state a restart of `key` starts from: its map, with the id the map belongs to
    /// when the topic's id changed while it was down.
    pub(super) fn restart_state(&self, key: &Key, old: &Running) -> PartitionState {
        let mut state = old.state();
        if let Some(id) = self.stale_ids.get(key) {
            state.topic_id = *id;
        }
        state
    }

    /// Puts back the entries a failed restart replaced (the new ones' feeds stop).
    pub(super) fn roll_back(&mut self, olds: Vec<(Key, Running)>) {
        for (key, old) in olds {
            let feed = Arc::clone(&old.feed);
            if let Some(new) = self.running.insert(key, old)
                && !Arc::ptr_eq(&new.feed, &feed)
            {
                new.feed.with_cursor(|c| c.stopped = true);
            }
        }
    }

    /// `key` runs again.
    pub(super) fn restarted(&mut self, key: &Key) {
        self.down.remove(key);
        self.stale_ids.remove(key);
        if let Some(r) = self.restarts.get_mut(key) {
            r.started(Instant::now());
        }
    }

    /// Forgets `key` (deleted, released): its restart state goes, and its entry is
    /// returned (`None` when it was not running).
    pub(super) fn retire(&mut self, key: &Key) -> Option<Running> {
        self.down.remove(key);
        self.restarts.remove(key);
        self.stale_ids.remove(key);
        self.running.remove(key)
    }

    /// The id `topic`'s partitions fetch by (nil when none runs).
    pub(super) fn current_id(&self, topic: &str) -> Uuid {
        self.running
            .iter()
            .find(|((t, _), _)| t == topic)
            .map_or(Uuid::nil(), |(_, r)| r.topic_id)
    }

    /// Partitions of `topic` that are down when its id becomes `id` keep the id their map
    /// belongs to: their restart applies the topic re-creation policy.
    pub(super) fn keep_ids_of_down(&mut self, topic: &str, id: Uuid) {
        for key in self.down.iter().filter(|(t, _)| t == topic) {
            if let Some(run) = self.running.get(key)
                && self.retired.judge(topic, run.topic_id, id) == IdNews::Changed
            {
                self.stale_ids.entry(key.clone()).or_insert(run.topic_id);
            }
        }
    }

    /// A topic refresh's id for `topic`, or the current one when the refresh reports an id
    /// the topic was re-created away from (`recreation.rs`).
    pub(super) fn refreshed_id(&self, flow: &str, topic: &str, reported: Uuid) -> Uuid {
        let current = self.current_id(topic);
        match self.retired.judge(topic, current, reported) {
            IdNews::Stale => {
                tracing::debug!(flow = %flow, topic, "a topic refresh older than \
                    the topic's re-creation: keeping the new topic id");
                current
            }
            _ => reported,
        }
    }

    /// Applies `on_topic_recreation` when `topic`'s id `id` is a re-creation (rules in
    /// `recreation.rs`): `fail` is the error; `skip` retires the old id and every partition
    /// of the topic goes on under `id` ([`Running`]'s re-creation). True when it did.
    pub(super) fn apply_topic_id(
        &mut self,
        flow: &Flow,
        metrics: &Metrics,
        topic: &str,
        id: Uuid,
    ) -> Result<bool, MirrorError> {
        let current = self.current_id(topic);
        if self.retired.judge(topic, current, id) != IdNews::Changed {
            return Ok(false);
        }
        let incident = Incident::topic_recreated(current, id, Noticed::WhileRunning);
        metrics.incident(&flow.name, topic, -1, incident.kind());
        let skipped = incident
            .decide(&Policies::of(flow))
            .into_result()
            .map_err(|e| e.topic(topic))?;
        tracing::error!(flow = %flow.name, topic = %topic, "{skipped}");
        self.retired.retire(topic, current);
        for (_, r) in self.running.iter_mut().filter(|((t, _), _)| t == topic) {
            r.recreated(id);
        }
        Ok(true)
    }

    /// Stops every feed and restart timer (a stop of the run).
    pub(super) fn stop_all(&mut self) {
        for r in self.running.values() {
            r.feed.stop();
        }
        self.due.abort_all();
    }

    /// The next pipeline that ended, `None` once none runs.
    pub(super) async fn next_ended(
        &mut self,
    ) -> Option<Result<(Key, Result<(), MirrorError>), JoinError>> {
        self.tasks.join_next().await
    }

    /// Pipelines still running.
    pub(super) fn tasks_left(&self) -> usize {
        self.tasks.len()
    }

    /// Cancels the pipelines still running and waits until they are gone.
    pub(super) async fn abort_tasks(&mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests;
