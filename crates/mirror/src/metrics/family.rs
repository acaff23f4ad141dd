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

#[derive(Debug)]
struct HistogramInner {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum: AtomicU64,
}

/// A histogram over [`LATENCY_BUCKETS`], atomics only. Clones share the series.
#[derive(Debug, Clone)]
pub struct Histogram(Arc<HistogramInner>);

impl Default for Histogram {
    fn default() -> Self {
        Histogram(Arc::new(HistogramInner {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0f64.to_bits()),
        }))
    }
}

impl Histogram {
    /// Records one observation (negative values, from clock skew, count as 0).
    pub fn observe(&self, v: f64) {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| v <= *b) {
            self.0.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.0.count.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .0
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let count = self.count();
        let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(LATENCY_BUCKETS.len() + 1);
        let mut seen = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(&self.0.buckets) {
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
pub(crate) struct Family<M> {
    labels: &'static [&'static str],
    series: Arc<Mutex<BTreeMap<Vec<String>, M>>>,
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
        let key: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        series.entry(key).or_default().clone()
    }

    /// Drops every series whose label values start with `prefix`.
    pub(crate) fn remove_prefix(&self, prefix: &[&str]) {
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        series.retain(|k, _| {
            k.len() < prefix.len() || k.iter().zip(prefix).any(|(a, b)| a.as_str() != *b)
        });
    }
}

impl<M> EncodeMetric for Family<M>
where
    M: EncodeMetric + TypedMetric + Clone,
{
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        // Copy the handles and let go of the lock before encoding: the data path takes it
        // to create series, and must not wait for a whole family to be written out.
        let series: Vec<(Vec<String>, M)> = self
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (values, m) in &series {
            let labels: Vec<(&str, &str)> = self
                .labels
                .iter()
                .copied()
                .zip(values.iter().map(String::as_str))
                .collect();
            m.encode(encoder.encode_family(&labels)?)?;
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
