use super::*;
use strait_offsets::OffsetMap;

fn sample() -> ReplayState {
    let mut map = OffsetMap::new();
    map.advance(10, 100).unwrap();
    map.append_dense(10, 5, 100).unwrap();
    ReplayState {
        status: ReplayStatus::Copying,
        topic_id: Uuid::from_bytes([3; 16]),
        source_topic: "orders".to_owned(),
        target_topic: "src.orders".to_owned(),
        from_ms: 1_000,
        until_ms: Some(2_000),
        start: 10,
        end: 20,
        partitions: 3,
        snapshot: map.snapshot().bytes,
    }
}

#[test]
fn replay_keys_and_values_round_trip() {
    let key = ReplayKey {
        id: "r0123abcd".to_owned(),
        run: 2,
        partition: 5,
    };
    assert_eq!(decode_replay_key(&encode_replay_key(&key)).unwrap(), key);
    let mut s = sample();
    assert_eq!(decode_replay_value(&encode_replay_value(&s)).unwrap(), s);
    s.until_ms = None;
    s.status = ReplayStatus::Done;
    assert_eq!(decode_replay_value(&encode_replay_value(&s)).unwrap(), s);
}

#[test]
fn every_single_bit_flip_and_truncation_of_a_replay_value_is_rejected() {
    let v = encode_replay_value(&sample());
    for i in 0..v.len() {
        for bit in 0..8 {
            let mut c = v.clone();
            c[i] ^= 1 << bit;
            assert!(
                decode_replay_value(&c).is_err(),
                "flip at byte {i} bit {bit}"
            );
        }
    }
    for n in 0..v.len() {
        assert!(decode_replay_value(&v[..n]).is_err(), "truncated to {n}");
    }
}

#[test]
fn a_replay_value_has_one_encoding() {
    let mut s = sample();
    s.until_ms = None;
    let v = encode_replay_value(&s);
    // The until flag sits after version, status, topic id and the two topic names.
    let at = 2 + 16 + 2 + s.source_topic.len() + 2 + s.target_topic.len() + 8;
    assert_eq!(v[at], 0);
    for (flag, time) in [(2u8, 0i64), (0, 5)] {
        let mut c = v[..v.len() - 4].to_vec();
        c[at] = flag;
        c[at + 1..at + 9].copy_from_slice(&time.to_be_bytes());
        let crc = crc32c::crc32c(&c);
        c.extend_from_slice(&crc.to_be_bytes());
        assert!(decode_replay_value(&c).is_err(), "flag {flag} time {time}");
    }
}

#[test]
fn a_flow_partition_key_is_not_a_replay_key_and_unknown_versions_are_refused() {
    let flow_key = super::super::codec::encode_key("orders", 0);
    assert_eq!(
        decode_replay_key(&flow_key),
        Err(StateDecodeError::Version(1))
    );
    let mut v = encode_replay_value(&sample());
    v[0] = 9;
    assert_eq!(decode_replay_value(&v), Err(StateDecodeError::Version(9)));
}
