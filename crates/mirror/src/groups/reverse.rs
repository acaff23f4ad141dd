//! Continuous reverse group sync (`sync.reverse_group_offsets`): for every accepted group
//! with commits on the target's replicated topics, the exact source positions of those
//! commits (`translate_reverse` through the flow's live offset maps) are committed on the
//! source — so that failback is ready at any moment — and written as MM2 checkpoints on the
//! source (`<target>.checkpoints.internal`: upstream = the target offset, downstream = the
//! source offset).
//!
//! Per partition the rules are failback's (`groups::switch`, `Direction::Failback`): exact
//! positions only, never backwards, and a target position past the replicated range (records
//! produced on the target, or not replicated yet) is left alone, never invented. A group is
//! committed on the source only while it has no active members there. A target position
//! forward sync wrote itself, or one found at start that has not moved since, is never sent
//! back ([`super::provenance`], rules 2 and 3): it derives from the source group, and
//! sending it back could undo a newer source commit or skip unreplicated source records.

use std::collections::HashMap;
use std::sync::Arc;

use strait_client::{Client, CommitOffset, GroupMember};
use strait_offsets::Registry;

use super::activity;
use super::checkpoint::{Checkpoint, checkpoints_topic};
use super::provenance::{SharedProvenance, lock};
use super::switch::{Direction, GroupActivity, Options, PartitionInput, Verdict, decide};
use crate::config::{Flow, TopicDecision};
use crate::error::MirrorError;
use crate::topics::internal::InternalTopicWriter;

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReverseReport {
    /// Groups with commits on replicated target topics.
    pub groups_seen: usize,
    /// Partitions committed on the source.
    pub committed: usize,
    /// Groups left alone because they are active on the source.
    pub skipped_active: usize,
    /// Partitions left alone (not exact, past the replicated range, or backwards).
    pub left: usize,
}

/// The reverse sync of one flow.
#[derive(Debug)]
pub struct ReverseSync {
    flow: Flow,
    source: Client,
    target: Client,
    maps: Arc<Registry>,
    checkpoints: InternalTopicWriter,
    /// What the flow's forward sync committed, and what this sync found at start.
    provenance: SharedProvenance,
}
impl ReverseSync {
    /// Replaces the maps translations read (scale-out: the flow's maps from its state
    /// topic).
    pub fn set_maps(&mut self, maps: Arc<Registry>) {
        self.maps = maps;
    }

    /// The reverse sync of `flow`; `maps` are the data path's live offset maps, and
    /// `provenance` the flow's forward sync's record ([`GroupSync::provenance`](super::GroupSync::provenance)).
    pub fn new(
        flow: &Flow,
        source: Client,
        target: Client,
        maps: Arc<Registry>,
        provenance: SharedProvenance,
    ) -> Self {
        let topic = checkpoints_topic(&flow.target, flow.policy.separator());
        ReverseSync {
            flow: flow.clone(),
            checkpoints: InternalTopicWriter::new(source.clone(), &topic, flow.replication_factor),
            source,
            target,
            maps,
            provenance,
        }
    }

    /// Whether it runs at all (`sync.reverse_group_offsets`).
    pub fn enabled(&self) -> bool {
        self.flow.sync.reverse_group_offsets
    }

    /// One round over the target's groups.
    pub async fn sync_once(&mut self) -> Result<ReverseReport, MirrorError> {
        let mut report = ReverseReport::default();
        if !self.enabled() {
            return Ok(report);
        }
        let groups = self
            .target
            .list_groups()
            .await
            .map_err(|e| MirrorError::kafka("list groups", e).cluster(&self.flow.target))?;
        let names = self.source_topics_by_target();
        let mut ids: Vec<String> = groups
            .into_iter()
            .map(|g| g.group_id)
            .filter(|g| self.flow.groups.accepts(g))
            .collect();
        ids.sort();
        ids.dedup();
        let mut checkpoints = Vec::new();
        let first_round = lock(&self.provenance).begin_reverse_round();
        for group in ids {
            let Some(mut inputs) = self.group_inputs(&group, &names, first_round).await else {
                continue;
            };
            if inputs.is_empty() {
                continue;
            }
            report.groups_seen += 1;
            if activity(&self.source, &group).await != GroupActivity::Idle {
                report.skipped_active += 1;
                continue;
            }
            self.read_source_positions(&group, &mut inputs).await;
            let commits = decide_commits(&group, &inputs, &mut checkpoints, &mut report);
            if commits.is_empty() {
                continue;
            }
            self.commit_on_source(&group, &commits, &mut report).await;
        }
        self.write_checkpoints(&checkpoints).await?;
        Ok(report)
    }

