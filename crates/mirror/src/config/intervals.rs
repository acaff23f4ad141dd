//! `[flows.intervals]`: a flow's control-plane cadences — the file's form, the resolved
//! form and its checks (every interval between 100ms and a day).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::defaults as d;
use super::problem::{INTERVAL_BOUNDS, KeyPath, Problem, duration_out_of_range};
use super::units::HumanDuration;

/// Control-plane cadences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntervalsSpec {
    /// Source topic and partition discovery.
    pub topic_refresh: HumanDuration,
    /// Topic config comparison.
    pub topic_config_sync: HumanDuration,
    /// Topic ACL sync.
    pub topic_acl_sync: HumanDuration,
    /// Group discovery, offset translation and commit.
    pub group_sync: HumanDuration,
    /// Writing positions and offset maps to the state topic, and emitting checkpoints.
    pub checkpoint: HumanDuration,
    /// Emitting heartbeats.
    pub heartbeat: HumanDuration,
}

impl Default for IntervalsSpec {
    fn default() -> Self {
        Self {
            topic_refresh: d::TOPIC_REFRESH,
            topic_config_sync: d::TOPIC_CONFIG_SYNC,
            topic_acl_sync: d::TOPIC_ACL_SYNC,
            group_sync: d::GROUP_SYNC,
            checkpoint: d::CHECKPOINT,
            heartbeat: d::HEARTBEAT,
        }
    }
}

/// Control-plane cadences, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intervals {
    /// Topic discovery.
    pub topic_refresh: Duration,
    /// Topic config comparison.
    pub topic_config_sync: Duration,
    /// Topic ACL sync.
    pub topic_acl_sync: Duration,
    /// Group offset sync.
    pub group_sync: Duration,
    /// State checkpoints.
    pub checkpoint: Duration,
    /// Heartbeats.
    pub heartbeat: Duration,
}

/// Checks `spec` (at `at`, the `intervals` table of a flow); every problem goes to
/// `problems`.
pub fn resolve(
    spec: &IntervalsSpec,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Intervals> {
    let before = problems.len();
    for (key, d) in [
        ("topic_refresh", spec.topic_refresh),
        ("topic_config_sync", spec.topic_config_sync),
        ("topic_acl_sync", spec.topic_acl_sync),
        ("group_sync", spec.group_sync),
        ("checkpoint", spec.checkpoint),
        ("heartbeat", spec.heartbeat),
    ] {
        problems.extend(duration_out_of_range(at.key(key), d, INTERVAL_BOUNDS));
    }
    (problems.len() == before).then_some(Intervals {
        topic_refresh: spec.topic_refresh.0,
        topic_config_sync: spec.topic_config_sync.0,
        topic_acl_sync: spec.topic_acl_sync.0,
        group_sync: spec.group_sync.0,
        checkpoint: spec.checkpoint.0,
        heartbeat: spec.heartbeat.0,
    })
}
