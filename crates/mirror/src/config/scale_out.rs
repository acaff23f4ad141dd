//! `[flows.scale_out]`: several `strait run` processes share one flow through a Kafka
//! group on the target cluster (protocol type `strait`, [`crate::scale`]). Without the
//! table a flow runs in one process with no group, as before.
//!
//! - `group`: the group id, default `strait.<flow>.workers`.
//! - `instance_id`: `group.instance.id` (static membership, KIP-345): a member restarted
//!   within the session timeout keeps its partitions. Default: the host name (`$HOSTNAME`,
//!   else `/etc/hostname`); `""` makes the member dynamic.
//! - `session_timeout` (default 10 s, as Kafka Connect): heartbeats every tenth of it, and
//!   the member stops writing a third of it before the coordinator could give its
//!   partitions away (the self-fence margin).
//! - `rebalance_timeout` (default 60 s): how long the coordinator waits for members to
//!   rejoin, so also how long a member may take to release a moved partition.
//! - `capacity` (default 1): this worker's relative share of the flow's load.
//! - `slots` (default 16, exactly-once flows only): the flow's partitions are hashed into
//!   this many slots, each with its own `transactional.id` (`<transactional_id>.slot-<n>`);
//!   slots, not partitions, are assigned, so the member taking a slot over fences its
//!   previous owner at the broker. Change it only with every process of the flow stopped.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::problem::{KeyPath, Problem};
use super::units::HumanDuration;

/// Default `session_timeout`.
pub const SESSION_TIMEOUT: HumanDuration = HumanDuration::secs(10);
/// Default `rebalance_timeout`.
pub const REBALANCE_TIMEOUT: HumanDuration = HumanDuration::secs(60);
/// `session_timeout` bounds (Kafka's brokers accept 6 s to 30 min by default; a broker
/// configured otherwise refuses the join with a clear error).
const SESSION_BOUNDS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(1800));
/// `rebalance_timeout` bounds.
const REBALANCE_BOUNDS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(1800));

/// `[flows.scale_out]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScaleOutSpec {
    /// The group id; default `strait.<flow>.workers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `group.instance.id`; default the host name, `""` for a dynamic member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The coordinator expels a member silent for this long.
    pub session_timeout: HumanDuration,
    /// How long the coordinator waits for members to rejoin a rebalance.
    pub rebalance_timeout: HumanDuration,
    /// Relative share of the flow's load this worker takes.
    pub capacity: u32,
    /// Exactly-once: how many transactional slots the flow's partitions are hashed into.
    pub slots: u32,
}

/// Default `slots`.
pub const SLOTS: u32 = 16;

impl Default for ScaleOutSpec {
    fn default() -> Self {
        ScaleOutSpec {
            group: None,
            instance_id: None,
            session_timeout: SESSION_TIMEOUT,
            rebalance_timeout: REBALANCE_TIMEOUT,
            capacity: 1,
            slots: SLOTS,
        }
    }
}

/// Where a member's `group.instance.id` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceId {
    /// The host name, read when the flow starts.
    HostName,
    /// This id.
    Fixed(String),
    /// None: a dynamic member (every restart rebalances).
    Dynamic,
}

/// The resolved scale-out settings of a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleOut {
    /// The group id.
    pub group: String,
    /// The `group.instance.id`.
    pub instance_id: InstanceId,
    /// Session timeout.
    pub session_timeout: Duration,
    /// Rebalance timeout.
    pub rebalance_timeout: Duration,
    /// Relative capacity (≥ 1).
    pub capacity: u32,
    /// Exactly-once flows: the transactional slots (≥ 1); `None` for at-least-once flows,
    /// whose partitions are assigned one by one.
    pub slots: Option<u32>,
}

/// `strait.<flow name>.workers`.
pub fn default_group(flow: &str) -> String {
    format!("strait.{flow}.workers")
}

/// Checks `spec` (at `at`, the `scale_out` table of flow `flow`); every problem goes to
/// `problems`. `exactly_once`: the flow's guarantee (slots are used then).
pub fn resolve(
    spec: &ScaleOutSpec,
    flow: &str,
    exactly_once: bool,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<ScaleOut> {
    let before = problems.len();
    check(spec, flow, at, problems);
    if problems.len() != before {
        return None;
    }
    Some(ScaleOut {
        group: spec.group.clone().unwrap_or_else(|| default_group(flow)),
        instance_id: match spec.instance_id.as_deref() {
            None => InstanceId::HostName,
            Some("") => InstanceId::Dynamic,
            Some(id) => InstanceId::Fixed(id.to_owned()),
        },
        session_timeout: spec.session_timeout.0,
        rebalance_timeout: spec.rebalance_timeout.0,
        capacity: spec.capacity,
        slots: exactly_once.then_some(spec.slots),
    })
}

/// Each setting of `spec` within its range, and the names printable.
fn check(spec: &ScaleOutSpec, flow: &str, at: &KeyPath, problems: &mut Vec<Problem>) {
    for (key, d, bounds) in [
        ("session_timeout", spec.session_timeout, SESSION_BOUNDS),
        (
            "rebalance_timeout",
            spec.rebalance_timeout,
            REBALANCE_BOUNDS,
        ),
    ] {
        problems.extend(super::problem::duration_out_of_range(
            at.key(key),
            d,
            bounds,
        ));
    }
    if spec.capacity == 0 || spec.capacity > 1_000 {
        problems.push(
            Problem::new(
                at.key("capacity"),
                format!("{} is out of range", spec.capacity),
            )
            .expected("a relative weight from 1 to 1000"),
        );
    }
    let printable = |s: &str| !s.chars().any(char::is_control);
    if let Some(g) = &spec.group
        && (g.is_empty() || !printable(g))
    {
        problems.push(
            Problem::new(at.key("group"), "must be a non-empty printable string")
                .expected(format!("e.g. {:?}", default_group(flow))),
        );
    }
    if let Some(id) = &spec.instance_id
        && !printable(id)
    {
        problems.push(
            Problem::new(at.key("instance_id"), "must be printable")
                .expected("a name unique among the flow's processes, or \"\" for none"),
        );
    }
    if spec.slots == 0 || spec.slots > 1024 {
        problems.push(
            Problem::new(at.key("slots"), format!("{} is out of range", spec.slots))
                .expected("1 to 1024 transactional slots"),
        );
    }
}

#[cfg(test)]
mod tests;
