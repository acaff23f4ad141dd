//! The pure switch-over decision: for each partition a group has committed on the side it
//! leaves, what to commit on the side it moves to. No I/O.
//!
//! Failover moves a group from the source to the target through the flow's offset maps
//! (`translate`); failback moves it back (`translate_reverse`). Rules, per partition:
//! - **exact or nothing**: an exact translation is committed; a position in coarsened
//!   history is rounded down (re-reads at most `at_most` records, skips none) and is
//!   committed only with [`Options::allow_rounded`];
//! - **no map, no commit**: a partition the flow has no offset map for is refused;
//! - **never past the replicated range on failover**: a source position replication has
//!   not reached yet is refused (the command waits for replication and decides again);
//! - **target-only records have no source offset on failback**: a target position past the
//!   replicated range means the group read records that were produced on the target (or
//!   not recorded yet); they are reported with their count and refused, unless
//!   [`Options::allow_target_only`], which commits the source position right after every
//!   replicated record the group read — never an invented offset for the others;
//! - **records gone** (retention, truncation) on either side: refused, also when the
//!   offset to commit is below the log start the side it moves to has now (retention the
//!   flow's map was never told of);
//! - **never replicated**: a position before where replication started (a `latest` or
//!   timestamp start, or target records that were there before) is refused, with how many
//!   records the group would skip; [`Options::accept_inexact`] commits where replication
//!   started, and the plan says so;
//! - **never backwards**: a commit below what the group already has on the side it moves
//!   to is refused unless [`Options::allow_backwards`]; an equal one is already done;
//! - **both groups idle**: the plan may execute only when the group has no active members
//!   on the side it moves to (Kafka would reject the commit) and on the side it leaves
//!   (its consumers are still reading there), unless [`Options::force`] for the latter; a
//!   side declared gone (an unplanned failover's source, [`GroupActivity::NotChecked`])
//!   is not asked and does not block.

use strait_offsets::{Precision, Side, Translation};

/// Which way the group moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the flow's source to its target.
    Failover,
    /// From the flow's target back to its source.
    Failback,
}

impl Direction {
    /// The side the group leaves.
    pub fn from(self) -> Side {
        match self {
            Direction::Failover => Side::Source,
            Direction::Failback => Side::Target,
        }
    }

    /// Translates a position on the side the group leaves.
    pub fn translate(self, map: &strait_offsets::OffsetMap, position: u64) -> Translation {
        match self {
            Direction::Failover => map.translate(position),
            Direction::Failback => map.translate_reverse(position),
        }
    }
}

/// What the operator allowed beyond the default rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Commit positions rounded down in coarsened history.
    pub allow_rounded: bool,
    /// Commit below what the group already has on the side it moves to.
    pub allow_backwards: bool,
    /// Failback: commit the position after the last replicated record for a group that
    /// also read records produced on the target.
    pub allow_target_only: bool,
    /// Proceed although the group has active members on the side it leaves.
    pub force: bool,
    /// Commit where replication started for a position before it (skipping the records
    /// in between, which were never replicated).
    pub accept_inexact: bool,
}

/// One committed position to move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInput {
    /// Topic on the side the group leaves.
    pub from_topic: String,
    /// Topic on the side it moves to.
    pub to_topic: String,
    /// Partition (the same on both sides).
    pub partition: i32,
    /// The group's committed position on the side it leaves.
    pub from_offset: i64,
    /// The translation, `None` when no offset map covers the partition.
    pub translation: Option<Translation>,
    /// The group's committed position on the side it moves to, if any.
    pub to_offset: Option<i64>,
    /// The log start of the partition on the side it moves to, as read now (`None`: not
    /// read).
    pub to_log_start: Option<i64>,
}

/// What to do with one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Commit this offset.
    Commit {
        /// The offset to commit.
        offset: u64,
        /// Rounded down in coarsened history: re-reads at most this many records.
        rounded_by: Option<u64>,
        /// Failback: records the group read on the target that have no source offset.
        target_only: Option<u64>,
        /// Before where replication started: records the group skips (never replicated).
        skips: Option<u64>,
    },
    /// The group is already there.
    AlreadyThere {
        /// The offset it has.
        offset: u64,
    },
    /// Refused, with the reason.
    Refused {
        /// Why.
        reason: Refusal,
    },
}

