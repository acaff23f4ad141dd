//! Re-encoding a batch: dense offsets, the source offset of every record, splitting to a
//! size limit.

use bytes::Bytes;
use proptest::prelude::*;

use crate::header::{Attributes, CRC_START, HEADER_LEN, LOG_OVERHEAD};
use crate::test_support::{Raw, hand_batch, one, raw};
use crate::*;

#[test]
fn reencode_densifies_and_reports_source_offsets() {
    let recs = [
        raw(0, 50, b"a"),
        raw(3, 40, b""),
        raw(4, 70, b"c"),
        raw(9, 60, b"d"),
    ];
    let src = one(hand_batch(
        Compression::Snappy,
        100,
        9,
        0,
        ProducerStamp::NONE,
        &recs,
    ));
    let out = src.reencode(&ReencodeOptions::default()).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].source_offsets, [100, 103, 104, 109]);
    let b = &out[0].batch;
    b.verify_crc().unwrap();
    let h = b.header();
    assert_eq!(
        (h.base_offset, h.last_offset_delta, h.records_count),
        (0, 3, 4)
    );
    assert_eq!((h.base_timestamp, h.max_timestamp), (50, 70));
    assert_eq!(h.compression(), Compression::Snappy);
    assert_eq!(b.classify(usize::MAX), Class::Forward);

    // Empty batches re-encode to nothing.
    let empty = one(hand_batch(
        Compression::Gzip,
        0,
        3,
        0,
        ProducerStamp::NONE,
        &[],
    ));
    assert!(
        empty
            .reencode(&ReencodeOptions::default())
            .unwrap()
            .is_empty()
    );
    // Even with codec bits set and no payload at all, as a cleaner may leave a batch.
    let mut bare = empty.header().encode();
    bare[8..12].copy_from_slice(&((HEADER_LEN - LOG_OVERHEAD) as i32).to_be_bytes());
    let crc = crc32c::crc32c(&bare[CRC_START..]);
    bare[17..21].copy_from_slice(&crc.to_be_bytes());
    let bare = one(Bytes::copy_from_slice(&bare));
    bare.verify_crc().unwrap();
    assert_eq!(bare.header().compression(), Compression::Gzip);
    assert_eq!(
        bare.classify(usize::MAX),
        Class::NeedsReencode(ReencodeReason::Empty)
    );
    assert!(
        bare.reencode(&ReencodeOptions::default())
            .unwrap()
            .is_empty()
    );

    // Offsets out of order cannot give a trustworthy offset map.
    let bad = one(hand_batch(
        Compression::None,
        0,
        5,
        0,
        ProducerStamp::NONE,
        &[raw(2, 0, b""), raw(1, 0, b"")],
    ));
    let e = bad.reencode(&ReencodeOptions::default()).unwrap_err();
    assert!(
        matches!(e.root(), Error::OffsetDeltaOutOfOrder { index: 1, .. }),
        "{e}"
    );
    let past = one(hand_batch(
        Compression::None,
        0,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, 0, b""), raw(2, 0, b"")],
    ));
    assert!(past.reencode(&ReencodeOptions::default()).is_err());
}

#[test]
fn reencode_splits_to_fit_a_size_limit() {
    let recs: Vec<Raw> = (0..40)
        .map(|i| raw(i * 2, 1000 + i64::from(i), &[i as u8; 300]))
        .collect();
    let src = one(hand_batch(
        Compression::None,
        0,
        78,
        0,
        ProducerStamp::NONE,
        &recs,
    ));
    let opts = ReencodeOptions {
        compression: Some(Compression::None),
        max_batch_bytes: Some(2000),
        ..ReencodeOptions::default()
    };
    let out = src.reencode(&opts).unwrap();
    assert!(out.len() > 1);
    let mut offsets = Vec::new();
    for r in &out {
        assert!(r.batch.size() <= 2000);
        assert_eq!(r.batch.classify(2000), Class::Forward);
        offsets.extend_from_slice(&r.source_offsets);
    }
    assert_eq!(offsets, (0..40).map(|i| i * 2).collect::<Vec<i64>>());
    let tiny = ReencodeOptions {
        max_batch_bytes: Some(100),
        ..opts
    };
    assert!(matches!(
        src.reencode(&tiny).unwrap_err().root(),
        Error::RecordTooLarge { limit: 100, .. }
    ));
}

proptest! {
    #[test]
    fn reencode_keeps_content_and_densifies(
        gaps in proptest::collection::vec(0i32..5, 1..40),
        codec in 0u8..5,
        target in proptest::option::of(0u8..5),
        base in 0i64..1_000_000,
    ) {
        let codec = Compression::from_id(codec).unwrap();
        let mut delta = -1;
        let recs: Vec<Raw> = gaps.iter().enumerate().map(|(i, g)| {
            delta += 1 + g;
            let mut r = raw(delta, 1000 - i as i64, format!("value-{i}").as_bytes());
            if i % 3 == 0 { r.key = None; }
            r.headers = vec![Header { key: Bytes::from_static(b"h"), value: (i % 2 == 0).then(|| Bytes::from(vec![i as u8])) }];
            r
        }).collect();
        let src = one(hand_batch(codec, base, delta, Attributes::TRANSACTIONAL, ProducerStamp { producer_id: 3, producer_epoch: 0, base_sequence: 0 }, &recs));
        let opts = ReencodeOptions { compression: target.and_then(Compression::from_id), ..ReencodeOptions::default() };
        let out = src.reencode(&opts).unwrap();
        prop_assert_eq!(out.len(), 1);
        let re = &out[0];
        re.batch.verify_crc().unwrap();
        prop_assert_eq!(re.batch.header().compression(), opts.compression.unwrap_or(codec));
        prop_assert_eq!(re.batch.classify(usize::MAX), Class::Forward);
        let original = src.decode_records(&Limits::default()).unwrap();
        prop_assert_eq!(&re.source_offsets, &original.iter().map(|r| r.offset).collect::<Vec<_>>());
        let dense = re.batch.decode_records(&Limits::default()).unwrap();
        prop_assert_eq!(dense.len(), original.len());
        for (i, (d, o)) in dense.iter().zip(&original).enumerate() {
            prop_assert_eq!(d.offset, i as i64);
            prop_assert_eq!((&d.key, &d.value, &d.headers, d.timestamp), (&o.key, &o.value, &o.headers, o.timestamp));
        }
    }
}
