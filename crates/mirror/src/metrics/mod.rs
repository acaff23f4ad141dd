//! The engine's metrics and health, served in OpenMetrics text format (the
//! `prometheus-client` registry and encoder) by [`http`].
//!
//! [`Metrics`] is a cheap-to-clone registry with one plain method per event
//! (`metrics.records_replicated(flow, topic, partition, n)`). The data path resolves a
//! [`PartitionMetrics`] once per partition and then updates atomics only.
//!
//! Every metric is prefixed `strait_`; the list with meanings is in docs/operations.md
//! ("Metrics"). Label sets: data-path metrics carry `flow`, `topic` (source name) and
//! `partition`; the latency histogram carries `flow` and `topic` only (a histogram per
//! partition would multiply the series by 17). Health is per flow: [`FlowState`].

mod auth;
mod engine;
mod family;
pub mod http;
mod restart;
mod row;
mod scale;
mod tls;
mod transactions;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

pub use engine::EngineHistogram;
use family::Family;
pub use family::{
    Bounds, Coarse, Counter, ENGINE_BUCKETS, Fine, Gauge, Histogram, HistogramSnapshot, IntGauge,
    LATENCY_BUCKETS,
};
use row::{Column, Field, PartitionRow};

use prometheus_client::encoding::EncodeMetric;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Metric, Registry};

use crate::error::IncidentKind;
use crate::now_ms;
use crate::pruned::Pruned;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a flow is doing, for `/health` and the `strait_flow_up` gauge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowState {
    /// Connecting, loading state, creating topics.
    Starting,
    /// Replicating.
    Running,
    /// Stopped after a graceful shutdown or a finished `--once` run.
    Stopped,
    /// Stopped by an error (the reason).
    Failed(String),
}

impl FlowState {
    fn describe(&self) -> String {
        match self {
            FlowState::Starting => "starting".to_owned(),
            FlowState::Running => "running".to_owned(),
            FlowState::Stopped => "stopped".to_owned(),
            FlowState::Failed(reason) => format!("failed: {reason}"),
        }
    }
}

const FTP: &[&str] = &["flow", "topic", "partition"];
const FLOW: &[&str] = &["flow"];

struct Families {
    /// Every partition's row: `strait_records_replicated_total`,
    /// `strait_bytes_replicated_total`, `strait_lag_offsets`, `strait_lag_seconds`,
    /// `strait_offset_map_runs` and `strait_held_bytes` are its columns ([`row`]).
    rows: Family<Arc<PartitionRow>>,
    latency: Family<Histogram>,
    fetch_errors: Family<Counter>,
    fetch_retries: Family<Counter>,
    produce_errors: Family<Counter>,
    produce_retries: Family<Counter>,
    slow_path: Family<Counter>,
    coalesce_inputs: Family<Counter>,
    coalesce_outputs: Family<Counter>,
    coalesce_bytes: Family<Counter>,
    dropped: Family<Counter>,
    incidents: Family<Counter>,
    in_flight_bytes: Family<IntGauge>,
    topics_created: Family<Counter>,
    config_updates: Family<Counter>,
    topic_failures: Family<Counter>,
    groups_translated: Family<Counter>,
    offsets_committed: Family<Counter>,
    staleness: Family<Gauge>,
    checkpoints: Family<Counter>,
    heartbeats: Family<Counter>,
    state_writes: Family<Counter>,
    flow_up: Family<IntGauge>,
    restarts: Family<Counter>,
    restarting: Family<IntGauge>,
}

/// Registers a family. Counters are registered without `_total` (the OpenMetrics encoder
/// appends it to the samples), and the encoder appends the final `.` to the help text.
fn reg<M>(r: &mut Registry, name: &str, help: &str, labels: &'static [&'static str]) -> Family<M>
where
    M: EncodeMetric + TypedMetric + Default + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let family = Family::new(labels);
    register(r, name, help, M::TYPE, family.clone());
    family
}

