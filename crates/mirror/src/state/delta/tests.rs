use super::*;
use strait_offsets::{CheckpointKind, Side};
use uuid::Uuid;

#[test]
fn keys_and_values_round_trip_and_every_bit_flip_is_rejected() {
    let k = encode_delta_key("orders", 3, 42);
    assert_eq!(
        decode_delta_key(&k).unwrap(),
        (("orders".to_owned(), 3), 42)
    );
    let v = encode_delta_value(b"delta-bytes");
    assert_eq!(decode_delta_value(&v).unwrap(), b"delta-bytes");
    for i in 0..v.len() {
        for bit in 0..8 {
            let mut c = v.clone();
            c[i] ^= 1 << bit;
            assert!(
                decode_delta_value(&c).is_err(),
                "flip at byte {i} bit {bit}"
            );
        }
    }
    assert!(decode_delta_key(&super::super::codec::encode_key("orders", 3)).is_err());
}

#[test]
fn a_snapshot_and_its_later_deltas_rebuild_the_map_and_covered_ones_are_skipped() {
    let mut live = OffsetMap::new();
    live.append_dense(0, 10, 0).unwrap();
    let base = live.snapshot();
    let mut deltas = BTreeMap::new();
    for i in 1..=3u64 {
        // Each transaction: a batch after our commit marker.
        let t = live.next(Side::Target) + 1;
        live.append_dense(i * 10, 10, t).unwrap();
        let c = live.take_checkpoint().unwrap();
        assert_eq!(c.kind, CheckpointKind::Delta);
        deltas.insert(c.seq, c.bytes);
    }
    let state = PartitionState {
        topic_id: Uuid::nil(),
        target_topic: "t".into(),
        snapshot: base.bytes,
    };
    let rebuilt = rebuild(&state, &deltas).unwrap();
    let map = OffsetMap::from_snapshot(&rebuilt.snapshot, DEFAULT_RUN_BUDGET).unwrap();
    assert_eq!(map.next(Side::Source), 40);
    assert_eq!(map.next(Side::Target), 43);
    assert_eq!(map.runs().len(), 4);
    // A newer snapshot already holding the deltas: replaying them changes nothing.
    let again = rebuild(&rebuilt, &deltas).unwrap();
    assert_eq!(
        OffsetMap::from_snapshot(&again.snapshot, DEFAULT_RUN_BUDGET)
            .unwrap()
            .runs()
            .len(),
        4
    );
}

#[test]
fn a_missing_delta_is_an_error() {
    let mut live = OffsetMap::new();
    live.append_dense(0, 10, 0).unwrap();
    let base = live.snapshot();
    let mut deltas = BTreeMap::new();
    for i in 1..=2u64 {
        live.append_dense(i * 10, 10, i * 10).unwrap();
        let c = live.take_checkpoint().unwrap();
        if i == 2 {
            deltas.insert(c.seq, c.bytes);
        }
    }
    let state = PartitionState {
        topic_id: Uuid::nil(),
        target_topic: "t".into(),
        snapshot: base.bytes,
    };
    assert!(rebuild(&state, &deltas).is_err());
}
