//! Classic group membership (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) for any
//! protocol type: Strait's workers join with `strait`, as Kafka Connect's join with
//! `connect`. The client treats member metadata and assignments as opaque bytes; the
//! caller's [`Protocol`] writes the metadata and, on the elected leader, computes the
//! assignment.
//!
//! - [`membership`]: [`Membership`], the pure state machine (its rules are listed there),
//!   with static membership (KIP-345), MEMBER_ID_REQUIRED (KIP-394) and the self-fence
//!   deadline.
//! - [`member`]: [`GroupMember`], the async driver: one task that joins, syncs and
//!   heartbeats, publishing a [`GroupView`] (phase, assignment, generation) on a watch
//!   channel.
//!
//! Cooperative rebalancing (KIP-429) is the caller's protocol: the machine keeps the
//! assignment it holds while it rejoins, the caller's assignor hands a moved partition to
//! its new owner only after the old owner released it, and the old owner calls
//! [`GroupMember::rejoin`] once it has.

mod config;
pub mod member;
pub mod membership;
mod types;

#[cfg(test)]
mod tests;

pub use member::{GroupMember, GroupView, Protocol, Rejoiner};
pub use membership::{
    Assignment, JoinAnswer, Joined, JoinedMember, Membership, MembershipConfig, Phase, Stats, Step,
};

use std::time::Duration;

use crate::error::Error;

/// Why a member lost its assignment or stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GroupError {
    /// UNKNOWN_MEMBER_ID: the coordinator expelled the member; it rejoins with a new id.
    #[error("the coordinator no longer knows member {member_id:?}; rejoining as a new member")]
    UnknownMember {
        /// The member id the coordinator forgot.
        member_id: String,
    },
    /// ILLEGAL_GENERATION: the group moved to a new generation without us; rejoining.
    #[error("the group moved to a new generation without this member; rejoining")]
    IllegalGeneration,
    /// FENCED_INSTANCE_ID: another process runs with the same `group.instance.id` (fatal).
    #[error(
        "another member joined with group.instance.id {instance_id:?}: two processes share \
         one instance id; this one stops"
    )]
    FencedInstance {
        /// The shared instance id.
        instance_id: String,
    },
    /// The member could not confirm its membership for `session timeout − fence margin`
    /// and gave its assignment up before the coordinator could give it away.
    #[error("no heartbeat answered for {silent_for:?}: gave the assignment up (self-fence)")]
    SelfFenced {
        /// Time since the send time of the last confirmed request.
        silent_for: Duration,
    },
    /// The coordinator refused the member for good (a non-retriable error).
    #[error("the group coordinator refused this member: {0}")]
    Refused(Error),
    /// The caller's protocol failed: the leader's assignor, or writing the metadata.
    #[error("the group protocol failed: {0}")]
    Assignor(String),
    /// The coordinator's answer made no sense.
    #[error("group protocol violation: {0}")]
    Protocol(String),
}

impl GroupError {
    /// True when the member stopped for good (it does not rejoin).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            GroupError::FencedInstance { .. }
                | GroupError::Refused(_)
                | GroupError::Assignor(_)
                | GroupError::Protocol(_)
        )
    }
}
