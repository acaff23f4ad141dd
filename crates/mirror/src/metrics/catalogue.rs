//! The catalogue of the engine's metric families: every name, help text and label set
//! in one place ([`Families::new`]), registered in the `prometheus-client` registry.
//! Long by nature (one entry per family); nothing here decides anything.

use std::sync::Arc;

use prometheus_client::encoding::EncodeMetric;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Metric, Registry};

use super::family::Family;
use super::row::{Column, Field, PartitionRow};
use super::{Counter, Gauge, Histogram, IntGauge};

pub(super) const FTP: &[&str] = &["flow", "topic", "partition"];
pub(super) const FLOW: &[&str] = &["flow"];

pub(super) struct Families {
    /// Every partition's row: `strait_records_replicated_total`,
    /// `strait_bytes_replicated_total`, `strait_lag_offsets`, `strait_lag_seconds`,
    /// `strait_offset_map_runs` and `strait_held_bytes` are its columns ([`super::row`]).
    pub(super) rows: Family<Arc<PartitionRow>>,
    pub(super) latency: Family<Histogram>,
    pub(super) fetch_errors: Family<Counter>,
    pub(super) fetch_retries: Family<Counter>,
    pub(super) produce_errors: Family<Counter>,
    pub(super) produce_retries: Family<Counter>,
    pub(super) slow_path: Family<Counter>,
    pub(super) coalesce_inputs: Family<Counter>,
    pub(super) coalesce_outputs: Family<Counter>,
    pub(super) coalesce_bytes: Family<Counter>,
    pub(super) recompressed_inputs: Family<Counter>,
    pub(super) dropped: Family<Counter>,
    pub(super) incidents: Family<Counter>,
    pub(super) in_flight_bytes: Family<IntGauge>,
    pub(super) topics_created: Family<Counter>,
    pub(super) config_updates: Family<Counter>,
    pub(super) topic_failures: Family<Counter>,
    pub(super) groups_translated: Family<Counter>,
    pub(super) offsets_committed: Family<Counter>,
    pub(super) staleness: Family<Gauge>,
    pub(super) checkpoints: Family<Counter>,
    pub(super) heartbeats: Family<Counter>,
    pub(super) state_writes: Family<Counter>,
    pub(super) flow_up: Family<IntGauge>,
    pub(super) restarts: Family<Counter>,
    pub(super) restarting: Family<IntGauge>,
}

/// Registers a family. Counters are registered without `_total` (the OpenMetrics encoder
/// appends it to the samples), and the encoder appends the final `.` to the help text.
pub(super) fn reg<M>(
    r: &mut Registry,
    name: &str,
    help: &str,
    labels: &'static [&'static str],
) -> Family<M>
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
    /// Creates every family and registers it in `r`.
    ///
    /// One long function on purpose: it is a table, read top to bottom, one entry per
    /// family (name, help text, labels). Split into steps, the catalogue would have to be
    /// pieced together from several places.
    pub(super) fn new(r: &mut Registry) -> Self {
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
            recompressed_inputs: reg(
                r,
                "strait_recompressed_input_batches_total",
                "Compressed batches decompressed and merged into a recompressed batch by coalescing.",
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
