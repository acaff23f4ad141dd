//! Patching a batch for forwarding: zero copy, the producer fields and the transactional
//! bit, the attributes it clears, and a valid CRC.

use proptest::prelude::*;

use crate::header::{Attributes, HEADER_LEN};
use crate::test_support::{Raw, concat, hand_batch, one, raw, txn_batch};
use crate::*;

#[test]
fn patch_is_zero_copy_and_valid() {
    let set = concat(&[txn_batch(1000, 77, 4), txn_batch(1004, 77, 2)]);
    let s = split(set.clone(), &Limits::default()).unwrap();
    let stamp = ProducerStamp {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 41,
    };
    for batch in &s.batches {
        let p = batch.verify_and_patch(stamp).unwrap();
        // The payload is the input buffer's own bytes, not a copy.
        let start = batch.position() + HEADER_LEN;
        assert_eq!(p.payload().as_ptr(), set[start..].as_ptr());
        assert_eq!(p.payload().len(), batch.size() - HEADER_LEN);
        assert_eq!(p.header().len(), HEADER_LEN);
        assert_eq!(p.parts()[1].as_ptr(), set[start..].as_ptr());
        let [_, payload] = p.clone().into_parts();
        assert_eq!(payload.as_ptr(), set[start..].as_ptr());
        // Same result as the straightforward recompute.
        assert_eq!(p.to_contiguous(), batch.patch(stamp).to_contiguous());

        let out = one(p.to_contiguous());
        out.verify_crc().unwrap();
        let h = out.header();
        assert_eq!(h.base_offset, 0);
        assert!(!h.attributes.is_transactional());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (9, 2, 41)
        );
        // Everything else is as it was.
        let o = batch.header();
        assert_eq!(
            (
                h.last_offset_delta,
                h.records_count,
                h.base_timestamp,
                h.max_timestamp
            ),
            (
                o.last_offset_delta,
                o.records_count,
                o.base_timestamp,
                o.max_timestamp
            )
        );
        assert_eq!(h.partition_leader_epoch, o.partition_leader_epoch);
        assert_eq!(out.classify(usize::MAX), Class::Forward);
    }
}

#[test]
fn a_transactional_patch_sets_only_the_bit_and_keeps_the_payload() {
    let set = concat(&[txn_batch(1000, 77, 4)]);
    let s = split(set.clone(), &Limits::default()).unwrap();
    let stamp = ProducerStamp {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 41,
    };
    let batch = &s.batches[0];
    let plain = batch.verify_and_patch(stamp).unwrap();
    let txn = plain.clone().with_transactional(true);
    assert_eq!(
        txn.payload().as_ptr(),
        plain.payload().as_ptr(),
        "zero-copy"
    );
    let out = one(txn.to_contiguous());
    out.verify_crc().unwrap();
    let h = out.header();
    assert!(h.attributes.is_transactional());
    assert_eq!(
        (
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.base_offset
        ),
        (9, 2, 41, 0)
    );
    assert_eq!(out.classify(usize::MAX), Class::Forward);
    // Clearing it again gives back the plain patch, byte for byte; a no-op keeps it.
    let back = txn.with_transactional(false);
    assert_eq!(back.to_contiguous(), plain.to_contiguous());
    let same = plain.clone().with_transactional(false);
    assert_eq!(same.to_contiguous(), plain.to_contiguous());
}

#[test]
fn patch_clears_log_append_time_and_delete_horizon_but_keeps_the_codec() {
    let recs = [raw(0, 10, b"a"), raw(1, 12, b"b")];
    let attrs =
        Attributes::LOG_APPEND_TIME | Attributes::DELETE_HORIZON | Attributes::TRANSACTIONAL;
    let b = one(hand_batch(
        Compression::Zstd,
        7,
        1,
        attrs,
        ProducerStamp::NONE,
        &recs,
    ));
    let out = one(b
        .verify_and_patch(ProducerStamp::NONE)
        .unwrap()
        .to_contiguous());
    assert_eq!(out.header().attributes.0, u16::from(Compression::Zstd.id()));
    assert_eq!(out.header().producer_id, -1);
    // Record timestamps are unchanged by clearing the bits.
    let ts: Vec<i64> = out
        .decode_records(&Limits::default())
        .unwrap()
        .iter()
        .map(|r| r.timestamp)
        .collect();
    assert_eq!(ts, [10, 12]);
}

proptest! {
    #[test]
    fn patch_keeps_crc_valid(
        n in 1i32..20,
        codec in 0u8..5,
        attrs in 0u16..0x80,
        base_offset in any::<i64>(),
        stamp in (any::<i64>(), any::<i16>(), any::<i32>()),
    ) {
        let codec = Compression::from_id(codec).unwrap();
        let recs: Vec<Raw> = (0..n).map(|i| raw(i, i64::from(i) * 3, &[i as u8; 50])).collect();
        let attrs = attrs & !(Attributes::COMPRESSION_MASK | Attributes::CONTROL);
        let src = one(hand_batch(codec, base_offset, n - 1, attrs, ProducerStamp::NONE, &recs));
        let stamp = ProducerStamp { producer_id: stamp.0, producer_epoch: stamp.1, base_sequence: stamp.2 };
        let fast = src.verify_and_patch(stamp).unwrap();
        let slow = src.patch(stamp);
        prop_assert_eq!(fast.to_contiguous(), slow.to_contiguous());
        let out = one(fast.to_contiguous());
        prop_assert!(out.verify_crc().is_ok());
        prop_assert_eq!(out.header().producer_id, stamp.producer_id);
        prop_assert_eq!(out.header().base_sequence, stamp.base_sequence);
        let a = src.decode_records(&Limits::default()).unwrap();
        let b = out.decode_records(&Limits::default()).unwrap();
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!((&x.key, &x.value, x.timestamp), (&y.key, &y.value, y.timestamp));
            prop_assert_eq!(x.offset.wrapping_sub(base_offset), y.offset);
        }
    }
}