/// Counters are registered without `_total` (the OpenMetrics encoder appends it to the
/// samples), and the encoder appends the final `.` to the help text.
fn register(r: &mut Registry, name: &str, help: &str, kind: MetricType, metric: impl Metric) {
    let name = match kind {
        MetricType::Counter => name.strip_suffix("_total").unwrap_or(name),
        _ => name,
    };
    r.register(name, help.strip_suffix('.').unwrap_or(help), metric);
}

impl Families {
    fn new(r: &mut Registry) -> Self {
        let rows = Family::new(FTP);
        for (name, help, field) in [
            (
                "strait_records_replicated_total",
                "Records acknowledged by the target.",
                Field::Records,
            ),
            (
                "strait_bytes_replicated_total",
                "Record batch bytes acknowledged by the target.",
                Field::Bytes,
            ),
            (
                "strait_lag_offsets",
                "Source high watermark minus the next source offset to replicate.",
                Field::LagOffsets,
            ),
            (
                "strait_lag_seconds",
                "Age of the newest acknowledged record when the partition is behind; 0 when caught up.",
                Field::LagSeconds,
            ),
            (
                "strait_offset_map_runs",
                "Runs in the partition's offset map (1 for a topic without gaps).",
                Field::MapRuns,
            ),
            (
                "strait_held_bytes",
                "Fetched bytes of the partition held back until their transaction is decided.",
                Field::Held,
            ),
        ] {
            register(
                r,
                name,
                help,
                field.metric_type(),
                Column::new(&rows, field),
            );
        }
        Families {
            rows,
            latency: reg(
                r,
                "strait_replication_latency_seconds",
                "Source record timestamp (max of the batch) to target acknowledgement.",
                &["flow", "topic"],
            ),
            fetch_errors: reg(
                r,
                "strait_fetch_errors_total",
                "Fetch failures affecting a partition.",
                FTP,
            ),
            fetch_retries: reg(
                r,
                "strait_fetch_retries_total",
                "Fetches of a partition retried after an error or a leader change.",
                FTP,
            ),
            produce_errors: reg(
                r,
                "strait_produce_errors_total",
                "Batches the producer gave up on (after its own retries).",
                FTP,
            ),
            produce_retries: reg(
                r,
                "strait_produce_retries_total",
                "Restarts of a partition's pipeline after a produce error (data is re-fetched).",
                FTP,
            ),
            slow_path: reg(
                r,
                "strait_slow_path_batches_total",
                "Source batches re-encoded instead of forwarded, by reason.",
                &["flow", "topic", "partition", "reason"],
            ),
            coalesce_inputs: reg(
                r,
                "strait_coalesced_input_batches_total",
                "Batches merged into larger ones while the partition's in-flight window was full.",
                FTP,
            ),
            coalesce_outputs: reg(
                r,
                "strait_coalesced_output_batches_total",
                "Merged batches produced by coalescing.",
                FTP,
            ),
            coalesce_bytes: reg(
                r,
                "strait_coalesced_bytes_copied_total",
                "Bytes written into merged batches by coalescing (copies of the inputs).",
                FTP,
            ),
            dropped: reg(
                r,
                "strait_dropped_batches_total",
                "Source batches not forwarded: control markers and aborted transactions.",
                &["flow", "topic", "partition", "kind"],
            ),
            incidents: reg(
                r,
                "strait_incidents_total",
                "Source truncation, topic re-creation, target mismatch, unsupported partition growth.",
                &["flow", "topic", "partition", "kind"],
            ),
            in_flight_bytes: reg(
                r,
                "strait_in_flight_bytes",
                "Fetched bytes held by batches not yet acknowledged.",
                FLOW,
            ),
            topics_created: reg(
                r,
                "strait_topics_created_total",
                "Target topics created.",
                FLOW,
            ),
            config_updates: reg(
                r,
                "strait_topic_config_updates_total",
                "Target topic config changes applied.",
                FLOW,
            ),
            topic_failures: reg(
                r,
                "strait_topic_sync_failures_total",
                "Topic creations, config updates or growths that failed.",
                FLOW,
            ),
            groups_translated: reg(
                r,
                "strait_group_sync_groups_translated_total",
                "Consumer groups whose offsets were translated.",
                FLOW,
            ),
            offsets_committed: reg(
                r,
                "strait_group_offsets_committed_total",
                "Translated offsets committed on the target.",
                &["flow", "group"],
            ),
            staleness: reg(
                r,
                "strait_group_translation_staleness_seconds",
                "Seconds since the group's offsets were last translated.",
                &["flow", "group"],
            ),
            checkpoints: reg(
                r,
                "strait_checkpoint_records_written_total",
                "MM2-compatible checkpoint records written.",
                FLOW,
            ),
            heartbeats: reg(
                r,
                "strait_heartbeats_emitted_total",
                "Heartbeat records written.",
                FLOW,
            ),
            state_writes: reg(
                r,
                "strait_state_records_written_total",
                "Offset-map records written to the state topic.",
                FLOW,
            ),
            flow_up: reg(
                r,
                "strait_flow_up",
                "1 while the flow is replicating, 0 otherwise.",
                FLOW,
            ),
            restarts: reg(
                r,
                "strait_partition_restarts_total",
                "In-process restarts of a partition's pipeline after it failed.",
                FTP,
            ),
            restarting: reg(
                r,
                "strait_partition_restarting",
                "1 while the partition's pipeline is down waiting for a restart, 0 while it runs.",
                FTP,
            ),
        }
    }
}

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

