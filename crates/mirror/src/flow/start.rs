//! Starting partitions: each new partition of the topics a refresh found gets its map
//! (saved, or fresh at the start position), the range of the target recovery checks, a
//! feed on the router and a pipeline, spawned once its birth state is written.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use strait_client::IsolationLevel;
use strait_offsets::{MapWriter, OffsetMap, Side};
use strait_records::Limits;

use super::initial_map::initial_map;
use super::partitions::Key;
use super::partitions::Running;
use super::{FEED_DEPTH, FlowRun, Pipeline};
use crate::config::model::StartPosition;
use crate::datapath::fetcher::PartitionFeed;
use crate::datapath::partition::{self, PartitionSpec, Progress, SharedMap, TopicSpec};
use crate::datapath::probe::{Bounds, bounds};
use crate::datapath::recovery::Recovery;
use crate::error::MirrorError;
use crate::incident::Policies;
use crate::state::PartitionState;
use crate::topics::ReplicatedTopic;

impl FlowRun {
    /// Starts the partitions of `topics` that are not running yet. On an error none of
    /// them runs (a later refresh starts them again).
    pub(super) async fn start_topics(
        &mut self,
        topics: &[ReplicatedTopic],
    ) -> Result<(), MirrorError> {
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
        self.partitions.spawn(pipelines);
        if self.role.transactional() && !births.is_empty() {
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
        let watch = self.takeover_watch(topics).await?;
        for t in topics {
            let mut t = t.clone();
            t.topic_id = self
                .partitions
                .refreshed_id(&self.flow.name, &t.source_topic, t.topic_id);
            let t = &t;
            self.topics.insert(t.source_topic.clone(), t.clone());
            let new: Vec<i32> = (0..t.partitions)
                .map(|p| (t.source_topic.clone(), p))
                .filter(|k| !self.partitions.running().contains_key(k) && self.role.may_start(k))
                .map(|(_, p)| p)
                .collect();
            // The partitions running already: a re-created topic (`recreation`).
            self.apply_topic_id(&t.source_topic, t.topic_id)?;
            if new.is_empty() {
                continue;
            }
            let (b, p) = self
                .start_partitions_watched(t, &new, watch.as_ref())
                .await?;
            births.extend(b);
            pipelines.extend(p);
        }
        Ok(())
    }

    /// Forgets partitions that were started but do not run: their feeds stop, their maps
    /// leave the registry.
    fn forget(&mut self, keys: &[Key]) {
        for key in keys {
            if let Some(r) = self.partitions.remove(key) {
                r.feed.with_cursor(|c| c.stopped = true);
            }
            if let Some(eos) = self.role.eos_mut() {
                eos.forget(key);
            }
            self.registry.remove(&key.0, key.1);
        }
    }

    /// With `start_position = "takeover"`: the watch of every partition of `topics` that
    /// may be taken over (not running, ours to start, no saved state), made once for the
    /// whole start (`crate::takeover`, rule 1). `None` otherwise.
    async fn takeover_watch(
        &self,
        topics: &[ReplicatedTopic],
    ) -> Result<Option<crate::takeover::Watch>, MirrorError> {
        if self.flow.start_position != StartPosition::Takeover {
            return Ok(None);
        }
        let todo: Vec<(ReplicatedTopic, Vec<i32>)> = topics
            .iter()
            .map(|t| {
                let new = (0..t.partitions)
                    .map(|p| (t.source_topic.clone(), p))
                    .filter(|k| {
                        !self.partitions.running().contains_key(k)
                            && self.role.may_start(k)
                            && !self.saved.contains_key(k)
                    })
                    .map(|(_, p)| p)
                    .collect();
                (t.clone(), new)
            })
            .collect();
        let watch = crate::takeover::watch(&self.source, &self.target, &self.flow, &todo).await?;
        Ok(Some(watch))
    }

    pub(super) async fn start_partitions(
        &mut self,
        t: &ReplicatedTopic,
        partitions: &[i32],
    ) -> Result<(Vec<(Key, PartitionState)>, Vec<Pipeline>), MirrorError> {
        self.start_partitions_watched(t, partitions, None).await
    }

    /// [`FlowRun::start_partitions`] with the takeover watch of this start, if any.
    async fn start_partitions_watched(
        &mut self,
        t: &ReplicatedTopic,
        partitions: &[i32],
        watch: Option<&crate::takeover::Watch>,
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
        let chosen = match self.flow.start_position {
            StartPosition::Takeover => self.offsets_by_takeover(t, &src, &dst, watch).await?,
            _ => self.offsets_by_time(t, &src).await?,
        };
        let mut births = Vec::new();
        // Shared by the topic's partitions (10,000 partitions: one copy, not one each).
        let shared = self.topic_spec(t, max_batch_bytes);
        for &p in partitions {
            let (Some(s), Some(d)) = (src.get(&p), dst.get(&p)) else {
                continue;
            };
            let started = self.start_partition(t, &shared, p, *s, *d, chosen.get(&p).copied());
            let (birth, pipeline) = started?;
            births.extend(birth);
            pipelines.push(pipeline);
        }
        Ok((births, pipelines))
    }

    /// What every partition of `t` shares: names, limits, policies, the budget and the
    /// exactly-once barrier.
    fn topic_spec(&self, t: &ReplicatedTopic, max_batch_bytes: usize) -> Arc<TopicSpec> {
        let flow = &self.flow;
        Arc::new(TopicSpec {
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
            gate: self.role.eos().map(|e| Arc::clone(e.gate())),
        })
    }

    /// Starts partition `p` of `t` (bounds `s` at the source and `d` at the target;
    /// `chosen`: where a timestamp or takeover start position puts it): its map, the
    /// range recovery checks, its feed on the router and its pipeline, not yet spawned;
    /// with its birth state when that must be written before the pipeline starts.
    fn start_partition(
        &mut self,
        t: &ReplicatedTopic,
        shared: &Arc<TopicSpec>,
        p: i32,
        s: Bounds,
        d: Bounds,
        chosen: Option<i64>,
    ) -> Result<(Option<(Key, PartitionState)>, Pipeline), MirrorError> {
        let key = (t.source_topic.clone(), p);
        let saved = self.saved.get(&key);
        let (mut map, tail, birth) =
            initial_map(&self.flow, &self.metrics, saved, t, p, (s, d), chosen)?;
        let (recovery, start_gap) = self.recovery(t, p, d, tail);
        let birth_state = birth.then(|| (key.clone(), birth_state(t, &mut map)));
        let position = map.next(Side::Source) as i64;
        let writer = self.register(&key, map)?;
        let map: SharedMap = Arc::new(Mutex::new(writer));
        let progress = Arc::new(Progress::default());
        progress.end.store(s.end, Ordering::Relaxed);
        let feed = self.feed(t, shared, p, position);
        let spec = PartitionSpec {
            shared: Arc::clone(shared),
            partition: p,
            until: self.once.then(|| self.partitions.once_end(&key, s.end)),
            start_gap,
        };
        if recovery.remaining() > 0 {
            tracing::info!(flow = %self.flow.name, topic = %t.source_topic, partition = p,
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
        let pipeline: Pipeline = (key.clone(), Box::pin(pipeline));
        self.partitions.insert(
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
        Ok((birth_state, pipeline))
    }

    /// Partition `p`'s feed from the source, read from `position` by the id of the topic
    /// its map belongs to (a re-created topic is refused, never read at this position).
    fn feed(
        &self,
        t: &ReplicatedTopic,
        shared: &TopicSpec,
        p: i32,
        position: i64,
    ) -> Arc<PartitionFeed> {
        let pm = self.metrics.partition(&self.flow.name, &t.source_topic, p);
        let feed = PartitionFeed::new(
            Arc::clone(&shared.source_topic),
            p,
            position,
            FEED_DEPTH,
            pm,
        );
        feed.set_topic_id(t.topic_id);
        feed
    }

    /// What partition `p` of `t` checks before producing (target bounds `d`; `tail`: the
    /// target range past its map): the records recovery reads back and matches by
    /// content, and the gap it starts with (exactly-once: the offsets past the last
    /// commit, skipped, never read back).
    fn recovery(
        &self,
        t: &ReplicatedTopic,
        p: i32,
        d: Bounds,
        tail: Option<(i64, i64)>,
    ) -> (Recovery, u64) {
        let flow = &self.flow;
        // Exactly-once: past the committed map the target holds only our markers and
        // aborted batches (invisible to read_committed consumers); nothing to read back.
        let start_gap = match (self.role.eos(), tail) {
            (Some(_), Some((from, end))) => u64::try_from(end - from).unwrap_or(0),
            _ => 0,
        };
        let tail = if self.role.transactional() {
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
        (recovery, start_gap)
    }

    /// Registers partition `key`'s map (its committed copy in exactly-once mode, where the
    /// pipeline writes its own): the writer the pipeline records with.
    fn register(&mut self, key: &Key, map: OffsetMap) -> Result<MapWriter, MirrorError> {
        let (topic, p) = (&key.0, key.1);
        // Re-register after a restart of the partition (not today: topics only grow).
        self.registry.remove(topic, p);
        let writer = match self.role.eos_mut() {
            // The registry gets the committed copy; the pipeline writes its own.
            Some(eos) => {
                let committed = self
                    .registry
                    .register(topic, p, map.clone())
                    .map_err(|e| MirrorError::state(e.to_string()))?;
                eos.started(key, committed);
                MapWriter::new(map)
            }
            None => self
                .registry
                .register(topic, p, map)
                .map_err(|e| MirrorError::state(e.to_string()))?,
        };
        Ok(writer)
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
                .map_err(|e| e.cluster(&self.flow.source))?;
        Ok(found
            .into_iter()
            .filter_map(|(p, f)| match f.offset {
                crate::replay::decide::TimeOffset::At(o) => Some((p, o)),
                crate::replay::decide::TimeOffset::None => None,
            })
            .collect())
    }

    /// With `topics.start_position = "takeover"`: per partition not started before, the
    /// source offset right after the last record MirrorMaker 2 copied, proven by content
    /// ([`crate::takeover`]); an error naming the partition when it cannot be proven.
    async fn offsets_by_takeover(
        &self,
        t: &ReplicatedTopic,
        src: &BTreeMap<i32, Bounds>,
        dst: &BTreeMap<i32, Bounds>,
        watch: Option<&crate::takeover::Watch>,
    ) -> Result<BTreeMap<i32, i64>, MirrorError> {
        let new: BTreeMap<i32, (Bounds, Bounds)> = src
            .iter()
            .filter(|(p, _)| !self.saved.contains_key(&(t.source_topic.clone(), **p)))
            .filter_map(|(p, s)| dst.get(p).map(|d| (*p, (*s, *d))))
            .collect();
        if new.is_empty() {
            return Ok(BTreeMap::new());
        }
        // Started outside a topic refresh (a restart found no saved state): watched now,
        // and the target ends read again after the watch.
        let own;
        let mut new = new;
        let watch = match watch {
            Some(w) => w,
            None => {
                let parts: Vec<i32> = new.keys().copied().collect();
                let todo = [(t.clone(), parts.clone())];
                own = crate::takeover::watch(&self.source, &self.target, &self.flow, &todo).await?;
                let after = bounds(
                    &self.target,
                    &t.target_topic,
                    &parts,
                    IsolationLevel::ReadUncommitted,
                )
                .await
                .map_err(|e| {
                    MirrorError::kafka("takeover: target bounds", e).topic(&t.target_topic)
                })?;
                for (p, (_, d)) in new.iter_mut() {
                    if let Some(a) = after.get(p) {
                        *d = *a;
                    }
                }
                &own
            }
        };
        let starts =
            crate::takeover::starts(&self.source, &self.target, &self.flow, t, &new, watch).await?;
        Ok(starts
            .into_iter()
            .map(|(p, s)| (p, s.source_next))
            .collect())
    }
}

/// The state a partition is born with (written before its pipeline starts): its topic's
/// id and target, and a snapshot of its first map.
fn birth_state(t: &ReplicatedTopic, map: &mut OffsetMap) -> PartitionState {
    PartitionState {
        topic_id: t.topic_id,
        target_topic: t.target_topic.clone(),
        snapshot: map.snapshot().bytes,
    }
}
