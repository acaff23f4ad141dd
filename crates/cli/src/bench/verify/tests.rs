use super::*;
use bytes::Bytes;

fn rec(offset: i64, key: &str, value: &str, header: &str, ts: i64) -> ConsumedRecord {
    ConsumedRecord {
        offset,
        timestamp: ts,
        key: Some(Bytes::copy_from_slice(key.as_bytes())),
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: vec![(
            Bytes::from_static(b"h"),
            Some(Bytes::copy_from_slice(header.as_bytes())),
        )],
    }
}

fn digest(records: &[ConsumedRecord]) -> PartitionDigest {
    let mut d = PartitionDigest::default();
    records.iter().for_each(|r| d.push(r));
    d
}

fn sample() -> Vec<ConsumedRecord> {
    (0..5)
        .map(|i| rec(i, &format!("k{i}"), &format!("v{i}"), "x", 1000 + i))
        .collect()
}

#[test]
fn equal_sides_pass_even_at_other_offsets() {
    let src = sample();
    let mut dst = sample();
    dst.iter_mut().for_each(|r| r.offset += 100);
    let v = compare(&[digest(&src), digest(&[])], &[digest(&dst), digest(&[])]);
    assert!(v.ok, "{v:?}");
    assert_eq!(v.source_records(), 5);
    assert!(v.summary().starts_with("ok"));
}

#[test]
fn every_kind_of_difference_fails() {
    let src = sample();
    let base = digest(&src);
    let mut variants: Vec<(&str, Vec<ConsumedRecord>)> = Vec::new();
    let mut v = sample();
    v.pop();
    variants.push(("missing record", v));
    let mut v = sample();
    v.push(rec(5, "k4", "v4", "x", 1004));
    variants.push(("duplicate", v));
    let mut v = sample();
    v.swap(1, 2);
    variants.push(("reordered", v));
    let mut v = sample();
    v[3].value = Some(Bytes::from_static(b"v3!"));
    variants.push(("value", v));
    let mut v = sample();
    v[0].key = None;
    variants.push(("key", v));
    let mut v = sample();
    v[2].headers[0].1 = Some(Bytes::from_static(b"y"));
    variants.push(("header value", v));
    let mut v = sample();
    v[2].headers.push((Bytes::from_static(b"h2"), None));
    variants.push(("extra header", v));
    let mut v = sample();
    v[4].timestamp += 1;
    variants.push(("timestamp", v));
    for (what, dst) in variants {
        let verdict = compare(std::slice::from_ref(&base), &[digest(&dst)]);
        assert!(!verdict.ok, "{what} not detected");
        assert!(!verdict.partitions[0].ok, "{what}");
        assert!(verdict.summary().starts_with("FAILED"), "{what}");
    }
    // A missing partition fails too.
    let verdict = compare(&[base.clone(), base.clone()], std::slice::from_ref(&base));
    assert!(!verdict.ok);
    assert!(
        verdict
            .summary()
            .contains("2 partitions on the source, 1 on the target")
    );
}
