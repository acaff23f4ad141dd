//! The engine's metrics and health, served in OpenMetrics text format (the
//! `prometheus-client` registry and encoder) by [`http`].
//!
//! [`Metrics`] is a cheap-to-clone registry. The data path resolves a
//! [`PartitionMetrics`] once per partition and then updates atomics only; the control
//! jobs (topic sync, group sync, checkpoints, heartbeats, state writes) call one plain
//! method per event (`metrics.topic_created(flow)`).
//!
//! Every metric is prefixed `strait_`; the list with meanings is in docs/monitoring.md
//! ("Metrics"). Label sets: data-path metrics carry `flow`, `topic` (source name) and
//! `partition`; the latency histogram carries `flow` and `topic` only (a histogram per
//! partition would multiply the series by 17). Health is per flow: [`FlowState`].
//!
//! Map (one line each):
//! - `catalogue`: every family's name, help and labels (`Families::new`);
//! - `partition`: [`PartitionMetrics`], one partition's hot-path handle;
//! - `health`: [`FlowState`], `/health`'s rules and the state they read;
//! - `restart`: `/health`'s line for a partition restarting too long (pure);
//! - `family`, `row`: the series types (labelled families, a partition's row);
//! - `engine`, `transactions`, `scale`: engine-wide, exactly-once and scale-out families;
//! - [`http`], `auth`, `tls`: the endpoint serving them.

mod auth;
mod catalogue;
mod engine;
mod family;
mod health;
pub mod http;
mod partition;
mod restart;
mod row;
mod scale;
mod tls;
mod transactions;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use catalogue::Families;
pub use engine::EngineHistogram;
use family::Family;
pub use family::{
    Bounds, Coarse, Counter, ENGINE_BUCKETS, Fine, Gauge, Histogram, HistogramSnapshot, IntGauge,
    LATENCY_BUCKETS,
};
use health::Watched;
#[cfg(test)]
use health::stall_line;
pub use health::{DEFAULT_STALLED_AFTER, FlowState};
pub use partition::PartitionMetrics;
#[cfg(test)]
use partition::SLOW_REASONS;

use prometheus_client::registry::Registry;

use crate::error::IncidentKind;
use crate::pruned::Pruned;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

struct Inner {
    f: Families,
    txn: transactions::TxnFamilies,
    engine: engine::EngineFamilies,
    scale: scale::ScaleFamilies,
    registry: Registry,
    flows: Mutex<BTreeMap<String, FlowState>>,
    /// Every partition's progress, for `/health`'s stall check.
    partitions: Mutex<Pruned<Watched>>,
    /// A partition behind its source end with no acknowledgement for this long is stalled
    /// (and one restarting for this long is reported too).
    stalled_after_ms: std::sync::atomic::AtomicU64,
    /// Partitions being restarted, by (flow, topic, partition).
    failing: Mutex<BTreeMap<(String, String, i32), restart::Failing>>,
    /// Set while the partitions together hold more bytes for open transactions than the
    /// budget allows: the `/health` line naming the oldest open transaction.
    held_alarm: Mutex<Option<String>>,
    /// Whether `held_alarm` is set (clearing a clear alarm, as every fetch does, takes no
    /// lock).
    held_alarm_on: std::sync::atomic::AtomicBool,
}

