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

pub use member::{GroupMember, GroupView, Protocol, Rejoiner, wait_for_assignment};
pub use membership::{
    Assignment, JoinAnswer, Joined, JoinedMember, Membership, MembershipConfig, Phase, Stats, Step,
};
pub use types::GroupError;
