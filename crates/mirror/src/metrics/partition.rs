//! One partition's hot-path series ([`PartitionMetrics`]), resolved once when the
//! partition starts: every later update is an atomic operation on a kept handle.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::family::Family;
use super::health::Progress;
use super::row::PartitionRow;
use super::{Counter, EngineHistogram, Histogram, Metrics, family, p};
use crate::clock::now_ms;
use crate::error::IncidentKind;

impl Metrics {
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
}

/// One partition's hot-path series, resolved once (updates are atomic operations only).
#[derive(Clone)]
pub struct PartitionMetrics {
    progress: Arc<Progress>,
    metrics: Metrics,
    /// Its series' key: flow, topic, partition (the labels of its lazy series too).
    key: family::SeriesKey,
    partition: i32,
    /// Records, bytes, lags, map runs and held bytes ([`super::row`]).
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
pub(super) const DROPPED_KINDS: [&str; 3] = ["control", "aborted", "duplicate_on_target"];
/// The reasons of `strait_slow_path_batches_total`, by index in [`LazySeries::slow`].
pub(super) const SLOW_REASONS: [&str; 4] = ["gapped", "empty", "too_large", "partial"];

/// A partition's series created on first use: the first call takes the family's lock and
/// builds the label key; every later one is an atomic add on the kept handle.
#[derive(Default)]
struct LazySeries {
    /// Coalescing: inputs, outputs, bytes copied.
    coalesce: std::sync::OnceLock<[Counter; 3]>,
    /// Coalescing: compressed inputs recompressed.
    recompressed: std::sync::OnceLock<Counter>,
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

    /// A source batch went through the slow path (`reason`: `gapped`, `empty`,
    /// `too_large`, `partial`); no lookup after the first call for a reason.
    pub fn slow_path(&self, reason: &str) {
        match SLOW_REASONS.iter().position(|r| *r == reason) {
            Some(i) => {
                let fam = &self.metrics.inner.f.slow_path;
                self.lazy(&self.lazies().slow[i], fam, reason).inc_by(1);
            }
            None => {
                let pp = p(self.partition);
                let fam = &self.metrics.inner.f.slow_path;
                fam.get(&[self.flow(), self.topic(), &pp, reason]).inc_by(1);
            }
        }
    }

    /// `inputs` batches were merged into one batch of `bytes` bytes (no lookup after the
    /// first call).
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

    /// `inputs` compressed batches were decompressed and merged into one recompressed
    /// batch (counted on top of [`PartitionMetrics::coalesced`]).
    pub fn recompressed(&self, inputs: u64) {
        self.lazies()
            .recompressed
            .get_or_init(|| {
                let f = &self.metrics.inner.f;
                Metrics::ftp(
                    &f.recompressed_inputs,
                    self.flow(),
                    self.topic(),
                    self.partition,
                )
            })
            .inc_by(inputs);
    }

    /// A source batch dropped (see [`PartitionMetrics::dropped_n`]).
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

    /// A fetch of the partition failed (and the retry that follows).
    pub fn fetch_error(&self) {
        self.count(&self.metrics.inner.f.fetch_errors);
        self.fetch_retry();
    }

    /// The partition's fetch is retried (after an error or a leader change).
    pub fn fetch_retry(&self) {
        self.count(&self.metrics.inner.f.fetch_retries);
    }

    /// The producer gave up on a batch of the partition (and the pipeline restart that
    /// follows).
    pub fn produce_error(&self) {
        let f = &self.metrics.inner.f;
        self.count(&f.produce_errors);
        self.count(&f.produce_retries);
    }

    /// One more in the partition's series of `fam` (rare events: looked up each time).
    fn count(&self, fam: &Family<Counter>) {
        Metrics::ftp(fam, self.flow(), self.topic(), self.partition).inc_by(1);
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