/// A partition `/health` watches: its series key (flow, topic, partition), the partition
/// and its progress (gone when the partition stops).
type Watched = (family::SeriesKey, i32, std::sync::Weak<Progress>);

/// Default of [`Metrics::set_stalled_after`]: five minutes.
pub const DEFAULT_STALLED_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// A partition's progress as `/health` sees it: its lag, and when it last moved (an
/// acknowledgement, or being caught up).
#[derive(Debug)]
struct Progress {
    lag: std::sync::atomic::AtomicI64,
    moved_ms: std::sync::atomic::AtomicI64,
}

/// The `/health` line for a stalled partition, if it is one (pure: `now` is given).
fn stall_line(
    flow: &str,
    topic: &str,
    partition: i32,
    lag: i64,
    moved_ms: i64,
    now_ms: i64,
    stalled_after_ms: u64,
) -> Option<String> {
    let idle = now_ms.saturating_sub(moved_ms);
    (lag > 0 && u64::try_from(idle).unwrap_or(0) > stalled_after_ms).then(|| {
        format!(
            "flow {flow}: partition {topic}-{partition} stalled: {lag} record(s) behind, \
             nothing acknowledged for {}s",
            idle / 1000
        )
    })
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

    /// How long a partition may be behind with nothing acknowledged before `/health`
    /// reports it stalled.
    pub fn set_stalled_after(&self, after: std::time::Duration) {
        self.inner.stalled_after_ms.store(
            u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    fn ftp<T: Default + Clone>(fam: &Family<T>, flow: &str, topic: &str, partition: i32) -> T {
        fam.get(&[flow, topic, &p(partition)])
    }

    /// Handles for one partition's data-path series, resolved once.
    pub fn partition(&self, flow: &str, topic: &str, partition: i32) -> PartitionMetrics {
        let f = &self.inner.f;
        // One key string for the partition's six series.
        let key = family::SeriesKey::of(&[flow, topic, &p(partition)]);
        let progress = Arc::new(Progress {
            lag: std::sync::atomic::AtomicI64::new(0),
            moved_ms: std::sync::atomic::AtomicI64::new(now_ms()),
        });
        {
            let mut all = self
                .inner
                .partitions
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            all.push(
                (key.clone(), partition, Arc::downgrade(&progress)),
                |(_, _, w)| w.strong_count() > 0,
            );
        }
        PartitionMetrics {
            progress,
            metrics: self.clone(),
            partition,
            row: f.rows.get_key(&key),
            latency: f.latency.get(&[flow, topic]),
            engine_latency: self.inner.engine.latency.get(&[flow]),
            produce_ack: self.inner.engine.produce.get(&[flow]),
            lazy: std::sync::OnceLock::new(),
            key,
        }
    }

    /// `n` records acknowledged by the target.
    pub fn records_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).add_records(n);
    }

    /// `n` bytes acknowledged by the target.
    pub fn bytes_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).add_bytes(n);
    }

    /// Sets the partition's lag in offsets.
    pub fn lag_offsets(&self, flow: &str, topic: &str, partition: i32, lag: i64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).set_lag_offsets(lag);
    }

    /// Sets the partition's lag in seconds.
    pub fn lag_seconds(&self, flow: &str, topic: &str, partition: i32, secs: f64) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition).set_lag_seconds(secs);
    }

    /// One replication latency observation, in seconds.
    pub fn replication_latency(&self, flow: &str, topic: &str, secs: f64) {
        self.inner.f.latency.get(&[flow, topic]).observe(secs);
    }

    /// A fetch failed for the partition.
    pub fn fetch_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_errors, flow, topic, partition).inc_by(1);
    }

    /// The partition's fetch is retried (after an error or leader change).
    pub fn fetch_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_retries, flow, topic, partition).inc_by(1);
    }

    /// The producer gave up on a batch of the partition.
    pub fn produce_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_errors, flow, topic, partition).inc_by(1);
    }

    /// The partition's pipeline restarts after a produce error.
    pub fn produce_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_retries, flow, topic, partition).inc_by(1);
    }

    /// A source batch went through the slow path (`reason`: `gapped`, `empty`, `too_large`).
    pub fn slow_path_batch(&self, flow: &str, topic: &str, partition: i32, reason: &str) {
        let pp = p(partition);
        self.inner
            .f
            .slow_path
            .get(&[flow, topic, &pp, reason])
            .inc_by(1);
    }

    /// `inputs` batches of the partition were merged into one batch of `bytes` bytes.
    pub fn coalesced(&self, flow: &str, topic: &str, partition: i32, inputs: u64, bytes: u64) {
        let f = &self.inner.f;
        Self::ftp(&f.coalesce_inputs, flow, topic, partition).inc_by(inputs);
        Self::ftp(&f.coalesce_outputs, flow, topic, partition).inc_by(1);
        Self::ftp(&f.coalesce_bytes, flow, topic, partition).inc_by(bytes);
    }

    /// Sets the number of runs in the partition's offset map.
    pub fn offset_map_runs(&self, flow: &str, topic: &str, partition: i32, runs: usize) {
        Self::ftp(&self.inner.f.rows, flow, topic, partition)
            .set_map_runs(i64::try_from(runs).unwrap_or(i64::MAX));
    }

    /// A source batch was dropped (`kind`: `control` or `aborted`).
    pub fn dropped_batch(&self, flow: &str, topic: &str, partition: i32, kind: &str) {
        let pp = p(partition);
        self.inner
            .f
            .dropped
            .get(&[flow, topic, &pp, kind])
            .inc_by(1);
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

    /// A partition's pipeline failed (`restarts` so far in its sequence, which began at
    /// `since_ms`) and waits for a restart.
    pub fn partition_failed(
        &self,
        flow: &str,
        topic: &str,
        partition: i32,
        since_ms: i64,
        restarts: u32,
        cause: &str,
    ) {
        Self::ftp(&self.inner.f.restarts, flow, topic, partition).inc();
        Self::ftp(&self.inner.f.restarting, flow, topic, partition).set(1);
        self.failing().insert(
            (flow.to_owned(), topic.to_owned(), partition),
            restart::Failing {
                since_ms,
                up_since_ms: None,
                restarts,
                cause: cause.to_owned(),
            },
        );
    }

    /// A partition's pipeline (re)started.
    pub fn partition_started(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.restarting, flow, topic, partition).set(0);
        let key = (flow.to_owned(), topic.to_owned(), partition);
        if let Some(f) = self.failing().get_mut(&key) {
            f.up_since_ms = Some(now_ms());
        }
    }

    /// The partition ran healthy after its restarts: `/health` forgets them.
    pub fn partition_healthy(&self, flow: &str, topic: &str, partition: i32) {
        self.failing()
            .remove(&(flow.to_owned(), topic.to_owned(), partition));
    }

    fn failing(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<(String, String, i32), restart::Failing>> {
        self.inner
            .failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        for fam in [&f.coalesce_inputs, &f.coalesce_outputs, &f.coalesce_bytes] {
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

    /// Sets (or clears, with `None`) the `/health` line for bytes held for open
    /// transactions beyond the budget's limit.
    pub fn set_held_alarm(&self, line: Option<String>) {
        let on = &self.inner.held_alarm_on;
        if line.is_none() && !on.load(Ordering::Acquire) {
            return;
        }
        let mut alarm = self
            .inner
            .held_alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        on.store(line.is_some(), Ordering::Release);
        *alarm = line;
    }

    /// Records a flow's state (for `/health` and `strait_flow_up`).
    pub fn set_flow_state(&self, flow: &str, state: FlowState) {
        let up = i64::from(state == FlowState::Running);
        self.inner.f.flow_up.get(&[flow]).set(up);
        self.inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(flow.to_owned(), state);
    }

    /// The flow's state, if it was ever set.
    pub fn flow_state(&self, flow: &str) -> Option<FlowState> {
        self.inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(flow)
            .cloned()
    }

    /// `Ok` with a summary when every flow is running, `Err` naming those that are not
    /// (also when no flow was registered yet), the partitions stalled, and those
    /// restarting for longer than `stalled_after`.
    pub fn health(&self) -> Result<String, String> {
        let flows = self
            .inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if flows.is_empty() {
            return Err("no flow started yet".to_owned());
        }
        let mut bad: Vec<String> = flows
            .iter()
            .filter(|(_, s)| **s != FlowState::Running)
            .map(|(name, s)| format!("flow {name}: {}", s.describe()))
            .collect();
        let (now, after) = (
            now_ms(),
            self.inner.stalled_after_ms.load(Ordering::Relaxed),
        );
        for (key, partition, w) in self
            .inner
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            if let Some(p) = w.upgrade()
                && let Some(line) = stall_line(
                    key.value(0),
                    key.value(1),
                    *partition,
                    p.lag.load(Ordering::Relaxed),
                    p.moved_ms.load(Ordering::Relaxed),
                    now,
                    after,
                )
            {
                bad.push(line);
            }
        }
        for ((flow, topic, partition), f) in self.failing().iter() {
            if let Some(line) = restart::restart_line(
                flow,
                topic,
                *partition,
                f,
                now,
                std::time::Duration::from_millis(after),
                crate::supervisor::HEALTHY_AFTER,
            ) {
                bad.push(line);
            }
        }
        if let Some(line) = self
            .inner
            .held_alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            bad.push(line);
        }
        if bad.is_empty() {
            Ok(format!("ok: {} flow(s) running", flows.len()))
        } else {
            Err(bad.join("\n"))
        }
    }

    /// Every metric in OpenMetrics text format ([`CONTENT_TYPE`]), ending in `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; an encoder error would only truncate.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }
}

