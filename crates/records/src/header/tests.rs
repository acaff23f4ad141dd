use super::*;

fn sample() -> BatchHeader {
    BatchHeader {
        base_offset: 0x0102_0304_0506_0708,
        batch_length: 1000,
        partition_leader_epoch: 7,
        magic: 2,
        crc: 0xdead_beef,
        attributes: Attributes(Attributes::TRANSACTIONAL | 3),
        last_offset_delta: 9,
        base_timestamp: -5,
        max_timestamp: 1_700_000_000_000,
        producer_id: 42,
        producer_epoch: 3,
        base_sequence: 100,
        records_count: 10,
    }
}

#[test]
fn encode_parse_round_trip() {
    let h = sample();
    let b = h.encode();
    assert_eq!(BatchHeader::parse(&b, 0).unwrap(), h);
    assert_eq!(h.compression(), Compression::Lz4);
    assert!(h.attributes.is_transactional());
    assert!(!h.attributes.is_control());
    assert_eq!(h.total_len(), 1012);
    assert_eq!(h.next_offset(), h.base_offset + 10);
}

#[test]
fn attribute_bits() {
    let a = Attributes(0x7f);
    assert_eq!(a.compression_id(), 7);
    assert_eq!(a.timestamp_type(), TimestampType::LogAppendTime);
    assert!(a.is_transactional() && a.is_control() && a.has_delete_horizon());
    let none = Attributes(0);
    assert_eq!(none.timestamp_type(), TimestampType::CreateTime);
    assert!(!none.is_transactional() && !none.is_control() && !none.has_delete_horizon());
}

#[test]
fn rejects_unknown_codec_and_magic() {
    let mut h = sample();
    h.attributes = Attributes(5);
    assert!(matches!(
        BatchHeader::parse(&h.encode(), 12),
        Err(Error::UnknownCompression {
            position: 12,
            codec: 5,
            ..
        })
    ));
    h.attributes = Attributes(0);
    h.magic = 1;
    assert!(matches!(
        BatchHeader::parse(&h.encode(), 0),
        Err(Error::LegacyMessageFormat { magic: 1, .. })
    ));
    h.magic = 9;
    assert!(matches!(
        BatchHeader::parse(&h.encode(), 0),
        Err(Error::UnknownMagic { magic: 9, .. })
    ));
}

#[test]
fn delete_horizon_and_log_append_time() {
    let mut h = sample();
    assert_eq!(h.delete_horizon(), None);
    assert_eq!(h.log_append_time(), None);
    h.attributes = Attributes(Attributes::DELETE_HORIZON | Attributes::LOG_APPEND_TIME);
    assert_eq!(h.delete_horizon(), Some(-5));
    assert_eq!(h.log_append_time(), Some(1_700_000_000_000));
}
