//! Consumer-group offset sync: read the source groups' committed offsets, translate them
//! through the offset maps, write MM2-compatible checkpoints and commit the translations
//! on the target for groups with no active members there, never backwards.
//!
//! - [`decide`](mod@decide): the pure per-group decision;
//! - [`checkpoint`]: MM2's checkpoint record format;
//! - `wire`: Kafka's `Struct` encoding used by MM2's records (also for heartbeats);
//! - `sync`: [`GroupSync`], the I/O around the decision (`sync/round.rs`: a round's steps);
//! - [`reverse`]: [`ReverseSync`], target commits translated back onto the source;
//! - [`provenance`]: which target positions forward sync wrote itself (never sent back);
//! - [`switch`]: the pure switch-over decision, per partition: failover and failback
//!   (`strait failover`/`failback`, [`crate::runbook`]) and reverse sync follow its rules.

pub mod checkpoint;
pub mod decide;
pub mod provenance;
pub mod reverse;
pub mod switch;
mod sync;
pub(crate) mod wire;

pub use checkpoint::{Checkpoint, checkpoints_topic};
pub use decide::{Commit, GroupDecision, PartitionInput, Pending, TargetGroup, decide};
pub use reverse::{ReverseReport, ReverseSync};
pub(crate) use sync::activity;
pub use sync::{
    ConsumerProtocolGroup, GroupSync, GroupSyncReport, group_state, target_group_state,
};
pub use wire::WireError;