/// The metrics registry and flow health. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn p(partition: i32) -> String {
    partition.to_string()
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        Metrics {
            inner: Arc::new(Inner {
                f: Families::new(&mut registry),
                txn: transactions::TxnFamilies::new(&mut registry),
                engine: engine::EngineFamilies::new(&mut registry),
                scale: scale::ScaleFamilies::new(&mut registry),
                registry,
                flows: Mutex::new(BTreeMap::new()),
                partitions: Mutex::new(Pruned::default()),
                failing: Mutex::new(BTreeMap::new()),
                stalled_after_ms: std::sync::atomic::AtomicU64::new(
                    DEFAULT_STALLED_AFTER.as_millis() as u64,
                ),
                held_alarm: Mutex::new(None),
                held_alarm_on: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    fn ftp<T: Default + Clone>(fam: &Family<T>, flow: &str, topic: &str, partition: i32) -> T {
        fam.get(&[flow, topic, &p(partition)])
    }

    /// An incident was detected (under either policy). `partition` is -1 for topic-wide
    /// incidents.
    pub fn incident(&self, flow: &str, topic: &str, partition: i32, kind: IncidentKind) {
        let pp = p(partition);
        self.inner
            .f
            .incidents
            .get(&[flow, topic, &pp, kind.as_str()])
            .inc_by(1);
    }

    /// Sets the fetched bytes awaiting acknowledgement in the flow.
    pub fn in_flight_bytes(&self, flow: &str, bytes: u64) {
        self.inner
            .f
            .in_flight_bytes
            .get(&[flow])
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// A target topic was created.
    pub fn topic_created(&self, flow: &str) {
        self.inner.f.topics_created.get(&[flow]).inc_by(1);
    }

    /// `n` target topic config changes were applied.
    pub fn topic_config_updates(&self, flow: &str, n: u64) {
        self.inner.f.config_updates.get(&[flow]).inc_by(n);
    }

    /// A topic creation, config update or growth failed.
    pub fn topic_sync_failure(&self, flow: &str) {
        self.inner.f.topic_failures.get(&[flow]).inc_by(1);
    }

    /// `n` groups were translated in one group sync.
    pub fn groups_translated(&self, flow: &str, n: u64) {
        self.inner.f.groups_translated.get(&[flow]).inc_by(n);
    }

    /// `n` translated offsets of `group` were committed on the target.
    pub fn group_offsets_committed(&self, flow: &str, group: &str, n: u64) {
        self.inner.f.offsets_committed.get(&[flow, group]).inc_by(n);
    }

    /// Sets the seconds since `group`'s offsets were last translated.
    pub fn group_translation_staleness(&self, flow: &str, group: &str, secs: f64) {
        self.inner.f.staleness.get(&[flow, group]).set(secs);
    }

    /// `n` MM2 checkpoint records were written.
    pub fn checkpoints_written(&self, flow: &str, n: u64) {
        self.inner.f.checkpoints.get(&[flow]).inc_by(n);
    }

    /// A heartbeat was written.
    pub fn heartbeat_emitted(&self, flow: &str) {
        self.inner.f.heartbeats.get(&[flow]).inc_by(1);
    }

    /// `n` offset-map records were written to the state topic.
    pub fn state_records_written(&self, flow: &str, n: u64) {
        self.inner.f.state_writes.get(&[flow]).inc_by(n);
    }

    /// Drops a partition's series (e.g. its topic was deleted at the source).
    pub fn remove_partition(&self, flow: &str, topic: &str, partition: i32) {
        self.partition_healthy(flow, topic, partition);
        let pp = p(partition);
        let key = [flow, topic, pp.as_str()];
        let f = &self.inner.f;
        for fam in [&f.restarts, &f.incidents] {
            fam.remove_prefix(&key);
        }
        f.restarting.remove_prefix(&key);
        f.rows.remove_prefix(&key);
        for fam in [&f.fetch_errors, &f.fetch_retries] {
            fam.remove_prefix(&key);
        }
        for fam in [
            &f.produce_errors,
            &f.produce_retries,
            &f.slow_path,
            &f.dropped,
        ] {
            fam.remove_prefix(&key);
        }
        for fam in [
            &f.coalesce_inputs,
            &f.coalesce_outputs,
            &f.coalesce_bytes,
            &f.recompressed_inputs,
        ] {
            fam.remove_prefix(&key);
        }
    }

    /// Drops a consumer group's series (the group was deleted on the source or is no
    /// longer accepted by the flow's group filter).
    pub fn remove_group(&self, flow: &str, group: &str) {
        let key = [flow, group];
        self.inner.f.offsets_committed.remove_prefix(&key);
        self.inner.f.staleness.remove_prefix(&key);
    }

    /// Every metric in OpenMetrics text format ([`CONTENT_TYPE`]), ending in `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; an encoder error would only truncate.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }
}

#[cfg(test)]
mod tests;
