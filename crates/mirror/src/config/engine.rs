//! `[engine]`: process-wide data-path tuning — the file's form, the resolved form and its
//! checks. [`Engine::producer_config`] is the one place the data path's producer settings
//! are put together.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::cluster::Cluster;
use super::defaults as d;
use super::problem::{KeyPath, Problem, duration_out_of_range};
use super::units::{ByteSize, HumanDuration};

/// `engine.delivery_timeout`: long enough for a request and a retry, short enough that a
/// dead target is reported within a day.
const DELIVERY_TIMEOUT_BOUNDS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(86_400));

/// Process-wide data-path tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSpec {
    /// Fetched bytes not yet acknowledged by the target; fetches wait when it is full.
    pub in_flight_memory: ByteSize,
    /// Produce requests in flight per partition (1..=5, the idempotent producer's limit).
    pub max_in_flight_per_partition: i64,
    /// How long a fetch may wait for data.
    pub fetch_max_wait: HumanDuration,
    /// Upper bound of one fetch response.
    pub fetch_max_bytes: ByteSize,
    /// Upper bound of one partition in one fetch response.
    pub fetch_partition_max_bytes: ByteSize,
    /// Largest batch built by coalescing queued small batches while a partition's
    /// in-flight window is full (never more than the target topic's `max.message.bytes`).
    pub coalesce_max_bytes: ByteSize,
    /// Whether compressed batches may be decompressed, merged and recompressed when
    /// coalescing.
    pub recompress: RecompressPolicy,
    /// Worker threads of the async runtime (`strait run`).
    pub worker_threads: i64,
    /// How long a batch may keep being retried before its produce fails (and the flow
    /// with it).
    pub delivery_timeout: HumanDuration,
}

/// Whether coalescing may recompress compressed batches (`engine.recompress`).
///
/// Coalescing only ever merges while a partition has more batches queued than its
/// in-flight window can send now (the target's request round trips are what holds the
/// partition back); this chooses which of those batches it may merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecompressPolicy {
    /// lz4, snappy and zstd batches smaller than [`SMALL_BATCH_BYTES`] may be decompressed,
    /// merged and recompressed (zstd at level 1); larger ones and gzip ones are forwarded
    /// as they are. A compressed batch that small carries too little per produce request
    /// (a target then takes a few MiB/s per partition); a larger one is forwarded for the
    /// cost of relaying its bytes, where recompressing it would cost several times that.
    /// Uncompressed batches are merged at any size (a copy, no codec work). Measured on
    /// Apache Kafka (docs/benchmarks.md).
    #[default]
    Small,
    /// Compressed batches are forwarded as they are; uncompressed ones of any size are
    /// merged.
    Never,
    /// Batches of any size may be merged: lz4, snappy and zstd ones decompressed, merged
    /// and recompressed (zstd at level 1); gzip ones are forwarded as they are. CPU for
    /// fewer round trips where even large batches leave the target request-bound (a
    /// high-latency link).
    Fast,
    /// Consecutive compressed batches of one codec may be decompressed, merged and
    /// recompressed (CPU for fewer round trips on high-latency links).
    Allowed,
}

/// Under [`RecompressPolicy::Small`], the size (header included) from which a compressed
/// batch is forwarded as it is rather than recompressed.
pub const SMALL_BATCH_BYTES: usize = 4 * 1024;

impl Default for EngineSpec {
    fn default() -> Self {
        Self {
            in_flight_memory: d::IN_FLIGHT_MEMORY,
            max_in_flight_per_partition: d::MAX_IN_FLIGHT_PER_PARTITION,
            fetch_max_wait: d::FETCH_MAX_WAIT,
            fetch_max_bytes: d::FETCH_MAX_BYTES,
            fetch_partition_max_bytes: d::FETCH_PARTITION_MAX_BYTES,
            coalesce_max_bytes: d::COALESCE_MAX_BYTES,
            recompress: RecompressPolicy::default(),
            worker_threads: d::WORKER_THREADS,
            delivery_timeout: d::DELIVERY_TIMEOUT,
        }
    }
}

/// Data-path tuning, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Engine {
    /// In-flight byte budget.
    pub in_flight_memory: u64,
    /// Produce requests in flight per partition (1..=5).
    pub max_in_flight_per_partition: u8,
    /// Fetch wait.
    pub fetch_max_wait: Duration,
    /// Fetch response bound (an `i32` on the wire).
    pub fetch_max_bytes: i32,
    /// Per-partition fetch bound.
    pub fetch_partition_max_bytes: i32,
    /// Largest coalesced batch (also capped by the target topic's `max.message.bytes`).
    pub coalesce_max_bytes: usize,
    /// Whether coalescing may recompress compressed batches.
    pub recompress: RecompressPolicy,
    /// Worker threads of the async runtime (1..=256).
    pub worker_threads: usize,
    /// How long a batch may keep being retried before its produce fails.
    pub delivery_timeout: Duration,
}

