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
