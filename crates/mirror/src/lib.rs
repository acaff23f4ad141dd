//! strait-mirror: the replication engine. Its modules, one line each, from the ground
//! floor up (docs/architecture.md has the picture):
//!
//! - [`clock`]: the wall clock (`now_ms`).
//! - [`error`]: [`MirrorError`], with flow, cluster, topic and partition context.
//! - [`config`]: the config file: model, loading, validation, naming, the MM2 importer.
//! - [`scale`]: scale-out's pure rules (protocol, assignment, topology, sole writer).
//! - `pruned`: a list that forgets entries that died.
//! - [`incident`]: incident kind × policy → what to do, and the messages (pure).
//! - [`restarts`]: when a failed partition restarts (pure).
//! - [`connect`]: clients with a deadline.
//! - [`progress`]: counters of long work a display reads.
//! - [`metrics`]: the Prometheus registry, flow health, the `/metrics` + `/health` endpoint.
//! - [`datapath`]: fetch, plan, produce, record: one partition's replication.
//! - [`topics`]: topic discovery, creation, config sync and growth on the target.
//! - [`state`]: the per-flow state topic (offset maps, deltas, replays, reports).
//! - [`acls`]: topic ACLs copied to the target.
//! - [`runbook`]: `strait failover` / `failback`, planned and with the source gone.
//! - [`replay`]: `strait replay`, a time range of a topic copied once.
//! - [`groups`]: consumer-group offset translation, MM2 checkpoints, reverse sync.
//! - [`takeover`]: starting after the last record MirrorMaker 2 copied, proven by content.
//! - [`verify`]: `strait verify`, the read-only parity check of a flow and its groups.
//! - `control`: a flow's periodic jobs as tasks.
//! - [`flow`]: one flow's lifecycle in its delivery mode.
//! - [`engine`]: [`Engine`] runs every flow, continuously or `--once` ([`RunSummary`]).
//! - [`heartbeat`]: MM2-compatible heartbeats.
//! - `fuzzing`: entry points for `scripts/fuzz` (hidden).

pub mod acls;
pub mod clock;
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
pub mod progress;
mod pruned;
pub mod replay;
pub mod restarts;
pub mod runbook;
pub mod scale;
pub mod state;
pub mod takeover;
pub mod topics;
pub mod verify;

pub use engine::{Engine, RunSummary};
pub use error::MirrorError;
pub use metrics::Metrics;
