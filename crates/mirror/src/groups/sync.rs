//! [`GroupSync`]: one round of group-offset sync against real clusters; `round` holds the
//! round's steps for each group and what it gathers before the checkpoints are written.

mod round;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use strait_client::protocol::messages::describe_groups_response::DescribedGroup;
use strait_client::{Client, CommitOffset, CommittedOffset, GroupMember};
use strait_offsets::Registry;

use self::round::Round;
use super::checkpoint::checkpoints_topic;
use super::decide::{PartitionInput, TargetGroup};
use super::provenance::{Provenance, SharedProvenance, lock};
use crate::config::{Flow, TopicDecision};
use crate::error::MirrorError;
use crate::metrics::Metrics;
use crate::topics::internal::InternalTopicWriter;

/// Kafka's GROUP_ID_NOT_FOUND: DescribeGroups of a group the target has never seen.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// `(target topic, partition)` → the `(upstream, downstream)` offsets last checkpointed.
type Checkpointed = HashMap<(String, i32), (i64, i64)>;

/// What one [`GroupSync::sync_once`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSyncReport {
    /// Source groups accepted by the flow's group filter.
    pub groups_seen: usize,
    /// Groups with at least one translated position.
    pub groups_translated: usize,
    /// Offsets committed on the target.
    pub offsets_committed: usize,
    /// Positions past the replicated end, retried next round.
    pub pending: usize,
    /// Groups not committed because they are active on the target.
    pub skipped_active: usize,
    /// Checkpoint records written.
    pub checkpoints_written: usize,
    /// Translations not committed because the target group is already further on.
    pub skipped_behind: usize,
    /// Positions without an offset map, or whose records are gone.
    pub untranslatable: usize,
    /// Groups known from earlier rounds that the source no longer lists (deleted) or the
    /// filter no longer accepts: their caches and metric series were dropped.
    pub groups_forgotten: usize,
}

/// Drops the per-group state of every group not in `live` (sorted) and returns those
/// groups, sorted. Pending positions need no pruning: they are rebuilt each round.
fn forget_gone(
    live: &[String],
    last_checkpoints: &mut HashMap<String, Checkpointed>,
    last_complete: &mut HashMap<String, Instant>,
) -> Vec<String> {
    let alive = |g: &String| live.binary_search(g).is_ok();
    let mut gone: Vec<String> = last_checkpoints
        .keys()
        .chain(last_complete.keys())
        .filter(|g| !alive(g))
        .cloned()
        .collect();
    gone.sort();
    gone.dedup();
    last_checkpoints.retain(|g, _| alive(g));
    last_complete.retain(|g, _| alive(g));
    gone
}

/// Syncs one flow's consumer groups.
#[derive(Debug)]
pub struct GroupSync {
    flow: Flow,
    source: Client,
    target: Client,
    maps: Arc<Registry>,
    metrics: Metrics,
    checkpoints: InternalTopicWriter,
    /// Per group: the `(upstream, downstream)` last written per `(target topic, partition)`.
    last_checkpoints: HashMap<String, Checkpointed>,
    /// Per group: when every position last translated (or when first seen).
    last_complete: HashMap<String, Instant>,
    /// Positions waiting for replication, by `(group, source topic, partition)`.
    pending: HashMap<(String, String, i32), i64>,
    /// What this sync committed, shared with the flow's reverse sync.
    provenance: SharedProvenance,
}

impl GroupSync {
    /// A group sync for `flow`; `maps` holds the offset maps keyed by *source* topic and
    /// partition (shared with the data path, which writes them).
    pub fn new(
        flow: &Flow,
        source: Client,
        target: Client,
        maps: Arc<Registry>,
        metrics: Metrics,
    ) -> Self {
        let topic = checkpoints_topic(&flow.source, flow.policy.separator());
        GroupSync {
            flow: flow.clone(),
            checkpoints: InternalTopicWriter::new(target.clone(), &topic, flow.replication_factor),
            source,
            target,
            maps,
            metrics,
            last_checkpoints: HashMap::new(),
            last_complete: HashMap::new(),
            pending: HashMap::new(),
            provenance: Provenance::shared(),
        }
    }

    /// The record of what this sync committed, for the flow's
    /// [`ReverseSync`](super::ReverseSync) ([`super::provenance`]).
    pub fn provenance(&self) -> SharedProvenance {
        Arc::clone(&self.provenance)
    }

    /// Replaces the maps translations read (scale-out: the flow's maps as its state topic
    /// holds them, every process's partitions).
    pub fn set_maps(&mut self, maps: Arc<Registry>) {
        self.maps = maps;
    }

    /// The positions waiting for replication to reach them: `(group, source topic,
    /// partition) → position`.
    pub fn pending(&self) -> &HashMap<(String, String, i32), i64> {
        &self.pending
    }

