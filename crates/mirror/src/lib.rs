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
//! - [`metrics`]: the Prometheus registry, flow health and the `/metrics` + `/health`
//!   endpoint.

pub mod config;
pub mod error;
pub mod groups;
pub mod heartbeat;
pub mod metrics;
pub mod topics;

pub use error::MirrorError;
pub use metrics::Metrics;
