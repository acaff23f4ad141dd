//! Splitting record sets: zero copy, trimming a partial tail, impossible lengths, legacy
//! message sets, the CRC.

use bytes::Bytes;
use proptest::prelude::*;

use crate::header::CRC_START;
use crate::test_support::{concat, one, txn_batch};
use crate::*;

#[test]
fn split_is_zero_copy_and_trims_a_partial_tail() {
    let a = txn_batch(0, 1, 3);
    let b = txn_batch(3, 1, 2);
    let whole = concat(&[a.clone(), b.clone()]);
    for cut in 0..b.len() {
        let set = whole.slice(..a.len() + cut);
        let s = split(set.clone(), &Limits::default()).unwrap();
        assert_eq!(s.batches.len(), 1, "cut {cut}");
        assert_eq!(s.trimmed, cut);
        assert_eq!(s.batches[0].as_bytes().as_ptr(), set.as_ptr());
    }
    let s = split(whole.clone(), &Limits::default()).unwrap();
    assert_eq!((s.batches.len(), s.trimmed), (2, 0));
    assert_eq!(s.batches[1].position(), a.len());
    assert_eq!(s.batches[1].as_bytes().as_ptr(), whole[a.len()..].as_ptr());
    assert_eq!(s.batches[1].header().base_offset, 3);
    assert!(
        split(Bytes::new(), &Limits::default())
            .unwrap()
            .batches
            .is_empty()
    );
}

#[test]
fn split_rejects_impossible_lengths_with_their_position() {
    let a = txn_batch(0, 1, 3);
    let mut bad = a.to_vec();
    bad.extend_from_slice(&a);
    let at = a.len();
    bad[at + 8..at + 12].copy_from_slice(&48i32.to_be_bytes());
    match split(Bytes::from(bad.clone()), &Limits::default()) {
        Err(Error::BatchLengthTooSmall {
            position,
            length: 48,
        }) => assert_eq!(position, at),
        other => panic!("{other:?}"),
    }
    bad[at + 8..at + 12].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        split(Bytes::from(bad.clone()), &Limits::default()),
        Err(Error::BatchLengthTooSmall { length: -1, .. })
    ));
    bad[at + 8..at + 12].copy_from_slice(&i32::MAX.to_be_bytes());
    let e = split(Bytes::from(bad), &Limits::default()).unwrap_err();
    assert!(
        matches!(e, Error::BatchLengthTooLarge { position, .. } if position == at),
        "{e}"
    );
    assert!(e.to_string().contains(&format!("byte {at}")), "{e}");
    // The cap applies to the whole batch, header included.
    let limits = Limits {
        max_batch_bytes: a.len() - 1,
        ..Limits::default()
    };
    assert!(matches!(
        split(a.clone(), &limits),
        Err(Error::BatchLengthTooLarge { .. })
    ));
}

#[test]
fn split_reports_legacy_message_sets() {
    // A magic 1 message: offset, size, crc, magic 1, attributes, timestamp, key, value.
    let mut m = 0i64.to_be_bytes().to_vec();
    m.extend_from_slice(&22i32.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 1, 0]);
    m.extend_from_slice(&0i64.to_be_bytes());
    m.extend_from_slice(&(-1i32).to_be_bytes());
    m.extend_from_slice(&(-1i32).to_be_bytes());
    let e = split(Bytes::from(m), &Limits::default()).unwrap_err();
    assert!(matches!(
        e,
        Error::LegacyMessageFormat {
            position: 0,
            magic: 1
        }
    ));
    assert!(e.to_string().contains("legacy message format"), "{e}");
}

#[test]
fn crc_detects_corruption_anywhere_after_byte_21() {
    let a = txn_batch(0, 1, 3);
    one(a.clone()).verify_crc().unwrap();
    for i in CRC_START..a.len() {
        let mut b = a.to_vec();
        b[i] ^= 0x40;
        let batch = one(Bytes::from(b));
        assert!(
            matches!(batch.verify_crc(), Err(Error::CrcMismatch { .. })),
            "byte {i}"
        );
        assert!(
            batch.verify_and_patch(ProducerStamp::NONE).is_err(),
            "byte {i}"
        );
    }
    // Outside the CRC: base offset and leader epoch.
    let mut b = a.to_vec();
    b[3] ^= 1;
    b[13] ^= 1;
    one(Bytes::from(b)).verify_crc().unwrap();
}

proptest! {
    #[test]
    fn trimming_any_prefix(cut in 0usize..2000, sizes in proptest::collection::vec(1i32..8, 1..6)) {
        let mut parts = Vec::new();
        let mut base = 0i64;
        for n in &sizes {
            parts.push(txn_batch(base, 1, *n));
            base += i64::from(*n);
        }
        let whole = concat(&parts);
        let cut = cut.min(whole.len());
        let s = split(whole.slice(..cut), &Limits::default()).unwrap();
        let whole_len: usize = s.batches.iter().map(Batch::size).sum();
        prop_assert_eq!(whole_len + s.trimmed, cut);
        // Exactly the batches that fit entirely.
        let mut fit = 0;
        let mut acc = 0;
        for p in &parts {
            if acc + p.len() > cut { break; }
            acc += p.len();
            fit += 1;
        }
        prop_assert_eq!(s.batches.len(), fit);
    }
}
