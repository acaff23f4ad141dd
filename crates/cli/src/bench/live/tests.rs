use super::*;

#[test]
fn a_late_tick_is_owed_in_sends_no_larger_than_the_cap() {
    // 1 KiB values: 512 per send, the rest in the next.
    assert_eq!(send_end(0, 1700, 1024), 512);
    assert_eq!(send_end(1536, 1700, 1024), 1700);
    // A value larger than the cap still goes, alone.
    assert_eq!(send_end(7, 10, 1 << 20), 8);
    assert_eq!(send_end(0, 3, 0), 3);
}

#[test]
fn percentiles_by_nearest_rank() {
    let mut v: Vec<u64> = (1..=100).rev().map(|ms| ms * 1000).collect();
    let p = Percentiles::of_micros(&mut v);
    assert_eq!(
        (p.samples, p.p50, p.p90, p.p99, p.max),
        (100, 50.0, 90.0, 99.0, 100.0)
    );
    assert_eq!(Percentiles::of_micros(&mut []), Percentiles::default());
    let p = Percentiles::of_micros(&mut [7000]);
    assert_eq!((p.p50, p.p99, p.max), (7.0, 7.0, 7.0));
}

#[test]
fn percentiles_of_a_histogram_interpolate_in_its_buckets() {
    let h = strait_mirror::metrics::EngineHistogram::default();
    // 0.5–1 ms bucket: 50; 7.5–10 ms: 49; one at 40 ms (30–40 ms bucket).
    for _ in 0..50 {
        h.observe(0.0008);
    }
    for _ in 0..49 {
        h.observe(0.009);
    }
    h.observe(0.04);
    let p = Percentiles::of_histogram(&h.snapshot());
    assert_eq!(p.samples, 100);
    assert!((p.p50 - 1.0).abs() < 1e-9, "{p:?}");
    assert!(p.p90 > 7.5 && p.p90 < 10.0, "inside its bucket: {p:?}");
    assert!((p.max - 40.0).abs() < 1e-9, "{p:?}");
    assert_eq!(
        Percentiles::of_histogram(&strait_mirror::metrics::EngineHistogram::default().snapshot()),
        Percentiles::default()
    );
}

#[test]
fn header_round_trip_and_tables() {
    assert_eq!(
        decode_header(&encode_header(42, 123_456)),
        Some((42, 123_456))
    );
    assert_eq!(decode_header(b"short"), None);
    let t = Table::new(2);
    assert_eq!(t.set_range(1, 0, 3, 10), 0);
    assert_eq!(t.set_range(1, 2, 4, 20), 1, "slot 2 was set already");
    assert_eq!(t.snapshot(1), vec![10, 10, 10, 20]);
    assert!(t.snapshot(0).is_empty());
}
