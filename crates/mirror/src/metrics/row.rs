//! A partition's six always-present data-path series, kept as one row.
//!
//! Every replicated partition has a series in each of `strait_records_replicated_total`,
//! `strait_bytes_replicated_total`, `strait_lag_offsets`, `strait_lag_seconds`,
//! `strait_offset_map_runs` and `strait_held_bytes`, created together and dropped
//! together. As six families they cost six map entries and six `Arc`'d atomics per
//! partition (~400 bytes; 4 MiB at 10,000 partitions). Here they are one
//! [`PartitionRow`] (six atomics, one allocation) in one [`Family`], and each metric is a
//! [`Column`] of it: registered like a family, it renders its field of every row, with
//! the same text as a family of counters or gauges would.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use super::family::Family;

/// One partition's values (the handle the data path keeps updates atomics only).
#[derive(Debug, Default)]
pub(crate) struct PartitionRow {
    records: AtomicU64,
    bytes: AtomicU64,
    lag_offsets: AtomicI64,
    /// The `f64` bits.
    lag_seconds: AtomicU64,
    map_runs: AtomicI64,
    held: AtomicI64,
}

impl PartitionRow {
    /// `n` more records acknowledged.
    pub(crate) fn add_records(&self, n: u64) {
        self.records.fetch_add(n, Ordering::Relaxed);
    }

    /// `n` more bytes acknowledged.
    pub(crate) fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Records acknowledged so far.
    pub(crate) fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Bytes acknowledged so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Sets the lag in offsets.
    pub(crate) fn set_lag_offsets(&self, v: i64) {
        self.lag_offsets.store(v, Ordering::Relaxed);
    }

    /// Sets the lag in seconds.
    pub(crate) fn set_lag_seconds(&self, v: f64) {
        self.lag_seconds.store(v.to_bits(), Ordering::Relaxed);
    }

    /// Sets the offset map's run count.
    pub(crate) fn set_map_runs(&self, v: i64) {
        self.map_runs.store(v, Ordering::Relaxed);
    }

    /// Sets the bytes held back for open transactions.
    pub(crate) fn set_held(&self, v: i64) {
        self.held.store(v, Ordering::Relaxed);
    }
}

/// Which value of a row a [`Column`] renders, and as what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// Counter.
    Records,
    /// Counter.
    Bytes,
    /// Integer gauge.
    LagOffsets,
    /// Gauge.
    LagSeconds,
    /// Integer gauge.
    MapRuns,
    /// Integer gauge.
    Held,
}

impl Field {
    /// The metric type its samples have.
    pub(crate) fn metric_type(self) -> MetricType {
        match self {
            Field::Records | Field::Bytes => MetricType::Counter,
            _ => MetricType::Gauge,
        }
    }
}

/// One field of every row of a family, registered as a metric of its own.
#[derive(Debug)]
pub(crate) struct Column {
    rows: Family<Arc<PartitionRow>>,
    field: Field,
}

impl Column {
    /// The `field` of `rows`' rows.
    pub(crate) fn new(rows: &Family<Arc<PartitionRow>>, field: Field) -> Self {
        Column {
            rows: rows.clone(),
            field,
        }
    }
}

impl EncodeMetric for Column {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for (values, row) in self.rows.series() {
            let labels = self.rows.labels_of(&values);
            let mut e = encoder.encode_family(&labels)?;
            let r = &*row;
            match self.field {
                Field::Records => e.encode_counter::<NoLabelSet, _, u64>(&r.records(), None)?,
                Field::Bytes => e.encode_counter::<NoLabelSet, _, u64>(&r.bytes(), None)?,
                Field::LagOffsets => e.encode_gauge(&r.lag_offsets.load(Ordering::Relaxed))?,
                Field::LagSeconds => {
                    e.encode_gauge(&f64::from_bits(r.lag_seconds.load(Ordering::Relaxed)))?
                }
                Field::MapRuns => e.encode_gauge(&r.map_runs.load(Ordering::Relaxed))?,
                Field::Held => e.encode_gauge(&r.held.load(Ordering::Relaxed))?,
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        self.field.metric_type()
    }

    // Columns without rows still get their HELP and TYPE lines (as families do).
    fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
