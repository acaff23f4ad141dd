use super::*;

#[test]
fn deterministic() {
    let spec = RecordSpec::default();
    let a = DataGen::new(7).records(5, &spec);
    let b = DataGen::new(7).records(5, &spec);
    assert_eq!(a, b);
    assert_ne!(a, DataGen::new(8).records(5, &spec));
    assert_eq!(a[3].key.as_ref().unwrap().len(), 16);
    assert!(a[3].key.as_ref().unwrap().starts_with(b"k00000003-"));
    assert_eq!(a[3].value.as_ref().unwrap().len(), 100);
    assert_eq!(a[3].timestamp, Some(1_700_000_000_003));
    assert_eq!(a[3].headers.len(), 1);
}

#[test]
fn shapes() {
    let mut g = DataGen::new(1);
    let r = g.record(&RecordSpec {
        key_len: None,
        value_len: None,
        headers: 0,
        partition: None,
        timestamp_base: None,
        ..RecordSpec::default()
    });
    assert_eq!(r, TestRecord::default());
    let t = g.text(1000);
    assert_eq!(t.len(), 1000);
    assert!(t.iter().all(|b| b.is_ascii_lowercase() || *b == b' '));
    assert_eq!(g.edge_cases(3).len(), 6);
}
