//! The engine's metrics and health, served in Prometheus text format by [`http`].
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
mod family;
pub mod http;
mod tls;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use family::{Counter, Gauge, Histogram, LATENCY_BUCKETS};
use family::{Family, Series};

use crate::error::IncidentKind;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

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
    records: Family<Counter>,
    bytes: Family<Counter>,
    lag_offsets: Family<Gauge>,
    lag_seconds: Family<Gauge>,
    latency: Family<Histogram>,
    fetch_errors: Family<Counter>,
    fetch_retries: Family<Counter>,
    produce_errors: Family<Counter>,
    produce_retries: Family<Counter>,
    slow_path: Family<Counter>,
    coalesce_inputs: Family<Counter>,
    coalesce_outputs: Family<Counter>,
    coalesce_bytes: Family<Counter>,
    map_runs: Family<Gauge>,
    dropped: Family<Counter>,
    incidents: Family<Counter>,
    in_flight_bytes: Family<Gauge>,
    topics_created: Family<Counter>,
    config_updates: Family<Counter>,
    topic_failures: Family<Counter>,
    groups_translated: Family<Counter>,
    offsets_committed: Family<Counter>,
    staleness: Family<Gauge>,
    checkpoints: Family<Counter>,
    heartbeats: Family<Counter>,
    state_writes: Family<Counter>,
    flow_up: Family<Gauge>,
}

impl Families {
    fn new() -> Self {
        Families {
            records: Family::new(
                "strait_records_replicated_total",
                "Records acknowledged by the target.",
                FTP,
            ),
            bytes: Family::new(
                "strait_bytes_replicated_total",
                "Record batch bytes acknowledged by the target.",
                FTP,
            ),
            lag_offsets: Family::new(
                "strait_lag_offsets",
                "Source high watermark minus the next source offset to replicate.",
                FTP,
            ),
            lag_seconds: Family::new(
                "strait_lag_seconds",
                "Age of the newest acknowledged record when the partition is behind; 0 when caught up.",
                FTP,
            ),
            latency: Family::new(
                "strait_replication_latency_seconds",
                "Source record timestamp (max of the batch) to target acknowledgement.",
                &["flow", "topic"],
            ),
            fetch_errors: Family::new(
                "strait_fetch_errors_total",
                "Fetch failures affecting a partition.",
                FTP,
            ),
            fetch_retries: Family::new(
                "strait_fetch_retries_total",
                "Fetches of a partition retried after an error or a leader change.",
                FTP,
            ),
            produce_errors: Family::new(
                "strait_produce_errors_total",
                "Batches the producer gave up on (after its own retries).",
                FTP,
            ),
            produce_retries: Family::new(
                "strait_produce_retries_total",
                "Restarts of a partition's pipeline after a produce error (data is re-fetched).",
                FTP,
            ),
            slow_path: Family::new(
                "strait_slow_path_batches_total",
                "Source batches re-encoded instead of forwarded, by reason.",
                &["flow", "topic", "partition", "reason"],
            ),
            coalesce_inputs: Family::new(
                "strait_coalesced_input_batches_total",
                "Batches merged into larger ones while the partition's in-flight window was full.",
                FTP,
            ),
            coalesce_outputs: Family::new(
                "strait_coalesced_output_batches_total",
                "Merged batches produced by coalescing.",
                FTP,
            ),
            coalesce_bytes: Family::new(
                "strait_coalesced_bytes_copied_total",
                "Bytes written into merged batches by coalescing (copies of the inputs).",
                FTP,
            ),
            map_runs: Family::new(
                "strait_offset_map_runs",
                "Runs in the partition's offset map (1 for a topic without gaps).",
                FTP,
            ),
            dropped: Family::new(
                "strait_dropped_batches_total",
                "Source batches not forwarded: control markers and aborted transactions.",
                &["flow", "topic", "partition", "kind"],
            ),
            incidents: Family::new(
                "strait_incidents_total",
                "Source truncation, topic re-creation, target truncation, unsupported partition growth.",
                &["flow", "topic", "partition", "kind"],
            ),
            in_flight_bytes: Family::new(
                "strait_in_flight_bytes",
                "Fetched bytes held by batches not yet acknowledged.",
                FLOW,
            ),
            topics_created: Family::new(
                "strait_topics_created_total",
                "Target topics created.",
                FLOW,
            ),
            config_updates: Family::new(
                "strait_topic_config_updates_total",
                "Target topic config changes applied.",
                FLOW,
            ),
            topic_failures: Family::new(
                "strait_topic_sync_failures_total",
                "Topic creations, config updates or growths that failed.",
                FLOW,
            ),
            groups_translated: Family::new(
                "strait_group_sync_groups_translated_total",
                "Consumer groups whose offsets were translated.",
                FLOW,
            ),
            offsets_committed: Family::new(
                "strait_group_offsets_committed_total",
                "Translated offsets committed on the target.",
                &["flow", "group"],
            ),
            staleness: Family::new(
                "strait_group_translation_staleness_seconds",
                "Seconds since the group's offsets were last translated.",
                &["flow", "group"],
            ),
            checkpoints: Family::new(
                "strait_checkpoint_records_written_total",
                "MM2-compatible checkpoint records written.",
                FLOW,
            ),
            heartbeats: Family::new(
                "strait_heartbeats_emitted_total",
                "Heartbeat records written.",
                FLOW,
            ),
            state_writes: Family::new(
                "strait_state_records_written_total",
                "Offset-map records written to the state topic.",
                FLOW,
            ),
            flow_up: Family::new(
                "strait_flow_up",
                "1 while the flow is replicating, 0 otherwise.",
                FLOW,
            ),
        }
    }
}