    /// Target topic → source topic, for the partitions the data path maps.
    fn source_topics_by_target(&self) -> HashMap<String, String> {
        self.maps
            .partitions()
            .into_iter()
            .filter_map(|(source, _)| match self.flow.topic_decision(&source) {
                TopicDecision::Replicate { target_topic } => Some((target_topic, source)),
                _ => None,
            })
            .collect()
    }

    /// The group's target commits on replicated topics that may be sent back, each with
    /// its reverse translation (`None`: its target offsets could not be read; logged).
    async fn group_inputs(
        &self,
        group: &str,
        names: &HashMap<String, String>,
        first_round: bool,
    ) -> Option<Vec<PartitionInput>> {
        let committed = match self.target.offset_fetch(group, None).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(flow = %self.flow.name, group, error = %e,
                    "reverse sync: cannot read the group's target offsets; skipped");
                return None;
            }
        };
        let mut inputs = Vec::new();
        for c in committed.into_iter().filter(|c| c.offset >= 0) {
            let Some(source_topic) = names.get(&c.topic) else {
                continue;
            };
            if !lock(&self.provenance).may_send_back(
                first_round,
                group,
                &c.topic,
                c.partition,
                c.offset,
            ) {
                continue;
            }
            let translation = self
                .maps
                .reader(source_topic, c.partition)
                .map(|r| r.translate_reverse(c.offset as u64));
            inputs.push(PartitionInput {
                from_topic: c.topic.clone(),
                to_topic: source_topic.clone(),
                partition: c.partition,
                from_offset: c.offset,
                translation,
                to_offset: None,
                to_log_start: None,
            });
        }
        Some(inputs)
    }

    /// Fills in each input's current commit of the group on the source (`None`: none, or
    /// it could not be read).
    async fn read_source_positions(&self, group: &str, inputs: &mut [PartitionInput]) {
        for i in inputs {
            let asked = [i.partition];
            i.to_offset = self
                .source
                .offset_fetch(group, Some(&[(i.to_topic.as_str(), &asked)]))
                .await
                .ok()
                .and_then(|o| o.first().map(|o| o.offset))
                .filter(|o| *o >= 0);
        }
    }

    /// Commits `commits` for the group on the source; a failure is logged and retried
    /// next round.
    async fn commit_on_source(
        &self,
        group: &str,
        commits: &[CommitOffset],
        report: &mut ReverseReport,
    ) {
        match self
            .source
            .offset_commit(group, &GroupMember::standalone(), commits)
            .await
        {
            Ok(()) => {
                report.committed += commits.len();
                tracing::debug!(flow = %self.flow.name, group, partitions = commits.len(),
                    "reverse sync: committed the group's target positions on the source");
            }
            Err(e) => tracing::warn!(flow = %self.flow.name, group, error = %e,
                "reverse sync: cannot commit on the source; retrying next round"),
        }
    }

    /// Writes the round's checkpoints to the source's checkpoints topic (none: nothing).
    async fn write_checkpoints(&mut self, checkpoints: &[Checkpoint]) -> Result<(), MirrorError> {
        if !checkpoints.is_empty() {
            let records: Vec<(Vec<u8>, Vec<u8>)> = checkpoints
                .iter()
                .map(|c| (c.encode_key(), c.encode_value()))
                .collect();
            self.checkpoints
                .write(&records)
                .await
                .map_err(|e| e.cluster(&self.flow.source))?;
        }
        Ok(())
    }
}

/// The failback decision for each of the group's inputs: the commits to make on the
/// source, each with its checkpoint; refused partitions are counted in `report`.
fn decide_commits(
    group: &str,
    inputs: &[PartitionInput],
    checkpoints: &mut Vec<Checkpoint>,
    report: &mut ReverseReport,
) -> Vec<CommitOffset> {
    let mut commits = Vec::new();
    for i in inputs {
        match decide(Direction::Failback, i, Options::default()) {
            Verdict::Commit { offset, .. } => {
                commits.push(CommitOffset {
                    topic: i.to_topic.clone(),
                    partition: i.partition,
                    offset: offset as i64,
                    leader_epoch: -1,
                    metadata: None,
                });
                checkpoints.push(Checkpoint {
                    group: group.to_owned(),
                    topic: i.to_topic.clone(),
                    partition: i.partition,
                    upstream_offset: i.from_offset,
                    downstream_offset: offset as i64,
                    metadata: String::new(),
                });
            }
            Verdict::AlreadyThere { .. } => {}
            Verdict::Refused { .. } => report.left += 1,
        }
    }
    commits
}
