//! The config file as written: plain serde types that mirror the TOML one to one.
//!
//! Unknown keys are rejected (`deny_unknown_fields`); missing keys take the defaults of
//! [`super::defaults`]. Nothing here checks ranges or compiles regexes: that is
//! [`super::validate()`], which turns a [`ConfigFile`] into a resolved [`super::Config`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::cluster::ClusterSpec;
pub use super::engine::{EngineSpec, RecompressPolicy};
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

/// One replication flow: `source` → `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name used in logs, metrics and the state topic; default `<source>-to-<target>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Source cluster name.
    pub source: String,
    /// Target cluster name.
    pub target: String,
    /// A disabled flow is validated but not run (MM2's `A->B.enabled`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Compacted topic on the target holding positions and offset maps; default
    /// `strait-state.<flow name>.internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_topic: Option<String>,
    /// Which topics, and how they are created (`[flows.topics]`).
    #[serde(default)]
    pub topics: TopicsSpec,
    /// Target topic naming (`[flows.naming]`).
    #[serde(default)]
    pub naming: NamingSpec,
    /// Which consumer groups (`[flows.groups]`).
    #[serde(default)]
    pub groups: GroupsSpec,
    /// Which topic configs are copied (`[flows.topic_configs]`).
    #[serde(default)]
    pub topic_configs: TopicConfigsSpec,
    /// What is synced besides records (`[flows.sync]`).
    #[serde(default)]
    pub sync: SyncSpec,
    /// Control-plane cadences (`[flows.intervals]`).
    #[serde(default)]
    pub intervals: IntervalsSpec,
    /// Delivery guarantee (`[flows.delivery]`).
    #[serde(
        default,
        skip_serializing_if = "super::delivery::DeliverySpec::is_default"
    )]
    pub delivery: super::delivery::DeliverySpec,
    /// Several processes share the flow (`[flows.scale_out]`); absent: one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_out: Option<super::scale_out::ScaleOutSpec>,
}

fn yes() -> bool {
    true
}
