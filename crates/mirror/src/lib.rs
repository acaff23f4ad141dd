//! strait-mirror: the replication engine.
//!
//! Layout:
//! - [`config`]: the TOML config file: model, loading with env substitution, validation
//!   into resolved types ([`config::Config`], [`config::Flow`], …), the replication
//!   (naming) policy, and the MirrorMaker 2 importer ([`config::mm2`]).
//! - [`error`]: [`MirrorError`], the engine's error type, with flow/cluster/topic/partition
//!   context.
//! - [`topics`]: topic discovery, creation, config sync and partition growth on the target.
//! - [`groups`]: consumer-group offset translation, MM2 checkpoints, target commits.
//! - [`heartbeat`]: MM2-compatible heartbeats.
//! - [`incident`]: incident kind × policy → what to do, and the messages (pure).
//! - [`metrics`]: the Prometheus registry, flow health and the `/metrics` + `/health`
//!   endpoint.
//! - [`datapath`]: fetchers, batch planning, the produce pipeline, the in-flight budget,
//!   crash recovery.
//! - [`state`]: the per-flow state topic (offset maps, replay maps) and [`state::load_maps`].
//! - [`replay`]: `strait replay`, a time range of a topic copied once, with its own map.
//! - [`flow`]: one flow's lifecycle, supervising its partitions ([`supervisor`] decides
//!   restarts; `control` runs its periodic jobs as tasks); [`engine`]: [`Engine`] runs every flow
//!   (continuously or `--once`, with a [`RunSummary`]); [`connect`]: clients with a
//!   deadline.

pub mod acls;
pub mod config;
pub mod connect;
mod control;
pub mod datapath;
pub mod engine;
pub mod error;
pub mod flow;
#[doc(hidden)]
pub mod fuzzing;
pub mod groups;
pub mod heartbeat;
pub mod incident;
pub mod metrics;
mod pruned;
pub mod replay;
pub mod runbook;
pub mod scale;
pub mod state;
pub mod supervisor;
pub mod topics;

pub use engine::{Engine, RunSummary};
pub use error::MirrorError;
pub use metrics::Metrics;

/// Wall-clock milliseconds since the Unix epoch (0 before it), as Kafka timestamps are.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
