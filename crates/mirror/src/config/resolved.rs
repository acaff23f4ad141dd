//! The validated config the engine consumes: names checked, regexes compiled, defaults
//! applied, durations as [`Duration`]s. Built only by [`super::validate()`].

use std::collections::BTreeMap;
use std::net::SocketAddr;

pub use super::cluster::Cluster;
pub use super::engine::Engine;
use super::filter::NameFilter;
pub use super::intervals::Intervals;
pub use super::logging::Logging;
pub use super::metrics::{MetricsBasicAuth, MetricsEndpoint, MetricsTls};
use super::model::{IncidentPolicy, StartPosition};
use super::naming::ReplicationPolicy;
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

/// One replication flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Unique name.
    pub name: String,
    /// Source cluster name (a key of [`Config::clusters`]).
    pub source: String,
    /// Target cluster name.
    pub target: String,
    /// Whether to run it.
    pub enabled: bool,
    /// Compacted state topic on the target.
    pub state_topic: String,
    /// Which source topics.
    pub topics: NameFilter,
    /// Naming and cycle detection.
    pub policy: ReplicationPolicy,
    /// Which consumer groups.
    pub groups: NameFilter,
    /// Which topic configs are copied.
    pub topic_configs: NameFilter,
    /// Replication factor for created topics; `None` = the target broker's default.
    pub replication_factor: Option<i16>,
    /// Start of replication in a new partition.
    pub start_position: StartPosition,
    /// Reaction to source truncation.
    pub on_source_truncation: IncidentPolicy,
    /// Reaction to source topic re-creation.
    pub on_topic_recreation: IncidentPolicy,
    /// Reaction to a target partition that does not hold what was written to it.
    pub on_target_mismatch: IncidentPolicy,
    /// What is synced besides records.
    pub sync: Sync,
    /// Control-plane cadences.
    pub intervals: Intervals,
    /// Delivery guarantee.
    pub delivery: super::delivery::Delivery,
    /// Scale-out: the group the flow's processes share; `None`: one process, no group.
    pub scale_out: Option<super::scale_out::ScaleOut>,
}

/// Why a flow does or does not replicate a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicDecision {
    /// Replicate it under this target name.
    Replicate {
        /// The target topic.
        target_topic: String,
    },
    /// The include/exclude lists reject it.
    Filtered,
    /// Its name says it came from the target cluster: replicating it would loop.
    Cycle,
    /// A heartbeats topic, and `sync.heartbeats` is off.
    HeartbeatsDisabled,
    /// The flow's own state topic.
    StateTopic,
}

impl Flow {
    /// Decides whether `topic` on the source is replicated, and as what.
    ///
    /// Heartbeats topics bypass the topic filter (governed by `sync.heartbeats`, like
    /// MM2's `heartbeats.replication.enabled`); cycles are refused before anything else.
    pub fn topic_decision(&self, topic: &str) -> TopicDecision {
        if topic == self.state_topic {
            TopicDecision::StateTopic
        } else if self.policy.is_cycle(topic, &self.target) {
            TopicDecision::Cycle
        } else if self.policy.is_heartbeats_topic(topic) {
            if self.sync.heartbeats {
                TopicDecision::Replicate {
                    target_topic: self.policy.remote_topic(topic),
                }
            } else {
                TopicDecision::HeartbeatsDisabled
            }
        } else if self.topics.accepts(topic) {
            TopicDecision::Replicate {
                target_topic: self.policy.remote_topic(topic),
            }
        } else {
            TopicDecision::Filtered
        }
    }

    /// Whether consumer group `group` is synced.
    pub fn syncs_group(&self, group: &str) -> bool {
        self.sync.group_offsets && self.groups.accepts(group)
    }

    /// Whether topic config `name` is copied to the target.
    pub fn syncs_topic_config(&self, name: &str) -> bool {
        self.sync.topic_configs && self.topic_configs.accepts(name)
    }
}
