//! The values [`super::Membership`] takes and gives: phases, JoinGroup answers, the
//! assignment, the calls to send, the counters, and why a member lost its assignment or
//! stopped ([`GroupError`]).

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::error::Error;

/// Where the member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not in the group; the next step is a JoinGroup.
    Unjoined,
    /// A JoinGroup is in flight.
    Joining,
    /// Joined a generation; the SyncGroup is next or in flight.
    AwaitingSync,
    /// Holds the assignment of the current generation and heartbeats.
    Stable,
    /// Rejoining a rebalance while keeping the previous assignment (rule 6).
    Rebalancing,
    /// A LeaveGroup is next or in flight.
    Leaving,
    /// Left the group (final).
    Left,
    /// Stopped on a fatal error (final).
    Failed,
}

/// One member as the JoinGroup answer lists it (to the leader only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// Its `group.instance.id`, for a static member.
    pub instance_id: Option<String>,
    /// Its metadata for the chosen protocol (opaque to the client).
    pub metadata: Bytes,
}

/// A successful JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// Our member id.
    pub member_id: String,
    /// The new generation.
    pub generation: i32,
    /// The leader's member id.
    pub leader_id: String,
    /// The protocol the coordinator chose.
    pub protocol: String,
    /// The protocol type the coordinator reports (JoinGroup v7+), checked against ours.
    pub protocol_type: Option<String>,
    /// Every member with its metadata (non-empty for the leader only).
    pub members: Vec<JoinedMember>,
    /// KIP-814 (JoinGroup v9+): a static leader rejoined a stable group; it must not
    /// assign again (the coordinator keeps the current assignment).
    pub skip_assignment: bool,
}

/// What a JoinGroup answered, as far as the machine cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinAnswer {
    /// Joined a generation.
    Joined(Joined),
    /// MEMBER_ID_REQUIRED: rejoin with this member id.
    MemberIdRequired(String),
}

/// The assignment this member holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The generation it belongs to (stamp it on what the assignment writes).
    pub generation: i32,
    /// Our member id in that generation.
    pub member_id: String,
    /// The leader's member id.
    pub leader_id: String,
    /// The protocol chosen for the generation.
    pub protocol: String,
    /// The leader's assignment for us (opaque to the client).
    pub data: Bytes,
}

impl Assignment {
    /// True when we are the leader of the generation.
    pub fn is_leader(&self) -> bool {
        self.member_id == self.leader_id
    }
}

/// A JoinGroup to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinCall {
    /// The member id we hold ("" at first).
    pub member_id: String,
    /// `group.instance.id`, for a static member.
    pub instance_id: Option<String>,
}

/// A SyncGroup to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncCall {
    /// The generation joined.
    pub generation: i32,
    /// Our member id.
    pub member_id: String,
    /// `group.instance.id`, for a static member.
    pub instance_id: Option<String>,
    /// The protocol chosen.
    pub protocol: String,
    /// As the leader: every member, to compute the assignments from; `None` as a follower.
    pub leader_of: Option<Vec<JoinedMember>>,
}

/// A Heartbeat to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatCall {
    /// The generation we are in.
    pub generation: i32,
    /// Our member id.
    pub member_id: String,
    /// `group.instance.id`, for a static member.
    pub instance_id: Option<String>,
}

/// A LeaveGroup to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveCall {
    /// Our member id.
    pub member_id: String,
    /// `group.instance.id`, for a static member.
    pub instance_id: Option<String>,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send a JoinGroup, answer with [`Membership::on_join`](super::Membership::on_join).
    Join(JoinCall),
    /// (Leader: compute the assignments, then) send a SyncGroup, answer with
    /// [`Membership::on_sync`](super::Membership::on_sync).
    Sync(SyncCall),
    /// Send a Heartbeat, answer with [`Membership::on_heartbeat`](super::Membership::on_heartbeat).
    Heartbeat(HeartbeatCall),
    /// Send a LeaveGroup, answer with [`Membership::on_leave`](super::Membership::on_leave).
    Leave(LeaveCall),
    /// Nothing to send before this instant (a heartbeat, a retry, or the fence deadline).
    /// Call [`Membership::tick`](super::Membership::tick) then, or [`Membership::next_step`](super::Membership::next_step) again.
    Wait(Instant),
    /// A call is in flight: wait for its answer (but call [`Membership::tick`](super::Membership::tick) at the fence
    /// deadline, [`Membership::fence_deadline`](super::Membership::fence_deadline)).
    AwaitAnswer,
    /// Left or failed: nothing more to do.
    Done,
}

/// Counters of one member's life in the group (for metrics and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// JoinGroup requests sent.
    pub joins: u64,
    /// MEMBER_ID_REQUIRED answers (KIP-394).
    pub member_id_required: u64,
    /// Assignments received (completed SyncGroups).
    pub assignments: u64,
    /// Times the assignment was lost (expelled, fenced, self-fenced).
    pub lost: u64,
    /// Keep-alive heartbeats the coordinator confirmed while a JoinGroup or SyncGroup
    /// waited (rule 15).
    pub keepalives_confirmed: u64,
}

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
