use super::*;

/// offset delta, timestamp delta, key, value, headers
type Spec<'a> = (i32, i64, Option<&'a [u8]>, Option<&'a [u8]>, Vec<Header>);

fn encode(records: &[Spec<'_>]) -> Bytes {
    let mut out = Vec::new();
    for (od, td, k, v, h) in records {
        encode_record(&mut out, *od, *td, *k, *v, h).unwrap();
    }
    Bytes::from(out)
}

#[test]
fn null_and_empty_are_distinct() {
    let data = encode(&[
        (0, 0, None, Some(b""), vec![]),
        (
            1,
            -3,
            Some(b""),
            None,
            vec![Header {
                key: Bytes::from_static(b"h"),
                value: None,
            }],
        ),
    ]);
    let recs: Vec<_> = Records::new(data, 2, 100, 1000)
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(recs[0].key, None);
    assert_eq!(recs[0].value.as_deref(), Some(&b""[..]));
    assert_eq!(recs[1].key.as_deref(), Some(&b""[..]));
    assert_eq!(recs[1].value, None);
    assert_eq!(recs[1].offset, 101);
    assert_eq!(recs[1].timestamp, 997);
    assert_eq!(recs[1].headers[0].value, None);
}

#[test]
fn count_is_enforced() {
    let v: &[u8] = b"0123456789";
    let data = encode(&[(0, 0, None, Some(v), vec![]), (1, 0, None, Some(v), vec![])]);
    // Fewer declared than present: trailing bytes.
    let r: Result<Vec<_>> = Records::new(data.clone(), 1, 0, 0).unwrap().collect();
    assert!(matches!(
        r.as_ref().map_err(|e| e.root()),
        Err(Error::TrailingBytes { count: 1, .. })
    ));
    // More declared than present.
    let r: Result<Vec<_>> = Records::new(data.clone(), 3, 0, 0).unwrap().collect();
    assert!(matches!(
        r.as_ref().map_err(|e| e.root()),
        Err(Error::InvalidRecord { index: 2, .. })
    ));
    // Impossible counts are rejected before iterating.
    assert!(Records::new(data.clone(), -1, 0, 0).is_err());
    assert!(Records::new(data, i32::MAX, 0, 0).is_err());
}

#[test]
fn lengths_are_checked() {
    // Record claims 100 bytes but the section has 3.
    let data = Bytes::from_static(&[0xc8, 0x01, 0x00]);
    let r: Result<Vec<_>> = Records::new(data, 0, 0, 0).unwrap().collect();
    assert!(matches!(
        r.as_ref().map_err(|e| e.root()),
        Err(Error::TrailingBytes { .. })
    ));
    let data = Bytes::from_static(&[0xc8, 0x01, 0, 0, 0, 0, 0, 0]);
    let r: Result<Vec<_>> = Records::new(data, 1, 0, 0).unwrap().collect();
    assert!(matches!(
        r.as_ref().map_err(|e| e.root()),
        Err(Error::InvalidRecord {
            index: 0,
            position: 2,
            ..
        })
    ));
    // Key longer than the record.
    let data = Bytes::from_static(&[0x0c, 0, 0, 0, 0x0a, 0, 0, 0]);
    let r: Result<Vec<_>> = Records::new(data, 1, 0, 0).unwrap().collect();
    assert!(matches!(
        r.as_ref().map_err(|e| e.root()),
        Err(Error::InvalidRecord { .. })
    ));
}
