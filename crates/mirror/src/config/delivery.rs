//! `[flows.delivery]`: the delivery guarantee of a flow — the file's form, the resolved
//! form and its checks.
//!
//! - `guarantee = "at_least_once"` (default): batches are written by the idempotent
//!   producer; after a crash, content-checked recovery finds what landed past the last
//!   state write (duplicates bounded by what was in flight).
//! - `guarantee = "exactly_once"`: batches and the state records describing them are
//!   written in one target transaction, committed every `transaction_interval`; a
//!   `read_committed` consumer on the target sees every source record once.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::problem::{KeyPath, Problem};
use super::units::HumanDuration;

/// Default `transaction_interval`.
pub const TRANSACTION_INTERVAL: HumanDuration = HumanDuration::millis(250);
/// Default `transaction_timeout` (Kafka's `transaction.timeout.ms` default).
pub const TRANSACTION_TIMEOUT: HumanDuration = HumanDuration::secs(60);
/// `transaction_interval` bounds: below, the coordinator is hammered; above, consumers
/// wait minutes for data.
const INTERVAL_BOUNDS: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(600));
/// `transaction_timeout` bounds (Kafka's `transaction.max.timeout.ms` default is 15 min).
const TIMEOUT_BOUNDS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(900));

/// What `read_committed` consumers of the target are promised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guarantee {
    /// Every record arrives; a crash may repeat what was in flight.
    #[default]
    AtLeastOnce,
    /// Every record arrives once for `read_committed` consumers; data and state commit
    /// together.
    ExactlyOnce,
}

impl Guarantee {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Guarantee::AtLeastOnce => "at_least_once",
            Guarantee::ExactlyOnce => "exactly_once",
        }
    }
}

/// `[flows.delivery]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeliverySpec {
    /// `at_least_once` or `exactly_once`.
    pub guarantee: Guarantee,
    /// How often the open transaction commits (`exactly_once`).
    pub transaction_interval: HumanDuration,
    /// How long the target's coordinator lets a transaction stay open before aborting it.
    pub transaction_timeout: HumanDuration,
    /// The `transactional.id`; default `strait.<flow name>`. Stable across restarts: a
    /// new process with the same id fences the old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
}

impl Default for DeliverySpec {
    fn default() -> Self {
        DeliverySpec {
            guarantee: Guarantee::AtLeastOnce,
            transaction_interval: TRANSACTION_INTERVAL,
            transaction_timeout: TRANSACTION_TIMEOUT,
            transactional_id: None,
        }
    }
}

impl DeliverySpec {
    /// Whether every key has its default (the table is then not written out).
    pub fn is_default(&self) -> bool {
        *self == DeliverySpec::default()
    }
}

/// The resolved delivery settings of a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The guarantee.
    pub guarantee: Guarantee,
    /// Commit cadence.
    pub transaction_interval: Duration,
    /// Coordinator timeout of an open transaction.
    pub transaction_timeout: Duration,
    /// The `transactional.id`.
    pub transactional_id: String,
}

impl Delivery {
    /// Whether the flow writes in transactions.
    pub fn exactly_once(&self) -> bool {
        self.guarantee == Guarantee::ExactlyOnce
    }

    /// At-least-once with the default settings, for flow `name`.
    pub fn at_least_once(name: &str) -> Self {
        Delivery {
            guarantee: Guarantee::AtLeastOnce,
            transaction_interval: TRANSACTION_INTERVAL.0,
            transaction_timeout: TRANSACTION_TIMEOUT.0,
            transactional_id: default_transactional_id(name),
        }
    }
}

/// `strait.<flow name>`.
pub fn default_transactional_id(flow: &str) -> String {
    format!("strait.{flow}")
}

/// Checks `spec` (at `at`, the `delivery` table of flow `flow`); every problem goes to
/// `problems`.
pub fn resolve(
    spec: &DeliverySpec,
    flow: &str,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Delivery> {
    let before = problems.len();
    check_timing(spec, at, problems);
    let id = match &spec.transactional_id {
        Some(id) if id.is_empty() || id.chars().any(char::is_control) => {
            problems.push(
                Problem::new(
                    at.key("transactional_id"),
                    "must be a non-empty printable string",
                )
                .expected("e.g. \"strait.<flow name>\""),
            );
            None
        }
        Some(id) => Some(id.clone()),
        None => Some(default_transactional_id(flow)),
    };
    if problems.len() != before {
        return None;
    }
    Some(Delivery {
        guarantee: spec.guarantee,
        transaction_interval: spec.transaction_interval.0,
        transaction_timeout: spec.transaction_timeout.0,
        transactional_id: id?,
    })
}

/// The transaction interval and timeout, each within its range, and the interval
/// shorter than the timeout (checked only when both are within range).
fn check_timing(spec: &DeliverySpec, at: &KeyPath, problems: &mut Vec<Problem>) {
    let before = problems.len();
    for (key, d, bounds) in [
        (
            "transaction_interval",
            spec.transaction_interval,
            INTERVAL_BOUNDS,
        ),
        (
            "transaction_timeout",
            spec.transaction_timeout,
            TIMEOUT_BOUNDS,
        ),
    ] {
        problems.extend(super::problem::duration_out_of_range(
            at.key(key),
            d,
            bounds,
        ));
    }
    if problems.len() == before && spec.transaction_interval.0 >= spec.transaction_timeout.0 {
        problems.push(
            Problem::new(
                at.key("transaction_interval"),
                format!(
                    "{} is not shorter than transaction_timeout ({}): every transaction \
                     would be aborted by the coordinator before it commits",
                    spec.transaction_interval, spec.transaction_timeout
                ),
            )
            .expected("transaction_interval well below transaction_timeout"),
        );
    }
}

/// Two exactly-once flows with one `transactional.id` would fence each other forever.
/// `flows`: each resolved flow's name and delivery settings.
pub fn unique_transactional_ids<'a>(
    flows: impl IntoIterator<Item = (&'a str, &'a Delivery)>,
) -> Vec<Problem> {
    let mut seen: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    let mut problems = Vec::new();
    for (name, delivery) in flows.into_iter().filter(|(_, d)| d.exactly_once()) {
        if let Some(other) = seen.insert(&delivery.transactional_id, name) {
            problems.push(
                Problem::new(
                    KeyPath::root().key("flows").key(name).key("delivery"),
                    format!(
                        "transactional_id {:?} is also flow {other}'s: the two would fence \
                         each other",
                        delivery.transactional_id
                    ),
                )
                .expected("one transactional_id per flow"),
            );
        }
    }
    problems
}

#[cfg(test)]
mod tests;
