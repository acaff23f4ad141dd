//! What a worker does when its assignment changes. Pure: the engine
//! (`flow/scale_out.rs`) feeds it the assignment and what runs, and carries out the
//! [`Changes`]. The rules:
//!
//! 1. **release what is no longer ours**: a partition that runs here and is not in the
//!    assignment is stopped gracefully (in-flight batches acknowledged, its state
//!    written); the worker claims it until then.
//! 2. **no assignment, nothing owned**: a member that lost its assignment (expelled,
//!    self-fenced) releases everything, control jobs included.
//! 3. **acquire what is new**: a partition in the assignment that neither runs nor is
//!    being released is started (from the state its previous owner wrote); one assigned
//!    again while still being released starts once released.
//! 4. **control follows the assignment**: the control jobs run while the assignment
//!    holds [`PartitionId::control`] job 0, and stop as soon as it does not.
//! 5. **rejoin after releasing**: when the assignment revoked something, the worker
//!    rejoins once nothing is being released, so the leader can hand the partitions on.
//! 6. **claims**: what the worker tells the leader it owns is what runs or is being
//!    released, plus the control job while it runs.

use std::collections::BTreeSet;

use super::PartitionId;
use super::codec::{CodecError, MemberAssignment};

/// The control pseudo-partition: all of a flow's control-plane jobs, as one unit.
pub fn control_job() -> PartitionId {
    PartitionId::control(0)
}

/// What the current assignment asks of this worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// The generation of the assignment (-1: none).
    pub generation: i32,
    /// The source partitions assigned.
    pub partitions: BTreeSet<PartitionId>,
    /// Whether the control jobs are assigned.
    pub control: bool,
    /// Whether the assignment revoked anything (rule 5), until the rejoin is asked.
    pub revoked: bool,
}

impl Wanted {
    /// Nothing (rule 2).
    pub fn none() -> Self {
        Wanted {
            generation: -1,
            ..Wanted::default()
        }
    }

    /// The assignment of `generation`, as the leader encoded it.
    pub fn decode(generation: i32, data: &[u8]) -> Result<Self, CodecError> {
        let a = MemberAssignment::decode(data)?;
        let control = control_job();
        Ok(Wanted {
            generation,
            control: a.partitions.contains(&control),
            partitions: a
                .partitions
                .into_iter()
                .filter(|p| !p.is_control())
                .collect(),
            revoked: !a.revoked.is_empty(),
        })
    }
}

/// What the worker does now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Partitions to stop and release (rule 1).
    pub release: Vec<PartitionId>,
    /// Partitions to start (rule 3).
    pub acquire: Vec<PartitionId>,
    /// `Some(true)`: start the control jobs; `Some(false)`: stop them (rule 4).
    pub lead: Option<bool>,
    /// Ask for a new generation (rule 5).
    pub rejoin: bool,
    /// What to claim in the next JoinGroup (rule 6), after carrying out the changes.
    pub claims: Vec<PartitionId>,
}

/// The changes that take the worker from what `running` (and `releasing`, a subset of it
/// still stopping) and `leading` say to what `wanted` asks.
pub fn reconcile(
    wanted: &Wanted,
    running: &BTreeSet<PartitionId>,
    releasing: &BTreeSet<PartitionId>,
    leading: bool,
) -> Changes {
    let release: Vec<PartitionId> = running
        .iter()
        .filter(|p| !wanted.partitions.contains(*p) && !releasing.contains(*p))
        .cloned()
        .collect();
    let acquire: Vec<PartitionId> = wanted
        .partitions
        .iter()
        .filter(|p| !running.contains(*p) && !releasing.contains(*p))
        .cloned()
        .collect();
    let lead = (wanted.control != leading).then_some(wanted.control);
    let still_releasing = !releasing.is_empty() || !release.is_empty();
    let mut claims: BTreeSet<PartitionId> = running.iter().cloned().collect();
    claims.extend(acquire.iter().cloned());
    if wanted.control {
        claims.insert(control_job());
    }
    Changes {
        rejoin: wanted.revoked && !still_releasing,
        release,
        acquire,
        lead,
        claims: claims.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests;
