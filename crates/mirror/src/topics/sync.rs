//! [`TopicSync`]: applies the topic plan to the target every refresh.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use strait_client::{AlterConfigOp, Client, NewTopic, ResourceType};
use uuid::Uuid;

use super::describe::{describe_topics, topic_states};
use super::plan::{AlterConfigs, CreateTopic, GrowPartitions, TopicPlan, plan};
use crate::config::Flow;
use crate::error::{IncidentKind, MirrorError};
use crate::metrics::Metrics;

/// Kafka's TOPIC_ALREADY_EXISTS: someone created it between our Metadata and CreateTopics.
const TOPIC_ALREADY_EXISTS: i16 = 36;

/// How long the broker may take to create topics or partitions.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// A source topic the data path replicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicatedTopic {
    /// Source name.
    pub source_topic: String,
    /// Target name.
    pub target_topic: String,
    /// The source topic id (nil when the broker reports none); a change means the source
    /// topic was re-created.
    pub topic_id: Uuid,
    /// Partitions to replicate: `0..partitions`. The smaller of the source's and the
    /// target's counts, so a target that could not grow keeps its existing partitions
    /// replicating.
    pub partitions: i32,
}

/// Keeps one flow's target topics in line with its source topics.
#[derive(Debug)]
pub struct TopicSync {
    flow: Flow,
    source: Client,
    target: Client,
    metrics: Metrics,
    /// When configs were last compared (`None`: never; compared at the first refresh).
    last_config_sync: Option<Instant>,
    /// Growths already reported as impossible, so the error is logged once per size.
    growth_reported: HashSet<(String, i32)>,
    /// Every topic the source listed at the last successful refresh (matching the flow's
    /// filter or not): a replicated topic missing here was deleted at the source.
    source_topics: BTreeSet<String>,
    /// Whether this process creates, grows and re-configures target topics (scale-out:
    /// only the member running the control jobs; the others only discover).
    writes: Arc<AtomicBool>,
}