struct Inner {
    f: Families,
    flows: Mutex<BTreeMap<String, FlowState>>,
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
        Metrics {
            inner: Arc::new(Inner {
                f: Families::new(),
                flows: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    fn ftp<T: Series>(fam: &Family<T>, flow: &str, topic: &str, partition: i32) -> Arc<T> {
        fam.get(&[flow, topic, &p(partition)])
    }

    /// Handles for one partition's data-path series, resolved once.
    pub fn partition(&self, flow: &str, topic: &str, partition: i32) -> PartitionMetrics {
        let f = &self.inner.f;
        PartitionMetrics {
            metrics: self.clone(),
            flow: flow.to_owned(),
            topic: topic.to_owned(),
            partition,
            records: Self::ftp(&f.records, flow, topic, partition),
            bytes: Self::ftp(&f.bytes, flow, topic, partition),
            lag_offsets: Self::ftp(&f.lag_offsets, flow, topic, partition),
            lag_seconds: Self::ftp(&f.lag_seconds, flow, topic, partition),
            latency: f.latency.get(&[flow, topic]),
            map_runs: Self::ftp(&f.map_runs, flow, topic, partition),
        }
    }

    /// `n` records acknowledged by the target.
    pub fn records_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.records, flow, topic, partition).add(n);
    }

    /// `n` bytes acknowledged by the target.
    pub fn bytes_replicated(&self, flow: &str, topic: &str, partition: i32, n: u64) {
        Self::ftp(&self.inner.f.bytes, flow, topic, partition).add(n);
    }

    /// Sets the partition's lag in offsets.
    pub fn lag_offsets(&self, flow: &str, topic: &str, partition: i32, lag: i64) {
        Self::ftp(&self.inner.f.lag_offsets, flow, topic, partition).set(lag as f64);
    }

    /// Sets the partition's lag in seconds.
    pub fn lag_seconds(&self, flow: &str, topic: &str, partition: i32, secs: f64) {
        Self::ftp(&self.inner.f.lag_seconds, flow, topic, partition).set(secs);
    }

    /// One replication latency observation, in seconds.
    pub fn replication_latency(&self, flow: &str, topic: &str, secs: f64) {
        self.inner.f.latency.get(&[flow, topic]).observe(secs);
    }

    /// A fetch failed for the partition.
    pub fn fetch_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_errors, flow, topic, partition).add(1);
    }

    /// The partition's fetch is retried (after an error or leader change).
    pub fn fetch_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.fetch_retries, flow, topic, partition).add(1);
    }

    /// The producer gave up on a batch of the partition.
    pub fn produce_error(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_errors, flow, topic, partition).add(1);
    }

    /// The partition's pipeline restarts after a produce error.
    pub fn produce_retry(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.produce_retries, flow, topic, partition).add(1);
    }

    /// A source batch went through the slow path (`reason`: `gapped`, `empty`, `too_large`).
    pub fn slow_path_batch(&self, flow: &str, topic: &str, partition: i32, reason: &str) {
        let pp = p(partition);
        self.inner
            .f
            .slow_path
            .get(&[flow, topic, &pp, reason])
            .add(1);
    }

    /// `inputs` batches of the partition were merged into one batch of `bytes` bytes.
    pub fn coalesced(&self, flow: &str, topic: &str, partition: i32, inputs: u64, bytes: u64) {
        let f = &self.inner.f;
        Self::ftp(&f.coalesce_inputs, flow, topic, partition).add(inputs);
        Self::ftp(&f.coalesce_outputs, flow, topic, partition).add(1);
        Self::ftp(&f.coalesce_bytes, flow, topic, partition).add(bytes);
    }

    /// Sets the number of runs in the partition's offset map.
    pub fn offset_map_runs(&self, flow: &str, topic: &str, partition: i32, runs: usize) {
        Self::ftp(&self.inner.f.map_runs, flow, topic, partition).set(runs as f64);
    }

    /// A source batch was dropped (`kind`: `control` or `aborted`).
    pub fn dropped_batch(&self, flow: &str, topic: &str, partition: i32, kind: &str) {
        let pp = p(partition);
        self.inner.f.dropped.get(&[flow, topic, &pp, kind]).add(1);
    }

    /// An incident was detected (under either policy). `partition` is -1 for topic-wide
    /// incidents.
    pub fn incident(&self, flow: &str, topic: &str, partition: i32, kind: IncidentKind) {
        let pp = p(partition);
        self.inner
            .f
            .incidents
            .get(&[flow, topic, &pp, kind.as_str()])
            .add(1);
    }

    /// Sets the fetched bytes awaiting acknowledgement in the flow.
    pub fn in_flight_bytes(&self, flow: &str, bytes: u64) {
        self.inner.f.in_flight_bytes.get(&[flow]).set(bytes as f64);
    }

    /// A target topic was created.
    pub fn topic_created(&self, flow: &str) {
        self.inner.f.topics_created.get(&[flow]).add(1);
    }

    /// `n` target topic config changes were applied.
    pub fn topic_config_updates(&self, flow: &str, n: u64) {
        self.inner.f.config_updates.get(&[flow]).add(n);
    }

    /// A topic creation, config update or growth failed.
    pub fn topic_sync_failure(&self, flow: &str) {
        self.inner.f.topic_failures.get(&[flow]).add(1);
    }

    /// `n` groups were translated in one group sync.
    pub fn groups_translated(&self, flow: &str, n: u64) {
        self.inner.f.groups_translated.get(&[flow]).add(n);
    }

    /// `n` translated offsets of `group` were committed on the target.
    pub fn group_offsets_committed(&self, flow: &str, group: &str, n: u64) {
        self.inner.f.offsets_committed.get(&[flow, group]).add(n);
    }

    /// Sets the seconds since `group`'s offsets were last translated.
    pub fn group_translation_staleness(&self, flow: &str, group: &str, secs: f64) {
        self.inner.f.staleness.get(&[flow, group]).set(secs);
    }

    /// `n` MM2 checkpoint records were written.
    pub fn checkpoints_written(&self, flow: &str, n: u64) {
        self.inner.f.checkpoints.get(&[flow]).add(n);
    }

    /// A heartbeat was written.
    pub fn heartbeat_emitted(&self, flow: &str) {
        self.inner.f.heartbeats.get(&[flow]).add(1);
    }

    /// `n` offset-map records were written to the state topic.
    pub fn state_records_written(&self, flow: &str, n: u64) {
        self.inner.f.state_writes.get(&[flow]).add(n);
    }

    /// Drops a partition's series (e.g. its topic was deleted at the source).
    pub fn remove_partition(&self, flow: &str, topic: &str, partition: i32) {
        let pp = p(partition);
        let key = [flow, topic, pp.as_str()];
        let f = &self.inner.f;
        for fam in [&f.records, &f.bytes, &f.fetch_errors, &f.fetch_retries] {
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
        for fam in [&f.lag_offsets, &f.lag_seconds, &f.map_runs] {
            fam.remove_prefix(&key);
        }
        for fam in [&f.coalesce_inputs, &f.coalesce_outputs, &f.coalesce_bytes] {
            fam.remove_prefix(&key);
        }
    }

    /// Records a flow's state (for `/health` and `strait_flow_up`).
    pub fn set_flow_state(&self, flow: &str, state: FlowState) {
        let up = if state == FlowState::Running {
            1.0
        } else {
            0.0
        };
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
    /// (also when no flow was registered yet).
    pub fn health(&self) -> Result<String, String> {
        let flows = self
            .inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if flows.is_empty() {
            return Err("no flow started yet".to_owned());
        }
        let bad: Vec<String> = flows
            .iter()
            .filter(|(_, s)| **s != FlowState::Running)
            .map(|(name, s)| format!("flow {name}: {}", s.describe()))
            .collect();
        if bad.is_empty() {
            Ok(format!("ok: {} flow(s) running", flows.len()))
        } else {
            Err(bad.join("\n"))
        }
    }

    /// Every metric in Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let f = &self.inner.f;
        let mut out = String::new();
        for fam in [&f.records, &f.bytes] {
            fam.render(&mut out);
        }
        for fam in [&f.lag_offsets, &f.lag_seconds] {
            fam.render(&mut out);
        }
        f.latency.render(&mut out);
        for fam in [&f.fetch_errors, &f.fetch_retries, &f.produce_errors] {
            fam.render(&mut out);
        }
        for fam in [&f.produce_retries, &f.slow_path, &f.dropped, &f.incidents] {
            fam.render(&mut out);
        }
        for fam in [&f.coalesce_inputs, &f.coalesce_outputs, &f.coalesce_bytes] {
            fam.render(&mut out);
        }
        f.map_runs.render(&mut out);
        f.in_flight_bytes.render(&mut out);
        for fam in [&f.topics_created, &f.config_updates, &f.topic_failures] {
            fam.render(&mut out);
        }
        f.groups_translated.render(&mut out);
        f.offsets_committed.render(&mut out);
        f.staleness.render(&mut out);
        for fam in [&f.checkpoints, &f.heartbeats, &f.state_writes] {
            fam.render(&mut out);
        }
        f.flow_up.render(&mut out);
        out
    }
}

