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
mod tests {
    use prometheus_client::registry::Registry;

    use super::super::family::{Counter, Gauge, IntGauge, SeriesKey};
    use super::*;

    fn text(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn a_column_renders_what_a_family_of_its_type_renders() {
        let labels: &'static [&'static str] = &["flow", "topic", "partition"];
        let rows: Family<Arc<PartitionRow>> = Family::new(labels);
        let (records, lag, secs) = (
            Family::<Counter>::new(labels),
            Family::<IntGauge>::new(labels),
            Family::<Gauge>::new(labels),
        );
        for (i, key) in [["f", "t", "1"], ["f", "t", "0"], ["e", "u", "9"]]
            .iter()
            .enumerate()
        {
            let key = SeriesKey::of(key);
            let row = rows.get_key(&key);
            let n = i as u64 + 1;
            row.add_records(n * 10);
            records.get_key(&key).inc_by(n * 10);
            row.set_lag_offsets(-(n as i64));
            lag.get_key(&key).set(-(n as i64));
            row.set_lag_seconds(n as f64 / 4.0);
            secs.get_key(&key).set(n as f64 / 4.0);
        }
        let (mut as_columns, mut as_families) = (Registry::default(), Registry::default());
        as_columns.register("r", "records", Column::new(&rows, Field::Records));
        as_columns.register("l", "lag", Column::new(&rows, Field::LagOffsets));
        as_columns.register("s", "seconds", Column::new(&rows, Field::LagSeconds));
        as_families.register("r", "records", records);
        as_families.register("l", "lag", lag);
        as_families.register("s", "seconds", secs);
        let columns = text(&as_columns);
        assert_eq!(columns, text(&as_families));
        assert!(
            columns.contains("r_total{flow=\"e\",topic=\"u\",partition=\"9\"} 30"),
            "{columns}"
        );
        assert!(
            columns.contains("s{flow=\"f\",topic=\"t\",partition=\"0\"} 0.5"),
            "{columns}"
        );
    }

    #[test]
    fn every_field_reads_back_what_was_set_and_removing_a_prefix_drops_the_row() {
        let rows: Family<Arc<PartitionRow>> = Family::new(&["flow", "topic", "partition"]);
        let row = rows.get_key(&SeriesKey::of(&["f", "t", "0"]));
        row.add_records(3);
        row.add_bytes(7);
        row.set_map_runs(2);
        row.set_held(5);
        let mut registry = Registry::default();
        for (name, field) in [
            ("m", Field::MapRuns),
            ("h", Field::Held),
            ("b", Field::Bytes),
        ] {
            registry.register(name, "x", Column::new(&rows, field));
        }
        let out = text(&registry);
        for line in [
            "m{flow=\"f\",topic=\"t\",partition=\"0\"} 2",
            "h{flow=\"f\",topic=\"t\",partition=\"0\"} 5",
            "b_total{flow=\"f\",topic=\"t\",partition=\"0\"} 7",
        ] {
            assert!(out.contains(line), "{line} in {out}");
        }
        assert_eq!((row.records(), row.bytes()), (3, 7));
        rows.remove_prefix(&["f", "t", "0"]);
        let out = text(&registry);
        assert!(!out.contains("partition="), "{out}");
        assert!(out.contains("# TYPE m gauge"), "{out}");
    }
}
