//! Metric families on top of `prometheus-client`: its counter and gauge types and its
//! OpenMetrics text encoder, with a family type of our own and a lock-free histogram.
//!
//! Why not `prometheus_client::metrics::family::Family` and `Histogram`: its family holds
//! its read lock while the whole family is encoded (the data path creating a series would
//! wait for that), cannot drop series by label prefix, and its histogram takes a lock on
//! every observation. Here a family is locked only to create a series or to copy the
//! handles before encoding, and the hot path keeps series handles (`Arc` clones) and
//! updates atomics only.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A monotonically increasing integer (`inc_by`, `get`).
pub type Counter = prometheus_client::metrics::counter::Counter<u64, AtomicU64>;
/// A value that goes up and down, an `f64` (`set`, `get`).
pub type Gauge = prometheus_client::metrics::gauge::Gauge<f64, AtomicU64>;
/// An integer gauge (rendered without a decimal point).
pub type IntGauge = prometheus_client::metrics::gauge::Gauge<i64, AtomicI64>;

/// Upper bounds of the latency histogram buckets, in seconds.
pub const LATENCY_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Upper bounds of the engine's own timings (fetch wait, fetch to target acknowledgement),
/// in seconds: fine below 50 ms, where a 10 ms target is judged.
pub const ENGINE_BUCKETS: [f64; 26] = [
    0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03,
    0.04, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A histogram's bucket bounds (a type, so that a family's series are created with them).
pub trait Bounds: std::fmt::Debug + Send + Sync + 'static {
    /// Upper bounds, ascending, in seconds (`+Inf` is implied).
    const BOUNDS: &'static [f64];
}

/// [`LATENCY_BUCKETS`]: end-to-end latencies, 1 ms to 5 minutes.
#[derive(Debug)]
pub struct Coarse;
impl Bounds for Coarse {
    const BOUNDS: &'static [f64] = &LATENCY_BUCKETS;
}

/// [`ENGINE_BUCKETS`]: the engine's own share, 0.5 ms to a minute.
#[derive(Debug)]
pub struct Fine;
impl Bounds for Fine {
    const BOUNDS: &'static [f64] = &ENGINE_BUCKETS;
}

#[derive(Debug)]
struct HistogramInner {
    /// Per bucket (not cumulative), one per bound; above the last bound only `count` moves.
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    /// The largest observation (its `f64` bits: for non-negative values they order as the
    /// values do). Not exported; read by [`Histogram::snapshot`].
    max: AtomicU64,
}

/// A histogram over `B`'s bounds, atomics only. Clones share the series.
#[derive(Debug)]
pub struct Histogram<B: Bounds = Coarse>(Arc<HistogramInner>, std::marker::PhantomData<B>);

impl<B: Bounds> Clone for Histogram<B> {
    fn clone(&self) -> Self {
        Histogram(Arc::clone(&self.0), std::marker::PhantomData)
    }
}

impl<B: Bounds> Default for Histogram<B> {
    fn default() -> Self {
        Histogram(
            Arc::new(HistogramInner {
                buckets: B::BOUNDS.iter().map(|_| AtomicU64::new(0)).collect(),
                count: AtomicU64::new(0),
                sum: AtomicU64::new(0f64.to_bits()),
                max: AtomicU64::new(0f64.to_bits()),
            }),
            std::marker::PhantomData,
        )
    }
}

impl<B: Bounds> Histogram<B> {
    /// Records one observation (negative values, from clock skew, count as 0).
    pub fn observe(&self, v: f64) {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        let i = B::BOUNDS.partition_point(|b| *b < v);
        if let Some(b) = self.0.buckets.get(i) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        self.0.count.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .0
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
        self.0.max.fetch_max(v.to_bits(), Ordering::Relaxed);
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }

    /// A copy of the counts (for reading in-process, e.g. by `strait bench`).
    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bounds: B::BOUNDS,
            buckets: self
                .0
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            count: self.count(),
            sum: f64::from_bits(self.0.sum.load(Ordering::Relaxed)),
            max: f64::from_bits(self.0.max.load(Ordering::Relaxed)),
        }
    }
}

/// A histogram's counts at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Upper bounds of the buckets, seconds.
    pub bounds: &'static [f64],
    /// Observations per bucket (not cumulative); those above the last bound are
    /// `count` minus their sum.
    pub buckets: Vec<u64>,
    /// Observations.
    pub count: u64,
    /// Their sum, seconds.
    pub sum: f64,
    /// The largest, seconds (0 with none).
    pub max: f64,
}

impl HistogramSnapshot {
    /// The `q` quantile (0–1) in seconds, interpolated linearly inside its bucket as
    /// Prometheus' `histogram_quantile` does (the first bucket starting at 0), and never
    /// above the largest observation; `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * self.count as f64;
        let mut below = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n > 0 && (below + n) as f64 >= rank {
                let lower = if i == 0 { 0.0 } else { self.bounds[i - 1] };
                let upper = self.bounds[i];
                let within = ((rank - below as f64) / n as f64).clamp(0.0, 1.0);
                return Some((lower + (upper - lower) * within).min(self.max));
            }
            below += n;
        }
        // Above the last bound: only the maximum is known.
        Some(self.max)
    }
}