/// One partition's hot-path series, resolved once (updates are atomic operations only).
#[derive(Clone)]
pub struct PartitionMetrics {
    progress: Arc<Progress>,
    metrics: Metrics,
    /// Its series' key: flow, topic, partition (the labels of its lazy series too).
    key: family::SeriesKey,
    partition: i32,
    /// Records, bytes, lags, map runs and held bytes ([`row`]).
    row: Arc<PartitionRow>,
    latency: Histogram,
    /// The flow's `strait_replication_engine_latency_seconds` (shared by its partitions).
    engine_latency: EngineHistogram,
    /// The flow's `strait_produce_ack_seconds`.
    produce_ack: EngineHistogram,
    /// Series that exist only once they count (they are not rendered at 0 before),
    /// resolved on first use. The cache itself is made on first use too: most partitions
    /// never coalesce, drop or take the slow path, and it is ~170 bytes. Clones made
    /// after share it; one made before makes its own, which finds the same series.
    lazy: std::sync::OnceLock<Arc<LazySeries>>,
}

/// The labelled kinds of `strait_dropped_batches_total` the data path counts, by index in
/// [`LazySeries::dropped`].
const DROPPED_KINDS: [&str; 3] = ["control", "aborted", "duplicate_on_target"];
/// The reasons of `strait_slow_path_batches_total`, by index in [`LazySeries::slow`].
const SLOW_REASONS: [&str; 4] = ["gapped", "empty", "too_large", "partial"];