/// One partition's hot-path series, resolved once (updates are atomic operations only).
#[derive(Clone)]
pub struct PartitionMetrics {
    metrics: Metrics,
    flow: String,
    topic: String,
    partition: i32,
    records: Arc<Counter>,
    bytes: Arc<Counter>,
    lag_offsets: Arc<Gauge>,
    lag_seconds: Arc<Gauge>,
    latency: Arc<Histogram>,
    map_runs: Arc<Gauge>,
}

impl std::fmt::Debug for PartitionMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionMetrics")
            .field("flow", &self.flow)
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .finish_non_exhaustive()
    }
}

impl PartitionMetrics {
    /// An acknowledged batch: `records`, `bytes`, and its latency in seconds.
    pub fn acked(&self, records: u64, bytes: u64, latency_secs: f64) {
        self.records.add(records);
        self.bytes.add(bytes);
        self.latency.observe(latency_secs);
    }

    /// Sets the lag.
    pub fn lag(&self, offsets: i64, secs: f64) {
        self.lag_offsets.set(offsets as f64);
        self.lag_seconds.set(secs);
    }

    /// Sets the offset map's run count.
    pub fn map_runs(&self, runs: usize) {
        self.map_runs.set(runs as f64);
    }

    /// See [`Metrics::slow_path_batch`].
    pub fn slow_path(&self, reason: &str) {
        self.metrics
            .slow_path_batch(&self.flow, &self.topic, self.partition, reason);
    }

