//! The pure group-sync decision: given a group's committed source offsets, their
//! translations, the target's committed offsets and the target group's state, which
//! offsets to commit on the target and which checkpoints to write. No I/O.
//!
//! Rules (DESIGN invariant 8, MM2's `syncGroupOffset`):
//! - commit only when the target group has no active members;
//! - never move a target offset backwards (and skip equal ones: nothing to do), unless the
//!   target's offset is the one this sync wrote itself: then a source group reset backwards
//!   is followed (nobody consumed on the target since; `provenance` rule 4);
//! - a position past what has been replicated is pending, never rounded;
//! - a position before where replication started is not translated: the records from it
//!   to the start were never copied, and the target's first record would skip them;
//! - a checkpoint is written for every translated position that changed since the last
//!   one written, whatever the target group's state (MM2 does the same).

use std::collections::HashMap;

use strait_offsets::Translation;

use super::checkpoint::Checkpoint;

/// The target group's state as DescribeGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetGroup {
    /// Unknown, `Empty` or `Dead`: no member can be overwritten, commits are allowed.
    Inactive,
    /// Members are (or may be) consuming: never touched.
    Active {
        /// The reported state, or why it could not be told.
        state: String,
    },
}

/// One committed source position of a group, with everything needed to decide on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInput {
    /// Source topic.
    pub source_topic: String,
    /// Target (renamed) topic.
    pub target_topic: String,
    /// Partition (the same on both sides).
    pub partition: i32,
    /// The group's committed position on the source.
    pub source_offset: i64,
    /// The group's commit metadata ("" when none).
    pub metadata: String,
    /// The translation, or `None` when no offset map covers the partition.
    pub translation: Option<Translation>,
    /// The group's committed offset on the target, if any.
    pub target_offset: Option<i64>,
    /// Whether `target_offset` is the position this sync itself last committed there
    /// ([`super::provenance`]).
    pub target_is_ours: bool,
}

/// A position that cannot be translated yet: replication has not reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Source topic.
    pub source_topic: String,
    /// Partition.
    pub partition: i32,
    /// The group's source position.
    pub position: i64,
    /// How far replication has got on the source.
    pub replicated_end: u64,
}

/// An offset to commit on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Target topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The translated offset.
    pub offset: i64,
    /// The source commit's metadata, carried over.
    pub metadata: String,
}

/// What to do for one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDecision {
    /// Offsets to commit on the target.
    pub commits: Vec<Commit>,
    /// Checkpoint records to write.
    pub checkpoints: Vec<Checkpoint>,
    /// Positions past the replicated end.
    pub pending: Vec<Pending>,
    /// Positions that translated.
    pub translated: usize,
    /// Translations at or behind the target's committed offset (not committed).
    pub behind: usize,
    /// Positions without a map, or whose records are gone (truncation, re-creation).
    pub untranslatable: usize,
    /// Commits withheld because the target group is active.
    pub skipped_active: usize,
}

/// Decides for `group`. `commit` / `checkpoint` say whether the flow syncs group offsets
/// and writes checkpoints; `last_checkpoints` holds the `(upstream, downstream)` last
/// written per `(target topic, partition)` of this group.
pub fn decide(
    group: &str,
    target: &TargetGroup,
    partitions: &[PartitionInput],
    commit: bool,
    checkpoint: bool,
    last_checkpoints: &HashMap<(String, i32), (i64, i64)>,
) -> GroupDecision {
    let mut d = GroupDecision::default();
    for p in partitions {
        if p.source_offset < 0 {
            continue;
        }
        let Some(offset) = translated(p, &mut d) else {
            continue;
        };
        d.translated += 1;
        let key = (p.target_topic.clone(), p.partition);
        if checkpoint && last_checkpoints.get(&key) != Some(&(p.source_offset, offset)) {
            d.checkpoints.push(Checkpoint {
                group: group.to_owned(),
                topic: p.target_topic.clone(),
                partition: p.partition,
                upstream_offset: p.source_offset,
                downstream_offset: offset,
                metadata: p.metadata.clone(),
            });
        }
        if !commit {
            continue;
        }
        if let TargetGroup::Active { .. } = target {
            d.skipped_active += 1;
            continue;
        }
        match p.target_offset {
            Some(current) if current == offset => {}
            Some(current) if current > offset && !p.target_is_ours => d.behind += 1,
            _ => d.commits.push(Commit {
                topic: p.target_topic.clone(),
                partition: p.partition,
                offset,
                metadata: p.metadata.clone(),
            }),
        }
    }
    d
}

/// The target offset `p`'s source position translates to; `None` (counted in `d` as
/// untranslatable, or pending replication) when there is none.
fn translated(p: &PartitionInput, d: &mut GroupDecision) -> Option<i64> {
    match p.translation {
        Some(Translation::Mapped { offset, .. }) => match i64::try_from(offset) {
            Ok(o) => Some(o),
            Err(_) => {
                d.untranslatable += 1;
                None
            }
        },
        Some(Translation::NotYetReplicated { replicated_end, .. }) => {
            d.pending.push(Pending {
                source_topic: p.source_topic.clone(),
                partition: p.partition,
                position: p.source_offset,
                replicated_end,
            });
            None
        }
        Some(Translation::Truncated { .. } | Translation::BeforeReplication { .. }) | None => {
            d.untranslatable += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests;