/// A partition's series created on first use: the first call takes the family's lock and
/// builds the label key; every later one is an atomic add on the kept handle.
#[derive(Default)]
struct LazySeries {
    /// Coalescing: inputs, outputs, bytes copied.
    coalesce: std::sync::OnceLock<[Counter; 3]>,
    dropped: [std::sync::OnceLock<Counter>; DROPPED_KINDS.len()],
    slow: [std::sync::OnceLock<Counter>; SLOW_REASONS.len()],
}

impl std::fmt::Debug for PartitionMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionMetrics")
            .field("flow", &self.flow())
            .field("topic", &self.topic())
            .field("partition", &self.partition)
            .finish_non_exhaustive()
    }
}

impl PartitionMetrics {
    fn flow(&self) -> &str {
        self.key.value(0)
    }

    fn topic(&self) -> &str {
        self.key.value(1)
    }

    /// An acknowledged batch: `records`, `bytes`, and its latency in seconds.
    pub fn acked(&self, records: u64, bytes: u64, latency_secs: f64) {
        self.progress.moved_ms.store(now_ms(), Ordering::Relaxed);
        self.row.add_records(records);
        self.row.add_bytes(bytes);
        self.latency.observe(latency_secs);
    }

    /// A batch acknowledged by the target whose oldest input came in the Fetch response
    /// received at `fetched` (`strait_replication_engine_latency_seconds`) and that was
    /// handed to the producer at `handed` (`strait_produce_ack_seconds`).
    pub fn engine_acked(&self, fetched: std::time::Instant, handed: std::time::Instant) {
        let now = std::time::Instant::now();
        self.engine_latency
            .observe(now.saturating_duration_since(fetched).as_secs_f64());
        self.produce_ack
            .observe(now.saturating_duration_since(handed).as_secs_f64());
    }

