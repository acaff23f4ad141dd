//! Topic sync: discover source topics, filter and rename them, create them on the target
//! with the source's partition count and configs, keep configs in sync, grow partitions.
//!
//! - [`plan`](mod@plan): the pure decision ([`plan()`], [`TopicPlan`]), also behind
//!   `strait plan`;
//! - `describe`: reading topics and their configs from a cluster;
//! - `sync`: [`TopicSync`], which applies a plan every refresh;
//! - `internal`: writing MM2's compacted single-partition topics (heartbeats,
//!   checkpoints).

mod describe;
pub(crate) mod internal;
pub mod plan;
mod sync;

pub use describe::{describe_topics, topic_states};
pub use plan::{
    AlterConfigs, CreateTopic, GrowPartitions, Replicate, SkipReason, TopicPlan, TopicState, plan,
};
pub use sync::{ReplicatedTopic, TopicSync, current_plan};
