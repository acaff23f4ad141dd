use super::*;
use strait_offsets::{DEFAULT_RUN_BUDGET, OffsetMap, Side};

fn sample() -> PartitionState {
    let mut map = OffsetMap::new();
    map.append_dense(10, 5, 0).unwrap();
    map.append_dense(16, 3, 5).unwrap();
    map.advance_source(20).unwrap();
    PartitionState {
        topic_id: Uuid::from_bytes([7; 16]),
        target_topic: "primary.orders".to_owned(),
        snapshot: map.snapshot().bytes,
    }
}

#[test]
fn key_and_value_round_trip_and_rebuild_the_map() {
    let k = encode_key("orders", 4);
    assert_eq!(decode_key(&k).unwrap(), ("orders".to_owned(), 4));
    let s = sample();
    let decoded = decode_value(&encode_value(&s)).unwrap();
    assert_eq!(decoded, s);
    let map = OffsetMap::from_snapshot(&decoded.snapshot, DEFAULT_RUN_BUDGET).unwrap();
    assert_eq!((map.next(Side::Source), map.next(Side::Target)), (20, 8));
    assert_eq!(map.runs().len(), 2);
}

#[test]
fn every_single_bit_flip_and_truncation_is_rejected() {
    let v = encode_value(&sample());
    for i in 0..v.len() {
        for bit in 0..8 {
            let mut c = v.clone();
            c[i] ^= 1 << bit;
            assert!(decode_value(&c).is_err(), "flip at byte {i} bit {bit}");
        }
    }
    for n in 0..v.len() {
        assert!(decode_value(&v[..n]).is_err(), "truncated to {n}");
    }
    let mut longer = v.clone();
    longer.push(0);
    assert!(decode_value(&longer).is_err());
}

#[test]
fn unknown_versions_are_refused() {
    let mut v = encode_value(&sample());
    v[0] = 2;
    assert_eq!(decode_value(&v), Err(StateDecodeError::Version(2)));
    let mut k = encode_key("t", 0);
    k[0] = 9;
    assert_eq!(decode_key(&k), Err(StateDecodeError::Version(9)));
    assert_eq!(decode_key(&[1, 0]), Err(StateDecodeError::Truncated));
}
