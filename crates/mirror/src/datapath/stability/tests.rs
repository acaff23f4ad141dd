use super::*;
use bytes::Bytes;

/// Batch heads (base offset, length) of `len`-byte bodies at `bases`.
fn heads(bases: &[i64], len: i32) -> Vec<u8> {
    let mut v = Vec::new();
    for b in bases {
        v.extend_from_slice(&b.to_be_bytes());
        v.extend_from_slice(&len.to_be_bytes());
        v.extend(std::iter::repeat_n(0u8, len as usize));
    }
    v
}

#[test]
fn a_batch_at_or_past_the_lso_is_found() {
    assert!(!past_lso(10, &heads(&[0, 5], 40)));
    assert!(past_lso(5, &heads(&[0, 5], 40)));
    assert!(!past_lso(-1, &heads(&[0, 5], 40)), "no LSO");
    assert!(!past_lso(0, &[]));
    assert!(
        !past_lso(0, &heads(&[0], 40)[..8]),
        "a head cut short is ignored"
    );
}

fn partition(lso: i64, hw: i64, records: Vec<u8>) -> FetchedPartition {
    FetchedPartition {
        topic: "t".into(),
        topic_id: None,
        partition: 0,
        error_code: 0,
        high_watermark: hw,
        last_stable_offset: lso,
        log_start_offset: 0,
        aborted_transactions: Vec::new(),
        preferred_read_replica: -1,
        current_leader: None,
        records: Bytes::from(records),
    }
}

#[test]
fn an_lso_below_the_high_watermark_alone_is_no_proof() {
    // Tansu with a transaction open: LSO 0 < HW 150, nothing past it. After an abort it
    // has aborted data below LSO = HW and no aborted list: trusting it would forward it.
    let mut s = Stability::default();
    s.observe(&[partition(0, 150, Vec::new())]);
    assert!(!s.trusted());
}

#[test]
fn a_broker_advertising_describe_producers_is_trusted_until_contradicted_for_good() {
    let mut s = Stability::default();
    s.advertised
        .store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(s.trusted());
    s.observe(&[partition(20, 20, heads(&[0], 10))]);
    assert!(s.trusted(), "data below the LSO is what Kafka returns");
    s.observe(&[partition(3, 20, heads(&[0, 3], 10))]);
    assert!(!s.trusted(), "a batch past the LSO");
    s.observe(&[partition(20, 20, heads(&[0], 10))]);
    assert!(!s.trusted(), "for good");
}