    /// One round: every accepted source group is translated, checkpointed and (when
    /// inactive on the target) committed. A group whose offsets cannot be read or
    /// committed is logged and skipped; errors listing source groups or writing
    /// checkpoints are returned.
    pub async fn sync_once(&mut self) -> Result<GroupSyncReport, MirrorError> {
        let mut report = GroupSyncReport::default();
        let commit = self.flow.sync.group_offsets;
        let checkpoint = self.flow.sync.checkpoints;
        if !commit && !checkpoint {
            return Ok(report);
        }
        let mut groups: Vec<String> = self
            .source
            .list_groups()
            .await
            .map_err(|e| self.src_err("list groups", e))?
            .into_iter()
            .map(|g| g.group_id)
            .filter(|g| self.flow.groups.accepts(g))
            .collect();
        groups.sort();
        groups.dedup();
        report.groups_seen = groups.len();
        self.forget_gone_groups(&groups, &mut report);

        let mut round = Round::default();
        for group in &groups {
            let Some(inputs) = self.inputs(group).await else {
                continue;
            };
            if inputs.is_empty() {
                continue;
            }
            self.sync_group(group, &inputs, &mut round, &mut report)
                .await;
        }
        let Round {
            records,
            written,
            pending,
        } = round;
        report.pending = pending.len();
        self.pending = pending;
        self.metrics
            .groups_translated(&self.flow.name, report.groups_translated as u64);

        self.write_checkpoints(records, written, &mut report)
            .await?;
        Ok(report)
    }

    /// The group's replicated source positions with translations and target offsets;
    /// `None` if they cannot be read this round (logged).
    async fn inputs(&self, group: &str) -> Option<Vec<PartitionInput>> {
        let committed = match self.source.offset_fetch(group, None).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(flow = %self.flow.name, group, error = %e,
                    "cannot read the group's source offsets; skipped this round");
                return None;
            }
        };
        let inputs: Vec<PartitionInput> = committed
            .into_iter()
            .filter(|c| c.offset >= 0)
            .filter_map(|c: CommittedOffset| {
                let TopicDecision::Replicate { target_topic } = self.flow.topic_decision(&c.topic)
                else {
                    return None;
                };
                let translation = u64::try_from(c.offset).ok().and_then(|pos| {
                    self.maps
                        .reader(&c.topic, c.partition)
                        .map(|r| r.translate(pos))
                });
                Some(PartitionInput {
                    source_topic: c.topic,
                    target_topic,
                    partition: c.partition,
                    source_offset: c.offset,
                    metadata: c.metadata.unwrap_or_default(),
                    translation,
                    target_offset: None,
                    target_is_ours: false,
                })
            })
            .collect();
        if inputs.is_empty() || !self.flow.sync.group_offsets {
            return Some(inputs);
        }
        // The target's offsets, so that nothing moves backwards.
        self.with_target_offsets(group, inputs).await
    }

    /// `inputs` with the group's offsets on the target, and whether this flow wrote
    /// each; `None` if they cannot be read this round (logged).
    async fn with_target_offsets(
        &self,
        group: &str,
        mut inputs: Vec<PartitionInput>,
    ) -> Option<Vec<PartitionInput>> {
        let mut by_topic: HashMap<String, Vec<i32>> = HashMap::new();
        for i in &inputs {
            by_topic
                .entry(i.target_topic.clone())
                .or_default()
                .push(i.partition);
        }
        let ask: Vec<(&str, &[i32])> = by_topic
            .iter()
            .map(|(t, ps)| (t.as_str(), ps.as_slice()))
            .collect();
        match self.target.offset_fetch(group, Some(&ask)).await {
            Ok(current) => {
                let provenance = lock(&self.provenance);
                for i in &mut inputs {
                    i.target_offset = current
                        .iter()
                        .find(|c| c.topic == i.target_topic && c.partition == i.partition)
                        .map(|c| c.offset)
                        .filter(|o| *o >= 0);
                    i.target_is_ours = i.target_offset.is_some_and(|o| {
                        provenance.is_forward_written(group, &i.target_topic, i.partition, o)
                    });
                }
                Some(inputs)
            }
            Err(e) => {
                tracing::warn!(flow = %self.flow.name, group, error = %e,
                    "cannot read the group's target offsets; skipped this round");
                None
            }
        }
    }

    async fn target_state(&self, group: &str) -> TargetGroup {
        describe_activity(&self.target, group).await
    }

    /// Commits; returns how many offsets were committed (0 on failure, logged: the group
    /// may have become active between DescribeGroups and OffsetCommit).
    async fn commit(&self, group: &str, commits: &[super::decide::Commit]) -> usize {
        let offsets: Vec<CommitOffset> = commits
            .iter()
            .map(|c| {
                let mut o = CommitOffset::new(&c.topic, c.partition, c.offset);
                o.metadata = Some(c.metadata.clone());
                o
            })
            .collect();
        match self
            .target
            .offset_commit(group, &GroupMember::standalone(), &offsets)
            .await
        {
            Ok(()) => {
                tracing::info!(flow = %self.flow.name, group, offsets = offsets.len(),
                    "committed translated offsets on the target");
                self.metrics
                    .group_offsets_committed(&self.flow.name, group, offsets.len() as u64);
                offsets.len()
            }
            Err(e) => {
                tracing::warn!(flow = %self.flow.name, group, error = %e,
                    "cannot commit translated offsets on the target; retrying next round");
                0
            }
        }
    }

    fn src_err(&self, what: &str, e: strait_client::Error) -> MirrorError {
        MirrorError::kafka(what, e).cluster(self.flow.source.clone())
    }
}

