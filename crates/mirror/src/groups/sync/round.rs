//! The steps of one [`GroupSync::sync_once`] round: the groups gone forgotten, each
//! group decided, counted and committed, and the round's checkpoints written.

use std::collections::HashMap;
use std::time::Instant;

use super::{Checkpointed, GroupSync, GroupSyncReport, forget_gone};
use crate::error::MirrorError;
use crate::groups::decide::{GroupDecision, PartitionInput, TargetGroup, decide};
use crate::groups::provenance::lock;

/// What one round gathers over its groups: the checkpoints to write and the positions
/// waiting for replication.
#[derive(Default)]
pub(super) struct Round {
    /// Checkpoint records, encoded.
    pub(super) records: Vec<(Vec<u8>, Vec<u8>)>,
    /// (group, checkpoint key, value), remembered once the write succeeded.
    pub(super) written: Vec<(String, Checkpointed)>,
    /// Positions waiting for replication, by `(group, source topic, partition)`.
    pub(super) pending: HashMap<(String, String, i32), i64>,
}

impl GroupSync {
    /// Forgets the groups deleted on the source or no longer accepted, and their series.
    pub(super) fn forget_gone_groups(&mut self, groups: &[String], report: &mut GroupSyncReport) {
        for gone in forget_gone(groups, &mut self.last_checkpoints, &mut self.last_complete) {
            tracing::debug!(flow = %self.flow.name, group = %gone,
                "group gone from the source (or no longer accepted): its state is dropped");
            self.metrics.remove_group(&self.flow.name, &gone);
            report.groups_forgotten += 1;
        }
    }

    /// Decides one group with positions to translate, counts the decision, gathers its
    /// pending positions and checkpoints into `round`, and commits what it says.
    pub(super) async fn sync_group(
        &mut self,
        group: &str,
        inputs: &[PartitionInput],
        round: &mut Round,
        report: &mut GroupSyncReport,
    ) {
        let (commit, checkpoint) = (self.flow.sync.group_offsets, self.flow.sync.checkpoints);
        let state = if commit {
            self.target_state(group).await
        } else {
            TargetGroup::Inactive
        };
        let last = self.last_checkpoints.entry(group.to_owned()).or_default();
        let d = decide(group, &state, inputs, commit, checkpoint, last);
        self.count_decision(group, &state, &d, report);
        for p in &d.pending {
            round.pending.insert(
                (group.to_owned(), p.source_topic.clone(), p.partition),
                p.position,
            );
        }
        self.note_staleness(group, &d);
        for c in &d.checkpoints {
            round.records.push((c.encode_key(), c.encode_value()));
            round.written.push((
                group.to_owned(),
                [(
                    (c.topic.clone(), c.partition),
                    (c.upstream_offset, c.downstream_offset),
                )]
                .into(),
            ));
        }
        if !d.commits.is_empty() {
            self.commit_decided(group, inputs, &d, report).await;
        }
    }

    /// Counts a group's decision in the report (and logs a group active on the target).
    fn count_decision(
        &self,
        group: &str,
        state: &TargetGroup,
        d: &GroupDecision,
        report: &mut GroupSyncReport,
    ) {
        if d.translated > 0 {
            report.groups_translated += 1;
        }
        if d.skipped_active > 0 {
            report.skipped_active += 1;
            tracing::debug!(flow = %self.flow.name, group, ?state,
                "group is active on the target; offsets not committed");
        }
        report.skipped_behind += d.behind;
        report.untranslatable += d.untranslatable;
    }

    /// Sets the group's translation staleness: the time since every position last
    /// translated (or since it was first seen).
    fn note_staleness(&mut self, group: &str, d: &GroupDecision) {
        let now = Instant::now();
        let since = self.last_complete.entry(group.to_owned()).or_insert(now);
        if d.pending.is_empty() && d.untranslatable == 0 {
            *since = now;
        }
        self.metrics.group_translation_staleness(
            &self.flow.name,
            group,
            now.duration_since(*since).as_secs_f64(),
        );
    }

    /// Commits the decided offsets on the target and, when any were committed, records
    /// them (with the source offset each came from) as forward sync's own.
    async fn commit_decided(
        &self,
        group: &str,
        inputs: &[PartitionInput],
        d: &GroupDecision,
        report: &mut GroupSyncReport,
    ) {
        let done = self.commit(group, &d.commits).await;
        report.offsets_committed += done;
        if done > 0 {
            let mut provenance = lock(&self.provenance);
            for c in &d.commits {
                let source = inputs
                    .iter()
                    .find(|i| i.target_topic == c.topic && i.partition == c.partition)
                    .map_or(-1, |i| i.source_offset);
                provenance.forward_committed(group, &c.topic, c.partition, c.offset, source);
            }
        }
    }

    /// Writes the round's checkpoints (none: nothing) and, once written, remembers them.
    pub(super) async fn write_checkpoints(
        &mut self,
        records: Vec<(Vec<u8>, Vec<u8>)>,
        written: Vec<(String, Checkpointed)>,
        report: &mut GroupSyncReport,
    ) -> Result<(), MirrorError> {
        if !records.is_empty() {
            self.checkpoints
                .write(&records)
                .await
                .map_err(|e| e.cluster(self.flow.target.clone()))?;
            for (group, done) in written {
                self.last_checkpoints.entry(group).or_default().extend(done);
            }
            report.checkpoints_written = records.len();
            self.metrics
                .checkpoints_written(&self.flow.name, records.len() as u64);
        }
        Ok(())
    }
}