    /// See [`Metrics::coalesced`].
    pub fn coalesced(&self, inputs: u64, bytes: u64) {
        self.metrics
            .coalesced(&self.flow, &self.topic, self.partition, inputs, bytes);
    }

    /// See [`Metrics::dropped_batch`].
    pub fn dropped(&self, kind: &str) {
        self.metrics
            .dropped_batch(&self.flow, &self.topic, self.partition, kind);
    }

    /// See [`Metrics::fetch_error`] (and counts the retry that follows).
    pub fn fetch_error(&self) {
        self.metrics
            .fetch_error(&self.flow, &self.topic, self.partition);
        self.metrics
            .fetch_retry(&self.flow, &self.topic, self.partition);
    }

    /// See [`Metrics::fetch_retry`].
    pub fn fetch_retry(&self) {
        self.metrics
            .fetch_retry(&self.flow, &self.topic, self.partition);
    }

    /// See [`Metrics::produce_error`] (and counts the pipeline restart that follows).
    pub fn produce_error(&self) {
        self.metrics
            .produce_error(&self.flow, &self.topic, self.partition);
        self.metrics
            .produce_retry(&self.flow, &self.topic, self.partition);
    }

    /// See [`Metrics::incident`].
    pub fn incident(&self, kind: IncidentKind) {
        self.metrics
            .incident(&self.flow, &self.topic, self.partition, kind);
    }

