//! Scale-out: several `strait run`
//! processes of one flow share its partitions through a Kafka group with protocol type
//! `strait` ([`strait_client::group`]).
//!
//! - [`codec`]: the member metadata (worker version, host, capacity, what it owns) and the
//!   per-member assignment, as versioned, checksummed bytes.
//! - [`assign`](mod@assign): the leader's pure assignor: one owner per partition, balanced by lag and
//!   throughput, sticky, and cooperative (a moving partition is revoked in one generation
//!   and assigned in a later one).
//! - [`protocol`]: the two wired together as a [`strait_client::group::Protocol`].
//! - [`reconcile`]: what a worker starts, releases and claims when its assignment changes
//!   (the engine's side, driven by `flow/scale_out.rs`).
//! - [`topology`]: what every member must agree on (guarantee, slots, transactional id),
//!   carried in the protocol name so that the coordinator refuses a member that disagrees.

pub mod assign;
pub mod codec;
pub mod protocol;
pub mod reconcile;
pub mod sole_writer;
pub mod topology;

#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use assign::{Member, Move, Plan, assign};
pub use codec::{CodecError, MemberAssignment, MemberMetadata};
pub use topology::Topology;

/// The protocol type Strait's workers join their flow's group with.
pub const PROTOCOL_TYPE: &str = "strait";

/// The protocol name (one for now; a new assignor would add a second name, and the
/// coordinator picks one every member supports). v2: [`slot_of`] spreads a topic's
/// partitions round-robin (v1 hashed them with CRC-32C, which left slots empty). Members
/// of the two versions cannot share a group — they would disagree on which slot writes a
/// partition — so the coordinator refuses the join (INCONSISTENT_GROUP_PROTOCOL) until
/// every member of the other version has left.
pub const PROTOCOL_NAME: &str = "strait-cooperative-v2";

/// A source partition of a flow.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId {
    /// The source topic.
    pub topic: Arc<str>,
    /// The partition number.
    pub partition: i32,
}

/// The pseudo-topic of control-plane jobs: `<` and `>` cannot appear in a Kafka topic
/// name, so no source partition can collide with one.
pub const CONTROL_TOPIC: &str = "<control>";

/// The pseudo-topic of exactly-once slots ([`PartitionId::slot`]).
pub const SLOT_TOPIC: &str = "<slot>";

/// The exactly-once slot of source partition `topic`-`partition` among `slots`: the
/// topic's offset (CRC-32C of its name, modulo `slots`) plus the partition number, modulo
/// `slots`. A topic's partitions go round-robin from its offset, so each slot holds
/// ⌊n/slots⌋ or ⌈n/slots⌉ of its n partitions, and the offsets spread the remainders of
/// several topics. Every member of a group must agree: it is part of [`PROTOCOL_NAME`]'s
/// version. (v1 took CRC-32C of name and partition modulo `slots`: CRC is linear, so for
/// a power-of-two count of slots consecutive partitions reached a fraction of them — 16
/// partitions filled 8 of 16 slots.)
pub fn slot_of(topic: &str, partition: i32, slots: u32) -> u32 {
    let slots = u64::from(slots.max(1));
    let offset = u64::from(crc32c::crc32c(topic.as_bytes())) % slots;
    let p = u64::try_from(partition).unwrap_or(0) % slots;
    // Below `slots`, which is a u32.
    u32::try_from((offset + p) % slots).unwrap_or(0)
}

impl PartitionId {
    /// Exactly-once slot `n` as a pseudo-partition: slots, not partitions, are assigned
    /// in an exactly-once flow, each replicated under its own `transactional.id`.
    pub fn slot(n: u32) -> Self {
        PartitionId::new(SLOT_TOPIC, i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// True for a [`PartitionId::slot`].
    pub fn is_slot(&self) -> bool {
        &*self.topic == SLOT_TOPIC
    }

    /// `topic`-`partition`.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        PartitionId {
            topic: topic.into(),
            partition,
        }
    }

    /// Control-plane job number `job` (topic sync, group-offset sync, checkpoints,
    /// heartbeats…) as a pseudo-partition: assigned like a partition, it runs on exactly
    /// one member and is handed over in two phases like any other.
    pub fn control(job: i32) -> Self {
        PartitionId::new(CONTROL_TOPIC, job)
    }

    /// True for a [`PartitionId::control`] job.
    pub fn is_control(&self) -> bool {
        &*self.topic == CONTROL_TOPIC
    }
}

/// One partition of the flow and its load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLoad {
    /// The partition.
    pub id: PartitionId,
    /// Bytes not yet replicated.
    pub lag_bytes: u64,
    /// Bytes per second written to it lately.
    pub bytes_per_sec: u64,
}

impl PartitionLoad {
    /// A partition with no known load (weight 1).
    pub fn idle(id: PartitionId) -> Self {
        PartitionLoad {
            id,
            lag_bytes: 0,
            bytes_per_sec: 0,
        }
    }
}

impl std::fmt::Display for PartitionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