/// What ConsumerGroupDescribe (KIP-848, API 69) says of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerProtocolGroup {
    /// The cluster has no ConsumerGroupDescribe (Tansu, Kafka before 3.7): it has no
    /// consumer-protocol groups.
    Unsupported,
    /// Its answer for the group.
    Described {
        /// The group's error code (GROUP_ID_NOT_FOUND: no consumer-protocol group of that
        /// name, e.g. a classic group).
        error_code: i16,
        /// `Empty`, `Assigning`, `Reconciling`, `Stable`, `Dead`.
        state: String,
        /// How many members it has.
        members: usize,
    },
}

/// Whether a group may be committed to, from both protocols' descriptions: it is inactive
/// only when neither shows a member or a state other than unknown, `Empty` or `Dead`.
/// Kafka 4's classic DescribeGroups (v0-5) reports a consumer-protocol (KIP-848) group as
/// `Dead` with no members however many consume in it, so the classic answer alone would
/// let offsets be written under live consumers. `classic` is `None` when DescribeGroups
/// returned no entry for the group.
pub fn group_state(
    classic: Option<&DescribedGroup>,
    consumer: &ConsumerProtocolGroup,
) -> TargetGroup {
    if let Some(active @ TargetGroup::Active { .. }) = classic.map(target_group_state) {
        return active;
    }
    match consumer {
        ConsumerProtocolGroup::Unsupported => TargetGroup::Inactive,
        ConsumerProtocolGroup::Described {
            error_code: GROUP_ID_NOT_FOUND,
            ..
        } => TargetGroup::Inactive,
        ConsumerProtocolGroup::Described {
            error_code: 0,
            state,
            members: 0,
        } if matches!(state.as_str(), "Empty" | "Dead" | "") => TargetGroup::Inactive,
        ConsumerProtocolGroup::Described {
            error_code: 0,
            state,
            ..
        } => TargetGroup::Active {
            state: format!("{state} (consumer protocol)"),
        },
        ConsumerProtocolGroup::Described { error_code, .. } => TargetGroup::Active {
            state: format!("ConsumerGroupDescribe error {error_code}"),
        },
    }
}

/// Whether `group` has members on `client`'s cluster: DescribeGroups (classic groups) and,
/// where the cluster has it, ConsumerGroupDescribe (KIP-848 groups), read by
/// [`group_state`]. A describe that fails counts as active.
async fn describe_activity(client: &Client, group: &str) -> TargetGroup {
    let classic = match client.describe_groups(&[group]).await {
        Ok(described) => described
            .into_iter()
            .find(|g| g.group_id.0.as_str() == group),
        Err(e) => {
            return TargetGroup::Active {
                state: format!("cannot describe: {e}"),
            };
        }
    };
    let consumer = match client.consumer_group_describe(&[group]).await {
        Ok(described) => match described
            .into_iter()
            .find(|g| g.group_id.0.as_str() == group)
        {
            Some(g) => ConsumerProtocolGroup::Described {
                error_code: g.error_code,
                state: g.group_state.to_string(),
                members: g.members.len(),
            },
            None => ConsumerProtocolGroup::Described {
                error_code: GROUP_ID_NOT_FOUND,
                state: String::new(),
                members: 0,
            },
        },
        Err(e) if e.is_unsupported() => ConsumerProtocolGroup::Unsupported,
        Err(e) => {
            return TargetGroup::Active {
                state: format!("cannot describe (consumer protocol): {e}"),
            };
        }
    };
    group_state(classic.as_ref(), &consumer)
}

/// Whether a described classic group may be committed to: unknown, `Empty` or `Dead` with
/// no members is inactive; anything else (members, a rebalance, an error) is active. Only
/// half the answer on Kafka 3.7+: see [`group_state`].
pub fn target_group_state(g: &DescribedGroup) -> TargetGroup {
    let state = g.group_state.as_str();
    match g.error_code {
        GROUP_ID_NOT_FOUND => TargetGroup::Inactive,
        0 if g.members.is_empty() && matches!(state, "Empty" | "Dead" | "") => {
            TargetGroup::Inactive
        }
        0 => TargetGroup::Active {
            state: state.to_owned(),
        },
        code => TargetGroup::Active {
            state: format!("DescribeGroups error {code}"),
        },
    }
}

/// Whether `group` has members on `client`'s cluster (an error counts as active).
pub(crate) async fn activity(client: &Client, group: &str) -> super::switch::GroupActivity {
    match describe_activity(client, group).await {
        TargetGroup::Inactive => super::switch::GroupActivity::Idle,
        TargetGroup::Active { state } => super::switch::GroupActivity::Active { detail: state },
    }
}

#[cfg(test)]
mod tests;