    /// Records and bytes acknowledged so far, and the lag in offsets (scale-out weighs
    /// partitions by these).
    pub fn load(&self) -> (u64, u64, i64) {
        (
            self.row.records(),
            self.row.bytes(),
            self.progress.lag.load(Ordering::Relaxed),
        )
    }

    /// Sets the lag.
    pub fn lag(&self, offsets: i64, secs: f64) {
        self.progress.lag.store(offsets, Ordering::Relaxed);
        if offsets <= 0 {
            self.progress.moved_ms.store(now_ms(), Ordering::Relaxed);
        }
        self.row.set_lag_offsets(offsets);
        self.row.set_lag_seconds(secs);
    }

    /// Sets the offset map's run count.
    pub fn map_runs(&self, runs: usize) {
        self.row
            .set_map_runs(i64::try_from(runs).unwrap_or(i64::MAX));
    }

    /// Sets the bytes the partition holds back for open transactions.
    pub fn held(&self, bytes: u64) {
        self.row.set_held(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// See [`Metrics::set_held_alarm`].
    pub fn held_alarm(&self, line: Option<String>) {
        self.metrics.set_held_alarm(line);
    }

    /// The cache of its lazy series, made on first use.
    fn lazies(&self) -> &LazySeries {
        self.lazy.get_or_init(Arc::default)
    }

    /// The partition's series of `fam` with this last label, from `cache` after the
    /// first call.
    fn lazy<'c>(
        &self,
        cache: &'c std::sync::OnceLock<Counter>,
        fam: &Family<Counter>,
        last: &str,
    ) -> &'c Counter {
        cache.get_or_init(|| fam.get(&[self.flow(), self.topic(), &p(self.partition), last]))
    }

