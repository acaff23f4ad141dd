//! The config file as written: plain serde types that mirror the TOML one to one.
//!
//! Unknown keys are rejected (`deny_unknown_fields`); missing keys take the defaults of
//! [`super::defaults`]. Nothing here checks ranges or compiles regexes: that is
//! [`super::validate()`], which turns a [`ConfigFile`] into a resolved [`super::Config`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

pub use super::cluster::ClusterSpec;
use super::defaults::{self as d, owned};
pub use super::engine::{EngineSpec, RecompressPolicy};
pub use super::intervals::IntervalsSpec;
pub use super::logging::{LogFormat, LoggingSpec};
pub use super::metrics::MetricsSpec;
pub use super::naming::{NamingPolicy, NamingSpec};
pub use super::sync::SyncSpec;

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

/// Topic selection and creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopicsSpec {
    /// Regexes (whole-name match); a topic is replicated if one matches.
    pub include: Vec<String>,
    /// Regexes; a topic matching one is never replicated (exclude wins).
    pub exclude: Vec<String>,
    /// Replication factor of created topics; -1 = the target broker's default.
    pub replication_factor: i64,
    /// Where replication starts in a partition Strait has never seen.
    pub start_position: StartPosition,
    /// What to do when the source deleted records Strait has not copied yet.
    pub on_source_truncation: IncidentPolicy,
    /// What to do when a source topic was deleted and created again (new topic id).
    pub on_topic_recreation: IncidentPolicy,
    /// What to do when the target partition does not hold what Strait wrote to it
    /// (truncated, re-created, written by someone else).
    pub on_target_mismatch: IncidentPolicy,
}

impl Default for TopicsSpec {
    fn default() -> Self {
        Self {
            include: vec![d::INCLUDE_ALL.to_owned()],
            exclude: owned(d::TOPIC_EXCLUDES),
            replication_factor: d::REPLICATION_FACTOR,
            start_position: StartPosition::default(),
            on_source_truncation: IncidentPolicy::default(),
            on_topic_recreation: IncidentPolicy::default(),
            on_target_mismatch: IncidentPolicy::default(),
        }
    }
}

/// Start of replication in a new partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartPosition {
    /// From the log start: copy everything still retained (MM2's behaviour).
    #[default]
    Earliest,
    /// From the log end: copy only what is produced from now on.
    Latest,
    /// From the first record whose timestamp is at or after this, in ms since the epoch
    /// (an RFC 3339 timestamp in the file, e.g. `"2026-11-30T00:00:00Z"`; ListOffsets by
    /// timestamp; the log end when no record is that recent).
    Timestamp(i64),
}

impl StartPosition {
    /// Parses `earliest`, `latest` or an RFC 3339 timestamp.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "earliest" => Some(StartPosition::Earliest),
            "latest" => Some(StartPosition::Latest),
            t => {
                let at = humantime::parse_rfc3339(t).ok()?;
                let ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
                i64::try_from(ms).ok().map(StartPosition::Timestamp)
            }
        }
    }
}

impl fmt::Display for StartPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartPosition::Earliest => f.write_str("earliest"),
            StartPosition::Latest => f.write_str("latest"),
            StartPosition::Timestamp(ms) => {
                let at = std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(u64::try_from(*ms).unwrap_or(0));
                write!(f, "{}", humantime::format_rfc3339_millis(at))
            }
        }
    }
}

impl Serialize for StartPosition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StartPosition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        StartPosition::parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "invalid start position \"{text}\": expected \"earliest\", \"latest\" or an \
                 RFC 3339 timestamp such as \"2026-11-30T00:00:00Z\""
            ))
        })
    }
}

/// Reaction to an incident: source truncation, topic re-creation, target mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentPolicy {
    /// Stop replicating the partition and report it (health and metrics) until an operator acts.
    #[default]
    Fail,
    /// Log it, count it in metrics, and carry on from the earliest available offset.
    Skip,
}

/// Consumer-group selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupsSpec {
    /// Regexes (whole-name match); a group is synced if one matches.
    pub include: Vec<String>,
    /// Regexes; a group matching one is never synced (exclude wins).
    pub exclude: Vec<String>,
}

impl Default for GroupsSpec {
    fn default() -> Self {
        Self {
            include: vec![d::INCLUDE_ALL.to_owned()],
            exclude: owned(d::GROUP_EXCLUDES),
        }
    }
}

/// Topic-config selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopicConfigsSpec {
    /// Regexes of config names never copied to the target.
    pub exclude: Vec<String>,
}

impl Default for TopicConfigsSpec {
    fn default() -> Self {
        Self {
            exclude: owned(d::CONFIG_EXCLUDES),
        }
    }
}