impl TopicSync {
    /// A topic sync for `flow` between the `source` and `target` clusters.
    pub fn new(flow: &Flow, source: Client, target: Client, metrics: Metrics) -> Self {
        TopicSync {
            flow: flow.clone(),
            source,
            target,
            metrics,
            last_config_sync: None,
            growth_reported: HashSet::new(),
            source_topics: BTreeSet::new(),
            writes: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Creates, grows and re-configures target topics only while `writes` is true (else
    /// a refresh only discovers: topics missing on the target are left out until the
    /// writer creates them).
    pub fn with_writes(mut self, writes: Arc<AtomicBool>) -> Self {
        self.writes = writes;
        self
    }

    /// Every topic the source listed at the last successful [`TopicSync::refresh`].
    pub fn source_topics(&self) -> &BTreeSet<String> {
        &self.source_topics
    }

    /// Discovers, creates, grows and (every `intervals.topic_config_sync`) re-syncs the
    /// configs of the flow's topics; returns the topics the data path should replicate.
    ///
    /// A topic that cannot be created is logged, counted in
    /// `strait_topic_sync_failures_total` and left out; the others go on. Only when nothing
    /// at all can be replicated because every creation failed with a non-retriable error
    /// is that error returned.
    pub async fn refresh(&mut self) -> Result<Vec<ReplicatedTopic>, MirrorError> {
        let writes = self.writes.load(Ordering::Acquire);
        let config_due = writes
            && self.flow.sync.topic_configs
            && self
                .last_config_sync
                .is_none_or(|t| t.elapsed() >= self.flow.intervals.topic_config_sync);
        let (plan, source_ids) =
            current_plan(&self.flow, &self.source, &self.target, config_due).await?;
        if config_due {
            self.last_config_sync = Some(Instant::now());
        }
        self.source_topics = source_ids.iter().map(|(n, _)| n.clone()).collect();

        let (created, create_error) = match writes {
            true => self.create(&plan.create).await,
            false => (HashSet::new(), None),
        };
        for alter in plan.alter_configs.iter().filter(|_| writes) {
            self.alter(alter).await;
        }
        let mut grown = HashSet::new();
        for grow in plan.grow_partitions.iter().filter(|_| writes) {
            if self.grow(grow).await {
                grown.insert(grow.source_topic.clone());
            }
        }

        let out: Vec<ReplicatedTopic> = plan
            .replicate
            .iter()
            .filter_map(|r| {
                let target_partitions =
                    if created.contains(&r.source_topic) || grown.contains(&r.source_topic) {
                        r.source_partitions
                    } else {
                        r.target_partitions?
                    };
                Some(ReplicatedTopic {
                    source_topic: r.source_topic.clone(),
                    target_topic: r.target_topic.clone(),
                    topic_id: source_ids
                        .iter()
                        .find(|(n, _)| *n == r.source_topic)
                        .map_or(Uuid::nil(), |(_, id)| *id),
                    partitions: r.source_partitions.min(target_partitions),
                })
            })
            .collect();
        match create_error {
            Some(e) if out.is_empty() && !e.is_retriable() => Err(e),
            _ => Ok(out),
        }
    }

    /// Creates the planned topics; returns the source names created (or found created by
    /// someone else) and the last creation error.
    async fn create(&self, topics: &[CreateTopic]) -> (HashSet<String>, Option<MirrorError>) {
        let mut created = HashSet::new();
        if topics.is_empty() {
            return (created, None);
        }
        let specs: Vec<NewTopic> = topics
            .iter()
            .map(|c| {
                let mut t = NewTopic::new(&c.target_topic, c.partitions)
                    .with_replication_factor(c.replication_factor);
                for (k, v) in &c.configs {
                    t = t.with_config(k, v);
                }
                t
            })
            .collect();
        let results = match self.target.create_topics(&specs, ADMIN_TIMEOUT).await {
            Ok(r) => r,
            Err(e) => {
                // The whole request failed: every topic failed the same way.
                let err =
                    MirrorError::kafka("create target topics", e).cluster(self.flow.target.clone());
                tracing::error!(flow = %self.flow.name, error = %err, "cannot create target topics");
                for _ in topics {
                    self.metrics.topic_sync_failure(&self.flow.name);
                }
                return (created, Some(err));
            }
        };
        let mut last_error = None;
        for c in topics {
            let result = results.iter().find(|(n, _)| *n == c.target_topic);
            match result.map(|(_, r)| r) {
                Some(Ok(())) => {
                    tracing::info!(flow = %self.flow.name, source = %c.source_topic,
                        target = %c.target_topic, partitions = c.partitions,
                        configs = c.configs.len(), "created target topic");
                    self.metrics.topic_created(&self.flow.name);
                    created.insert(c.source_topic.clone());
                }
                Some(Err(e)) if e.kafka_code() == Some(TOPIC_ALREADY_EXISTS) => {
                    created.insert(c.source_topic.clone());
                }
                other => {
                    let err = match other {
                        Some(Err(e)) => MirrorError::kafka("create target topic", e.clone()),
                        _ => MirrorError::other("create target topic: no answer for this topic"),
                    }
                    .topic(c.target_topic.clone())
                    .cluster(self.flow.target.clone());
                    tracing::error!(flow = %self.flow.name, source = %c.source_topic,
                        error = %err, "cannot create target topic; not replicating it");
                    self.metrics.topic_sync_failure(&self.flow.name);
                    last_error = Some(err);
                }
            }
        }
        (created, last_error)
    }

    async fn alter(&self, a: &AlterConfigs) {
        let ops: Vec<AlterConfigOp> = a
            .set
            .iter()
            .map(|(k, v)| AlterConfigOp::Set(k.clone(), v.clone()))
            .chain(a.delete.iter().map(|k| AlterConfigOp::Delete(k.clone())))
            .collect();
        match self
            .target
            .incremental_alter_configs(ResourceType::Topic, &a.target_topic, &ops)
            .await
        {
            Ok(()) => {
                tracing::info!(flow = %self.flow.name, target = %a.target_topic,
                    set = ?a.set, delete = ?a.delete, "synced target topic configs");
                self.metrics
                    .topic_config_updates(&self.flow.name, ops.len() as u64);
            }
            Err(e) => {
                tracing::warn!(flow = %self.flow.name, target = %a.target_topic, error = %e,
                    "cannot update target topic configs; retrying at the next config sync");
                self.metrics.topic_sync_failure(&self.flow.name);
            }
        }
    }

    /// Grows a target topic; false if it could not (the existing partitions keep going).
    async fn grow(&mut self, g: &GrowPartitions) -> bool {
        let err = match self
            .target
            .create_partitions(&[(g.target_topic.as_str(), g.to)], ADMIN_TIMEOUT)
            .await
        {
            Ok(results) => match results.into_iter().find(|(n, _)| *n == g.target_topic) {
                Some((_, Ok(()))) => {
                    tracing::info!(flow = %self.flow.name, target = %g.target_topic,
                        from = g.from, to = g.to, "grew target topic partitions");
                    return true;
                }
                Some((_, Err(e))) => e,
                None => strait_client::Error::new(strait_client::ErrorKind::Protocol(
                    "CreatePartitions: no answer for the topic".into(),
                )),
            },
            Err(e) => e,
        };
        if self.growth_reported.insert((g.source_topic.clone(), g.to)) {
            self.metrics.topic_sync_failure(&self.flow.name);
            if err.is_unsupported() {
                self.metrics.incident(
                    &self.flow.name,
                    &g.source_topic,
                    -1,
                    IncidentKind::PartitionGrowthUnsupported,
                );
            }
            tracing::error!(flow = %self.flow.name, source = %g.source_topic,
                target = %g.target_topic, source_partitions = g.to, target_partitions = g.from,
                error = %err,
                "source topic has more partitions than the target and the target cannot grow; \
                 replicating only the first {} partitions until the target topic is grown by hand",
                g.from);
        }
        false
    }
}

/// The plan for `flow` against the clusters as they are now, and the source topic ids.
/// Configs are read for topics to create and, with `all_configs`, for every replicated
/// topic on both sides (skipped entirely when the flow does not sync configs).
pub async fn current_plan(
    flow: &Flow,
    source: &Client,
    target: &Client,
    all_configs: bool,
) -> Result<(TopicPlan, Vec<(String, Uuid)>), MirrorError> {
    let src_meta = source.metadata(None).await.map_err(|e| {
        MirrorError::kafka("list source topics", e)
            .cluster(flow.source.clone())
            .flow(flow.name.clone())
    })?;
    let dst_meta = target.metadata(None).await.map_err(|e| {
        MirrorError::kafka("list target topics", e)
            .cluster(flow.target.clone())
            .flow(flow.name.clone())
    })?;
    let ids = src_meta
        .topics
        .values()
        .map(|t| (t.name.clone(), t.id))
        .collect();
    let mut sources = topic_states(&src_meta);
    let mut targets = topic_states(&dst_meta);
    if flow.sync.topic_configs {
        // A first plan without configs says which topics matter; configs are read only
        // for topics being created, and for all replicated ones when asked.
        let first = plan(&sources, &targets, flow);
        let src_names: Vec<&str> = first
            .replicate
            .iter()
            .filter(|r| all_configs || r.target_partitions.is_none())
            .map(|r| r.source_topic.as_str())
            .collect();
        let dst_names: Vec<&str> = first
            .replicate
            .iter()
            .filter(|r| all_configs && r.target_partitions.is_some())
            .map(|r| r.target_topic.as_str())
            .collect();
        describe_topics(source, &mut sources, &src_names).await;
        describe_topics(target, &mut targets, &dst_names).await;
    }
    Ok((plan(&sources, &targets, flow), ids))
}