    /// See [`Metrics::slow_path_batch`] (without a lookup after the first call for a
    /// reason).
    pub fn slow_path(&self, reason: &str) {
        match SLOW_REASONS.iter().position(|r| *r == reason) {
            Some(i) => {
                let fam = &self.metrics.inner.f.slow_path;
                self.lazy(&self.lazies().slow[i], fam, reason).inc_by(1);
            }
            None => self
                .metrics
                .slow_path_batch(self.flow(), self.topic(), self.partition, reason),
        }
    }

    /// See [`Metrics::coalesced`] (without a lookup after the first call).
    pub fn coalesced(&self, inputs: u64, bytes: u64) {
        let [i, o, b] = self.lazies().coalesce.get_or_init(|| {
            let f = &self.metrics.inner.f;
            let (fl, t, pt) = (self.flow(), self.topic(), self.partition);
            [
                Metrics::ftp(&f.coalesce_inputs, fl, t, pt),
                Metrics::ftp(&f.coalesce_outputs, fl, t, pt),
                Metrics::ftp(&f.coalesce_bytes, fl, t, pt),
            ]
        });
        i.inc_by(inputs);
        o.inc_by(1);
        b.inc_by(bytes);
    }

    /// See [`Metrics::dropped_batch`].
    pub fn dropped(&self, kind: &str) {
        self.dropped_n(kind, 1);
    }

    /// `n` source batches dropped (`kind`: `control`, `aborted`, `duplicate_on_target`);
    /// no lookup after the first call for a kind.
    pub fn dropped_n(&self, kind: &str, n: u64) {
        if n == 0 {
            return;
        }
        match DROPPED_KINDS.iter().position(|k| *k == kind) {
            Some(i) => {
                let fam = &self.metrics.inner.f.dropped;
                self.lazy(&self.lazies().dropped[i], fam, kind).inc_by(n);
            }
            None => {
                let pp = p(self.partition);
                let fam = &self.metrics.inner.f.dropped;
                fam.get(&[self.flow(), self.topic(), &pp, kind]).inc_by(n);
            }
        }
    }

    /// See [`Metrics::fetch_error`] (and counts the retry that follows).
    pub fn fetch_error(&self) {
        self.metrics
            .fetch_error(self.flow(), self.topic(), self.partition);
        self.metrics
            .fetch_retry(self.flow(), self.topic(), self.partition);
    }

    /// See [`Metrics::fetch_retry`].
    pub fn fetch_retry(&self) {
        self.metrics
            .fetch_retry(self.flow(), self.topic(), self.partition);
    }

    /// See [`Metrics::produce_error`] (and counts the pipeline restart that follows).
    pub fn produce_error(&self) {
        self.metrics
            .produce_error(self.flow(), self.topic(), self.partition);
        self.metrics
            .produce_retry(self.flow(), self.topic(), self.partition);
    }

    /// See [`Metrics::incident`].
    pub fn incident(&self, kind: IncidentKind) {
        self.metrics
            .incident(self.flow(), self.topic(), self.partition, kind);
    }

    /// Records acknowledged so far.
    pub fn records_total(&self) -> u64 {
        self.row.records()
    }

    /// Bytes acknowledged so far.
    pub fn bytes_total(&self) -> u64 {
        self.row.bytes()
    }
}

#[cfg(test)]
mod tests;
