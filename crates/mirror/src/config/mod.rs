//! Strait's configuration: one TOML file of clusters and flows.
//!
//! A file goes text → [`env`](mod@env) → [`load`](mod@load) → [`ConfigFile`] →
//! [`validate`](mod@validate) → [`Config`]. Each table of the file has one module holding
//! its form as written (`…Spec`, serde), its resolved form and its checks
//! (`resolve(spec, …, at, problems)`, which reports every problem at key path `at`).
//!
//! The walk:
//! - [`env`](mod@env): `${VAR}` / `${VAR:-default}` substitution before parsing.
//! - [`load`](mod@load): file → [`ConfigFile`], every unknown key and bad value reported.
//! - [`validate`](mod@validate): [`ConfigFile`] → [`Config`], walking the tables below.
//! - [`model`]: [`ConfigFile`], the whole file as written; every table's spec re-exported.
//! - [`resolved`]: [`Config`], what the engine consumes; every table's resolved form
//!   re-exported.
//!
//! The tables:
//! - [`cluster`]: `[clusters.<name>]`, one Kafka cluster.
//! - [`security`]: `[clusters.<name>.security]`, TLS and SASL.
//! - [`flow`]: `[[flows]]`, one replication flow, and the checks across flows.
//! - [`topics`]: `[flows.topics]`, `[flows.groups]`, `[flows.topic_configs]`: what a flow takes.
//! - [`naming`]: `[flows.naming]`, target topic names and cycle detection.
//! - [`sync`]: `[flows.sync]`, what a flow keeps in sync besides records.
//! - [`intervals`]: `[flows.intervals]`, a flow's control-plane cadences.
//! - [`delivery`]: `[flows.delivery]`, at-least-once or exactly-once.
//! - [`scale_out`]: `[flows.scale_out]`, a flow shared by several processes.
//! - [`engine`]: `[engine]`, process-wide data-path tuning.
//! - [`metrics`]: `[metrics]`, the Prometheus endpoint.
//! - [`logging`]: `[logging]`, log level and format.
//!
//! What the tables share:
//! - [`defaults`]: every default value, in one place.
//! - [`units`]: durations and byte sizes as written.
//! - [`filter`]: include/exclude regex lists, checked and compiled.
//! - [`problem`]: [`Problem`]s at a [`KeyPath`], the shared duration bounds, [`ConfigError`].
//! - [`suggest`]: "did you mean".
//!
//! Beside the file:
//! - [`mm2`]: importing a MirrorMaker 2 properties file.

pub mod cluster;
pub mod defaults;
pub mod delivery;
pub mod engine;
pub mod env;
pub mod filter;
pub mod flow;
pub mod intervals;
pub mod load;
pub mod logging;
pub mod metrics;
pub mod mm2;
pub mod model;
pub mod naming;
pub mod problem;
pub mod resolved;
pub mod scale_out;
pub mod security;
pub mod suggest;
pub mod sync;
pub mod topics;
pub mod units;
pub mod validate;

pub use filter::NameFilter;
pub use load::{load, load_offline, load_str, parse_str};
pub use model::ConfigFile;
pub use naming::ReplicationPolicy;
pub use problem::{ConfigError, KeyPath, Problem};
pub use resolved::{Cluster, Config, Engine, Flow, Intervals, Logging, Sync, TopicDecision};
pub use security::Security;
pub use validate::validate;