impl Engine {
    /// Produce requests in flight per partition (validation keeps the setting in 1..=5).
    pub fn max_in_flight(&self) -> usize {
        usize::from(self.max_in_flight_per_partition)
    }

    /// The data path's producer settings toward `target`: the window per partition, the
    /// delivery timeout, and the cluster's request timeout as the time a broker may hold
    /// a Produce (Kafka's `request.timeout.ms`). The one place they are put together.
    pub fn producer_config(&self, target: &Cluster) -> strait_client::ProducerConfig {
        strait_client::ProducerConfig {
            max_in_flight: self.max_in_flight(),
            delivery_timeout: self.delivery_timeout,
            request_timeout: target.request_timeout,
            ..strait_client::ProducerConfig::default()
        }
    }
}

/// Checks `spec` (at `at`, the `engine` table); every problem goes to `problems`.
pub fn resolve(spec: &EngineSpec, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<Engine> {
    let before = problems.len();
    check_bounds(spec, at, problems);
    check_sizes_agree(spec, at, problems);
    if problems.len() != before {
        return None;
    }
    Some(Engine {
        in_flight_memory: spec.in_flight_memory.0,
        max_in_flight_per_partition: u8::try_from(spec.max_in_flight_per_partition).ok()?,
        fetch_max_wait: spec.fetch_max_wait.0,
        fetch_max_bytes: i32::try_from(spec.fetch_max_bytes.0).ok()?,
        fetch_partition_max_bytes: i32::try_from(spec.fetch_partition_max_bytes.0).ok()?,
        coalesce_max_bytes: usize::try_from(spec.coalesce_max_bytes.0).ok()?,
        recompress: spec.recompress,
        worker_threads: usize::try_from(spec.worker_threads).ok()?,
        delivery_timeout: spec.delivery_timeout.0,
    })
}

/// Each setting on its own, within its range.
fn check_bounds(spec: &EngineSpec, at: &KeyPath, problems: &mut Vec<Problem>) {
    let inflight = spec.max_in_flight_per_partition;
    if !(1..=5).contains(&inflight) {
        problems.push(
            Problem::new(
                at.key("max_in_flight_per_partition"),
                format!("{inflight} is out of range"),
            )
            .expected("1..=5 (the idempotent producer keeps ordering for at most 5)"),
        );
    }
    if !(1..=256).contains(&spec.worker_threads) {
        problems.push(
            Problem::new(
                at.key("worker_threads"),
                format!("{} is out of range", spec.worker_threads),
            )
            .expected("1..=256"),
        );
    }
    if spec.fetch_max_wait.0 > Duration::from_secs(30) {
        problems.push(
            Problem::new(
                at.key("fetch_max_wait"),
                format!("{} is out of range", spec.fetch_max_wait),
            )
            .expected("at most 30s"),
        );
    }
    problems.extend(duration_out_of_range(
        at.key("delivery_timeout"),
        spec.delivery_timeout,
        DELIVERY_TIMEOUT_BOUNDS,
    ));
    let max_i32 = u64::try_from(i32::MAX).unwrap_or(u64::MAX);
    for (key, v) in [
        ("fetch_max_bytes", spec.fetch_max_bytes),
        ("fetch_partition_max_bytes", spec.fetch_partition_max_bytes),
        ("coalesce_max_bytes", spec.coalesce_max_bytes),
    ] {
        if v.0 < 1024 || v.0 > max_i32 {
            problems.push(
                Problem::new(at.key(key), format!("{v} is out of range"))
                    .expected("between 1KiB and 2GiB - 1"),
            );
        }
    }
}

/// The sizes against each other: a partition's fetch within the whole fetch, and the
/// in-flight memory able to hold one partition's record set.
fn check_sizes_agree(spec: &EngineSpec, at: &KeyPath, problems: &mut Vec<Problem>) {
    if spec.fetch_partition_max_bytes > spec.fetch_max_bytes {
        problems.push(
            Problem::new(
                at.key("fetch_partition_max_bytes"),
                format!(
                    "{} is larger than fetch_max_bytes ({})",
                    spec.fetch_partition_max_bytes, spec.fetch_max_bytes
                ),
            )
            .expected("at most `fetch_max_bytes`"),
        );
    }
    if spec.in_flight_memory < spec.fetch_partition_max_bytes {
        problems.push(
            Problem::new(
                at.key("in_flight_memory"),
                format!(
                    "{} cannot hold one partition's record set of \
                     fetch_partition_max_bytes ({})",
                    spec.in_flight_memory, spec.fetch_partition_max_bytes
                ),
            )
            .expected("at least `fetch_partition_max_bytes`"),
        );
    }
}
