//! The config file as written: [`ConfigFile`], plain serde types that mirror the TOML one
//! to one.
//!
//! Unknown keys are rejected (`deny_unknown_fields`); missing keys take the defaults of
//! [`super::defaults`]. Nothing here checks ranges or compiles regexes: that is
//! [`super::validate()`], which turns a [`ConfigFile`] into a resolved [`super::Config`].
//! Each table's spec is declared with its checks in the table's own module and
//! re-exported here, so `config::model` names the whole file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::cluster::ClusterSpec;
pub use super::engine::{EngineSpec, RecompressPolicy, SMALL_BATCH_BYTES};
pub use super::flow::FlowSpec;
pub use super::intervals::IntervalsSpec;
pub use super::logging::{LogFormat, LoggingSpec};
pub use super::metrics::MetricsSpec;
pub use super::naming::{NamingPolicy, NamingSpec};
pub use super::sync::SyncSpec;
pub use super::topics::{GroupsSpec, IncidentPolicy, StartPosition, TopicConfigsSpec, TopicsSpec};

/// The whole config file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConfigFile {
    /// Named Kafka clusters (`[clusters.<name>]`); the name is the MM2 "cluster alias".
    pub clusters: BTreeMap<String, ClusterSpec>,
    /// Replication flows (`[[flows]]`), each from one cluster to another.
    pub flows: Vec<FlowSpec>,
    /// Process-wide data-path tuning (`[engine]`).
    pub engine: EngineSpec,
    /// The Prometheus endpoint (`[metrics]`).
    pub metrics: MetricsSpec,
    /// Logging (`[logging]`).
    pub logging: LoggingSpec,
}