    /// Records acknowledged so far.
    pub fn records_total(&self) -> u64 {
        self.records.get()
    }

    /// Bytes acknowledged so far.
    pub fn bytes_total(&self) -> u64 {
        self.bytes.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_contains_every_family_with_help_and_type() {
        let m = Metrics::new();
        let text = m.render();
        for name in [
            "strait_records_replicated_total",
            "strait_lag_seconds",
            "strait_replication_latency_seconds",
            "strait_slow_path_batches_total",
            "strait_incidents_total",
            "strait_group_translation_staleness_seconds",
            "strait_checkpoint_records_written_total",
            "strait_flow_up",
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}");
        }
    }

    #[test]
    fn plain_methods_and_partition_handles_share_series() {
        let m = Metrics::new();
        m.records_replicated("f", "t", 0, 5);
        let h = m.partition("f", "t", 0);
        h.acked(7, 100, 0.02);
        h.lag(3, 1.5);
        h.slow_path("gapped");
        h.dropped("control");
        h.incident(IncidentKind::SourceTruncation);
        m.group_translation_staleness("f", "g1", 4.0);
        let text = m.render();
        for line in [
            "strait_records_replicated_total{flow=\"f\",topic=\"t\",partition=\"0\"} 12",
            "strait_bytes_replicated_total{flow=\"f\",topic=\"t\",partition=\"0\"} 100",
            "strait_lag_offsets{flow=\"f\",topic=\"t\",partition=\"0\"} 3",
            "strait_lag_seconds{flow=\"f\",topic=\"t\",partition=\"0\"} 1.5",
            "strait_replication_latency_seconds_count{flow=\"f\",topic=\"t\"} 1",
            "strait_slow_path_batches_total{flow=\"f\",topic=\"t\",partition=\"0\",reason=\"gapped\"} 1",
            "strait_dropped_batches_total{flow=\"f\",topic=\"t\",partition=\"0\",kind=\"control\"} 1",
            "strait_incidents_total{flow=\"f\",topic=\"t\",partition=\"0\",kind=\"source_truncation\"} 1",
            "strait_group_translation_staleness_seconds{flow=\"f\",group=\"g1\"} 4",
        ] {
            assert!(
                text.contains(&format!("{line}\n")),
                "missing {line}\n{text}"
            );
        }
        m.remove_partition("f", "t", 0);
        assert!(!m.render().contains("partition=\"0\"}"));
    }

    #[test]
    fn health_requires_every_flow_running() {
        let m = Metrics::new();
        assert!(m.health().is_err(), "no flow yet");
        m.set_flow_state("a", FlowState::Running);
        m.set_flow_state("b", FlowState::Starting);
        assert_eq!(m.health().unwrap_err(), "flow b: starting");
        m.set_flow_state("b", FlowState::Running);
        assert_eq!(m.health().unwrap(), "ok: 2 flow(s) running");
        m.set_flow_state("a", FlowState::Failed("source truncation".into()));
        assert_eq!(m.health().unwrap_err(), "flow a: failed: source truncation");
        assert!(m.render().contains("strait_flow_up{flow=\"a\"} 0\n"));
        assert!(m.render().contains("strait_flow_up{flow=\"b\"} 1\n"));
    }
}
