//! Strait's configuration: one TOML file of clusters and flows.
//!
//! - [`model`]: the file as written (serde types, defaults from [`defaults`]).
//! - [`env`](mod@env): `${VAR}` / `${VAR:-default}` substitution before parsing.
//! - [`load`](mod@load): file → [`ConfigFile`] with every unknown key and bad value reported.
//! - [`validate`](mod@validate): [`ConfigFile`] → [`Config`], a pure function returning every problem.
//! - [`resolved`]: the types the engine consumes ([`Config`], [`Flow`], [`Cluster`], …).
//! - [`filter`]: compiled include/exclude lists.
//! - [`problem`], [`suggest`]: error reporting and "did you mean".
//! - [`cluster`]: `[clusters.<name>]`, one Kafka cluster.
//! - [`delivery`]: `[flows.delivery]`, at-least-once or exactly-once.
//! - [`engine`]: `[engine]`, process-wide data-path tuning.
//! - [`naming`]: `[flows.naming]`, target topic names and cycle detection.
//! - [`metrics`]: `[metrics]`, the Prometheus endpoint.
//! - [`flow`]: `[[flows]]`, one replication flow, and the checks across flows.
//! - [`intervals`]: `[flows.intervals]`, a flow's control-plane cadences.
//! - [`logging`]: `[logging]`, log level and format.
//! - [`scale_out`]: `[flows.scale_out]`, a flow shared by several processes.
//! - [`topics`]: `[flows.topics]`, `[flows.groups]`, `[flows.topic_configs]`: which names a flow takes.
//! - [`sync`]: `[flows.sync]`, what a flow keeps in sync besides records.
//! - [`security`]: `[clusters.<name>.security]`, TLS and SASL.
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
pub use load::{load, load_str, parse_str};
pub use model::ConfigFile;
pub use naming::ReplicationPolicy;
pub use problem::{ConfigError, KeyPath, Problem};
pub use resolved::{Cluster, Config, Engine, Flow, Intervals, Logging, Sync, TopicDecision};
pub use security::Security;
pub use validate::validate;