impl<B: Bounds> TypedMetric for Histogram<B> {
    const TYPE: MetricType = MetricType::Histogram;
}

impl<B: Bounds> EncodeMetric for Histogram<B> {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let count = self.count();
        let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(B::BOUNDS.len() + 1);
        let mut seen = 0;
        for (bound, n) in B::BOUNDS.iter().zip(self.0.buckets.iter()) {
            let n = n.load(Ordering::Relaxed);
            seen += n;
            buckets.push((*bound, n));
        }
        // Per bucket, not cumulative (the encoder sums); the rest falls in +Inf.
        buckets.push((f64::INFINITY, count.saturating_sub(seen)));
        let sum = f64::from_bits(self.0.sum.load(Ordering::Relaxed));
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// All series of one metric, by label values. Clones share the series (one clone is
/// registered for encoding, the engine keeps the other).
///
/// A series' key is its label values joined by [`SEP`] in one shared string
/// ([`SeriesKey`]): one allocation per series rather than a `Vec` and a `String` per value,
/// and one for all of a partition's series, which share their label values (six series
/// of three labels per partition, 10,000 partitions). The separator sorts below every
/// other character, so the series keep the order of their values.
pub(crate) struct Family<M> {
    labels: &'static [&'static str],
    series: Arc<Mutex<BTreeMap<Arc<str>, M>>>,
}

/// Label values made into a series key once, for every family that has a series with
/// them ([`Family::get_key`]).
#[derive(Debug, Clone)]
pub(crate) struct SeriesKey(Arc<str>);

impl SeriesKey {
    /// The key of the series with label values `values`.
    pub(crate) fn of(values: &[&str]) -> Self {
        SeriesKey(Arc::from(key(values)))
    }

    /// Label value `i` as the key holds it (a separator in it replaced); empty past the
    /// last.
    pub(crate) fn value(&self, i: usize) -> &str {
        self.0.split(SEP).nth(i).unwrap_or("")
    }
}

/// Separates label values in a series key. A value holding it has it replaced by U+FFFD
/// (no flow, cluster or topic name a config or Kafka accepts holds it).
const SEP: char = '\0';

/// The key of the series with label values `values`.
fn key(values: &[&str]) -> Box<str> {
    let mut k = String::with_capacity(values.iter().map(|v| v.len() + 1).sum());
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            k.push(SEP);
        }
        if v.contains(SEP) {
            k.push_str(&v.replace(SEP, "\u{fffd}"));
        } else {
            k.push_str(v);
        }
    }
    k.into_boxed_str()
}

/// Whether `in_key`, a value as a key holds it, is the value `value`.
fn same(in_key: &str, value: &str) -> bool {
    if value.contains(SEP) {
        in_key == value.replace(SEP, "\u{fffd}")
    } else {
        in_key == value
    }
}

impl<M> Clone for Family<M> {
    fn clone(&self) -> Self {
        Family {
            labels: self.labels,
            series: Arc::clone(&self.series),
        }
    }
}

impl<M> std::fmt::Debug for Family<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Family")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl<M: Clone> Family<M> {
    /// A copy of every series' key and handle, in key order. The lock is let go before
    /// the caller encodes them: the data path takes it to create series, and must not
    /// wait for a whole family to be written out.
    pub(crate) fn series(&self) -> Vec<(Arc<str>, M)> {
        self.series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A series key's values paired with the family's label names.
    pub(crate) fn labels_of<'k>(&self, key: &'k str) -> Vec<(&'static str, &'k str)> {
        self.labels.iter().copied().zip(key.split(SEP)).collect()
    }
}

impl<M: Default + Clone> Family<M> {
    pub(crate) fn new(labels: &'static [&'static str]) -> Self {
        Family {
            labels,
            series: Arc::new(Mutex::new(BTreeMap::new())),
        }
    }

    /// The series for `values` (one per label, in order), created on first use. The
    /// handle is a clone sharing the series: keep it rather than looking it up again.
    pub(crate) fn get(&self, values: &[&str]) -> M {
        debug_assert_eq!(values.len(), self.labels.len(), "{:?}", self.labels);
        self.get_key(&SeriesKey::of(values))
    }

    /// [`Family::get`] by a key made once ([`SeriesKey::of`] of one value per label); a
    /// new series shares the key's string.
    pub(crate) fn get_key(&self, key: &SeriesKey) -> M {
        debug_assert_eq!(
            key.0.split(SEP).count(),
            self.labels.len(),
            "{:?}",
            self.labels
        );
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        series.entry(Arc::clone(&key.0)).or_default().clone()
    }

    /// Drops every series whose label values start with `prefix`.
    pub(crate) fn remove_prefix(&self, prefix: &[&str]) {
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        series.retain(|k, _| {
            let mut values = k.split(SEP);
            prefix.len() > self.labels.len()
                || prefix
                    .iter()
                    .any(|p| values.next().is_none_or(|v| !same(v, p)))
        });
    }
}

impl<M> EncodeMetric for Family<M>
where
    M: EncodeMetric + TypedMetric + Clone,
{
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for (values, m) in self.series() {
            m.encode(encoder.encode_family(&self.labels_of(&values))?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }

    // Families without series still get their HELP and TYPE lines (as before).
    fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