/// Why a partition cannot be moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The flow has no offset map for the partition.
    NoMap,
    /// A negative committed offset.
    NoPosition,
    /// Failover: replication has not reached the position yet.
    NotYetReplicated {
        /// How far replication has got on the source.
        replicated_end: u64,
    },
    /// Failback: the group read records past the replicated range.
    TargetOnly {
        /// Records read past the replicated range.
        records: u64,
        /// The source position after every replicated record.
        source_position: u64,
    },
    /// In coarsened history, and rounding was not allowed.
    Rounded {
        /// The rounded-down offset.
        offset: u64,
        /// Records a consumer would re-read at most.
        at_most: u64,
    },
    /// Before where replication started: the records up to it were never replicated.
    BeforeReplication {
        /// Where replication started on the side the group leaves.
        replication_start: u64,
        /// Records the group would skip if moved to where replication started.
        skips: u64,
    },
    /// The records involved are gone on one side.
    Truncated {
        /// Which side lost them.
        side: Side,
        /// Its log start.
        log_start: u64,
    },
    /// The commit would move the group backwards.
    Backwards {
        /// What it has now.
        current: i64,
        /// What the translation says.
        offset: u64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoMap => write!(
                f,
                "no offset map: the flow has not replicated this partition"
            ),
            Refusal::NoPosition => write!(f, "no committed position"),
            Refusal::NotYetReplicated { replicated_end } => write!(
                f,
                "not replicated yet: replication has reached source offset {replicated_end}"
            ),
            Refusal::TargetOnly {
                records,
                source_position,
            } => write!(
                f,
                "the group read {records} records past the replicated range (produced on the \
                 target, or not recorded yet): they have no source offset; \
                 --allow-target-only commits source offset {source_position}, after every \
                 replicated record"
            ),
            Refusal::Rounded { offset, at_most } => write!(
                f,
                "in coarsened history: {offset} is rounded down (re-reads at most {at_most}); \
                 --allow-rounded commits it"
            ),
            Refusal::Truncated { side, log_start } => write!(
                f,
                "records gone on the {} side (log start {log_start})",
                side_name(*side)
            ),
            Refusal::BeforeReplication {
                replication_start,
                skips,
            } => write!(
                f,
                "before where replication started ({replication_start}): the group would \
                 skip {skips} records that were never replicated; --accept-inexact \
                 commits where replication started"
            ),
            Refusal::Backwards { current, offset } => write!(
                f,
                "would move the group back from {current} to {offset}; --allow-backwards does"
            ),
        }
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Source => "source",
        Side::Target => "target",
    }
}

/// Decides one partition.
///
/// A table of cases, kept whole: one arm per kind of translation (the module's rules for
/// what the leaving side's position gives), then the rules of the side the group moves
/// to (log start, never backwards), so every rule reads beside the others.
pub fn decide(direction: Direction, input: &PartitionInput, options: Options) -> Verdict {
    let refused = |reason| Verdict::Refused { reason };
    if input.from_offset < 0 {
        return refused(Refusal::NoPosition);
    }
    let Some(translation) = input.translation else {
        return refused(Refusal::NoMap);
    };
    let mut skips = None;
    let (offset, rounded_by, target_only) = match translation {
        Translation::Mapped {
            offset,
            precision: Precision::Exact,
        } => (offset, None, None),
        Translation::BeforeReplication {
            replication_start,
            counterpart,
        } => {
            let n = replication_start.saturating_sub(input.from_offset as u64);
            if !options.accept_inexact {
                return refused(Refusal::BeforeReplication {
                    replication_start,
                    skips: n,
                });
            }
            skips = Some(n);
            (counterpart, None, None)
        }
        Translation::Mapped {
            offset,
            precision: Precision::RoundedDown { at_most },
        } => {
            if !options.allow_rounded {
                return refused(Refusal::Rounded { offset, at_most });
            }
            (offset, Some(at_most), None)
        }
        Translation::NotYetReplicated {
            replicated_end,
            counterpart_end,
        } => match direction {
            Direction::Failover => return refused(Refusal::NotYetReplicated { replicated_end }),
            Direction::Failback => {
                let records = (input.from_offset as u64).saturating_sub(replicated_end);
                if !options.allow_target_only {
                    return refused(Refusal::TargetOnly {
                        records,
                        source_position: counterpart_end,
                    });
                }
                (counterpart_end, None, Some(records))
            }
        },
        Translation::Truncated { side, log_start } => {
            return refused(Refusal::Truncated { side, log_start });
        }
    };
    if let Some(start) = input.to_log_start.filter(|s| *s > 0 && offset < *s as u64) {
        return refused(Refusal::Truncated {
            side: direction.from().other(),
            log_start: start as u64,
        });
    }
    match input.to_offset {
        Some(current) if current >= 0 && current as u64 == offset => {
            Verdict::AlreadyThere { offset }
        }
        Some(current) if current >= 0 && current as u64 > offset && !options.allow_backwards => {
            refused(Refusal::Backwards { current, offset })
        }
        _ => Verdict::Commit {
            offset,
            rounded_by,
            target_only,
            skips,
        },
    }
}

/// Whether a group is idle on one side, as DescribeGroups tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupActivity {
    /// No members (`Empty`, `Dead`, or unknown to the coordinator).
    Idle,
    /// Members, a rebalance, or an error: treated as active.
    Active {
        /// The reported state.
        detail: String,
    },
    /// Not asked: the cluster is declared gone (an unplanned failover's source).
    NotChecked,
}

/// What keeps a whole plan from executing, if anything.
pub fn blocker(
    leaving: &GroupActivity,
    arriving: &GroupActivity,
    options: Options,
) -> Option<String> {
    if let GroupActivity::Active { detail } = arriving {
        return Some(format!(
            "the group is active on the side it moves to ({detail}): stop its consumers there \
             first (a commit for an active group is rejected)"
        ));
    }
    match leaving {
        GroupActivity::Active { detail } if !options.force => Some(format!(
            "the group is still active on the side it leaves ({detail}): stop its consumers \
             first, or --force to proceed (they keep reading there)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
