//! The validated config the engine consumes: [`Config`] — names checked, regexes
//! compiled, defaults applied, durations as `Duration`s. Built only by
//! [`super::validate()`]. Each table's resolved form is declared with its checks in the
//! table's own module and re-exported here.

use std::collections::BTreeMap;
use std::net::SocketAddr;

pub use super::cluster::Cluster;
pub use super::engine::Engine;
pub use super::flow::{Flow, TopicDecision};
pub use super::intervals::Intervals;
pub use super::logging::Logging;
pub use super::metrics::{MetricsBasicAuth, MetricsEndpoint, MetricsTls};
pub use super::sync::Sync;

/// A loaded, valid config.
#[derive(Debug, Clone)]
pub struct Config {
    /// Clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    /// Flows in file order (disabled ones included; see [`Flow::enabled`]).
    pub flows: Vec<Flow>,
    /// Data-path tuning.
    pub engine: Engine,
    /// Where `/metrics` listens; `None` when disabled (the same as `metrics`' `listen`).
    pub metrics_listen: Option<SocketAddr>,
    /// The whole `/metrics` endpoint setup (TLS, auth, limits); `None` when disabled.
    pub metrics: Option<MetricsEndpoint>,
    /// Logging.
    pub logging: Logging,
}

impl Config {
    /// The flows to run.
    pub fn enabled_flows(&self) -> impl Iterator<Item = &Flow> {
        self.flows.iter().filter(|f| f.enabled)
    }

    /// The cluster called `name`.
    pub fn cluster(&self, name: &str) -> Option<&Cluster> {
        self.clusters.get(name)
    }
}
