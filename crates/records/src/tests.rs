//! Cross-module tests: split, patch, classify, re-encode, aborted transactions, and no
//! panic on arbitrary input. They build batches by hand (gaps, control records, odd
//! headers) with the crate's own record encoder.

use bytes::Bytes;
use proptest::prelude::*;

use crate::compression::compress;
use crate::header::{Attributes, BatchHeader, CRC_START, HEADER_LEN, LOG_OVERHEAD};
use crate::record::encode_record;
use crate::*;

/// A record to write by hand: offset delta, timestamp, key, value, headers.
#[derive(Debug, Clone)]
struct Raw {
    delta: i32,
    ts: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<Header>,
}

fn raw(delta: i32, ts: i64, value: &[u8]) -> Raw {
    Raw {
        delta,
        ts,
        key: Some(format!("k{delta}").into_bytes()),
        value: Some(value.to_vec()),
        headers: vec![],
    }
}

/// Writes a batch with exactly these records and header fields (CRC made valid).
fn hand_batch(
    codec: Compression,
    base_offset: i64,
    last_offset_delta: i32,
    attributes: u16,
    producer: ProducerStamp,
    records: &[Raw],
) -> Bytes {
    let base_ts = records.first().map_or(0, |r| r.ts);
    let mut section = Vec::new();
    for r in records {
        encode_record(
            &mut section,
            r.delta,
            r.ts.wrapping_sub(base_ts),
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        )
        .unwrap();
    }
    let payload = compress(codec, &section).unwrap();
    let header = BatchHeader {
        base_offset,
        batch_length: (HEADER_LEN - LOG_OVERHEAD + payload.len()) as i32,
        partition_leader_epoch: 5,
        magic: 2,
        crc: 0,
        attributes: Attributes(attributes | u16::from(codec.id())),
        last_offset_delta,
        base_timestamp: base_ts,
        max_timestamp: records.iter().map(|r| r.ts).max().unwrap_or(-1),
        producer_id: producer.producer_id,
        producer_epoch: producer.producer_epoch,
        base_sequence: producer.base_sequence,
        records_count: records.len() as i32,
    };
    let mut bytes = header.encode().to_vec();
    bytes.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

fn control_batch(base_offset: i64, producer_id: i64, kind: i16) -> Bytes {
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend_from_slice(&kind.to_be_bytes());
    let rec = Raw {
        delta: 0,
        ts: 1,
        key: Some(key),
        value: Some(vec![0, 0, 0, 0, 0, 0]),
        headers: vec![],
    };
    let stamp = ProducerStamp {
        producer_id,
        producer_epoch: 0,
        base_sequence: -1,
    };
    hand_batch(
        Compression::None,
        base_offset,
        0,
        Attributes::CONTROL | Attributes::TRANSACTIONAL,
        stamp,
        &[rec],
    )
}

fn txn_batch(base_offset: i64, producer_id: i64, n: i32) -> Bytes {
    let recs: Vec<Raw> = (0..n).map(|i| raw(i, 100 + i64::from(i), b"v")).collect();
    let stamp = ProducerStamp {
        producer_id,
        producer_epoch: 0,
        base_sequence: 0,
    };
    hand_batch(
        Compression::None,
        base_offset,
        n - 1,
        Attributes::TRANSACTIONAL,
        stamp,
        &recs,
    )
}

fn concat(parts: &[Bytes]) -> Bytes {
    Bytes::from(parts.concat())
}

fn one(bytes: Bytes) -> Batch {
    Batch::parse(bytes).unwrap()
}

// ---- split ----

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

// ---- patch ----

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

// ---- classify ----

#[test]
fn classification() {
    let n = ProducerStamp::NONE;
    let dense = one(hand_batch(
        Compression::None,
        0,
        1,
        0,
        n,
        &[raw(0, 1, b"a"), raw(1, 1, b"b")],
    ));
    assert_eq!(dense.classify(1 << 20), Class::Forward);
    assert_eq!(
        dense.classify(10),
        Class::TooLarge {
            size: dense.size(),
            limit: 10
        }
    );
    let gapped = one(hand_batch(
        Compression::Lz4,
        0,
        5,
        0,
        n,
        &[raw(0, 1, b"a"), raw(5, 1, b"b")],
    ));
    assert_eq!(
        gapped.classify(1 << 20),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    assert_eq!(
        gapped.classify(10),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    let empty = one(hand_batch(Compression::None, 0, 3, 0, n, &[]));
    assert_eq!(
        empty.classify(1 << 20),
        Class::NeedsReencode(ReencodeReason::Empty)
    );
    assert_eq!(one(control_batch(0, 1, 1)).classify(0), Class::Control);
}

// ---- re-encode ----

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

// ---- aborted transactions ----

#[test]
fn aborted_transactions_are_dropped_up_to_their_marker() {
    // Producers 1 and 2 interleave; 1 aborts its first transaction, 2 commits.
    let batches: Vec<Batch> = [
        txn_batch(0, 1, 2),     // 0-1 p1 aborted
        txn_batch(2, 2, 2),     // 2-3 p2 committed
        control_batch(4, 1, 0), // p1 ABORT
        txn_batch(5, 1, 1),     // 5 p1 second txn, committed
        control_batch(6, 2, 1), // p2 COMMIT
        control_batch(7, 1, 1), // p1 COMMIT
        txn_batch(8, 1, 1),     // 8 p1 third txn, aborted
        control_batch(9, 1, 0), // p1 ABORT
    ]
    .into_iter()
    .map(one)
    .collect();
    let aborted = [
        AbortedTransaction {
            producer_id: 1,
            first_offset: 8,
        },
        AbortedTransaction {
            producer_id: 1,
            first_offset: 0,
        },
    ];
    let v = filter_aborted(&batches, &aborted, &Limits::default()).unwrap();
    use TxnVerdict::*;
    assert_eq!(
        v,
        [
            Aborted, Keep, Control, Keep, Control, Control, Aborted, Control
        ]
    );
    assert!(v.iter().filter(|v| v.is_dropped()).count() == 6);
    // Without the list nothing is aborted.
    let v = filter_aborted(&batches, &[], &Limits::default()).unwrap();
    assert_eq!(
        v,
        [Keep, Keep, Control, Keep, Control, Control, Keep, Control]
    );
}

#[test]
fn non_transactional_batches_are_never_aborted() {
    let plain = one(hand_batch(
        Compression::None,
        0,
        0,
        0,
        ProducerStamp {
            producer_id: 1,
            producer_epoch: 0,
            base_sequence: 0,
        },
        &[raw(0, 0, b"")],
    ));
    let v = filter_aborted(
        &[plain],
        &[AbortedTransaction {
            producer_id: 1,
            first_offset: 0,
        }],
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(v, [TxnVerdict::Keep]);
}

#[test]
fn control_type_is_read_from_the_first_record() {
    let limits = Limits::default();
    assert_eq!(
        one(control_batch(0, 1, 0)).control_type(&limits).unwrap(),
        Some(ControlRecordType::Abort)
    );
    assert_eq!(
        one(control_batch(0, 1, 1)).control_type(&limits).unwrap(),
        Some(ControlRecordType::Commit)
    );
    assert_eq!(one(txn_batch(0, 1, 1)).control_type(&limits).unwrap(), None);
}

// ---- builder and codecs through batches ----

/// timestamp, key, value, headers (name, value)
type RecordSpec = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn record_strategy() -> impl Strategy<Value = RecordSpec> {
    (
        any::<i64>(),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..10),
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
            ),
            0..4,
        ),
    )
}

fn to_headers(h: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<Header> {
    h.iter()
        .map(|(k, v)| Header {
            key: Bytes::from(k.clone()),
            value: v.clone().map(Bytes::from),
        })
        .collect()
}

proptest! {
    #[test]
    fn builder_round_trips_every_codec(
        records in proptest::collection::vec(record_strategy(), 1..30),
        codec in 0u8..5,
        pid in -1i64..1000,
    ) {
        let codec = Compression::from_id(codec).unwrap();
        let stamp = ProducerStamp { producer_id: pid, producer_epoch: 1, base_sequence: 5 };
        let mut b = BatchBuilder::new(codec).producer(stamp);
        for (ts, k, v, h) in &records {
            b.push(*ts, k.as_deref(), v.as_deref(), &to_headers(h)).unwrap();
        }
        prop_assert_eq!(b.len(), records.len());
        let batch = b.build().unwrap();
        batch.verify_crc().unwrap();
        let h = *batch.header();
        prop_assert_eq!(h.base_offset, 0);
        prop_assert_eq!(h.last_offset_delta as usize, records.len() - 1);
        prop_assert_eq!(h.records_count as usize, records.len());
        prop_assert_eq!(h.max_timestamp, records.iter().map(|r| r.0).max().unwrap());
        prop_assert_eq!(h.base_timestamp, records[0].0);
        prop_assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (pid, 1, 5));
        prop_assert_eq!(h.compression(), codec);
        prop_assert_eq!(batch.classify(usize::MAX), Class::Forward);
        let got = batch.decode_records(&Limits::default()).unwrap();
        for (i, (r, (ts, k, v, hs))) in got.iter().zip(&records).enumerate() {
            prop_assert_eq!(r.offset, i as i64);
            prop_assert_eq!(r.timestamp, *ts);
            prop_assert_eq!(r.key.as_deref(), k.as_deref());
            prop_assert_eq!(r.value.as_deref(), v.as_deref());
            prop_assert_eq!(&r.headers, &to_headers(hs));
        }
    }

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

    #[test]
    fn no_panic_on_arbitrary_record_sets(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        fuzz_body(&data);
    }

    #[test]
    fn no_panic_on_mutated_batches(
        codec in 0u8..5,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let codec = Compression::from_id(codec).unwrap();
        let recs: Vec<Raw> = (0..5).map(|i| raw(i, i64::from(i), b"some value bytes")).collect();
        let mut b = hand_batch(codec, 0, 4, 0, ProducerStamp::NONE, &recs).to_vec();
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x;
        }
        // Skip the CRC so that the decoders see the damage.
        fuzz_body(&b);
    }
}

/// Everything a fuzzer should be able to throw at the crate: split, header, CRC, patch,
/// classify, decode, control records, re-encode, aborted filter. Never panics.
pub(crate) fn fuzz_body(data: &[u8]) {
    let limits = Limits {
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
    };
    let set = Bytes::copy_from_slice(data);
    let mut batches = Vec::new();
    let mut it = Batches::new(set, limits);
    for b in it.by_ref() {
        let Ok(b) = b else { break };
        let _ = b.verify_crc();
        let p = b.patch(ProducerStamp::NONE);
        assert_eq!(p.size(), b.size());
        let _ = b.verify_and_patch(ProducerStamp::NONE);
        let _ = b.classify(1 << 20);
        let _ = b.control_type(&limits);
        if let Ok(records) = b.records(&limits) {
            for r in records {
                if r.is_err() {
                    break;
                }
            }
        }
        let _ = b.reencode(&ReencodeOptions {
            limits,
            ..ReencodeOptions::default()
        });
        batches.push(b);
    }
    let _ = it.trimmed();
    let aborted = [AbortedTransaction {
        producer_id: 0,
        first_offset: 0,
    }];
    let _ = filter_aborted(&batches, &aborted, &limits);
    for policy in [
        CompressedPolicy::Never,
        CompressedPolicy::RecompressFast,
        CompressedPolicy::Recompress,
    ] {
        let opts = MergeOptions {
            limits,
            ..MergeOptions::new(1 << 10).compressed(policy)
        };
        let _ = merge(&batches, &opts);
    }
    // The bytes as a lone records section and as compressed data of each codec.
    for codec in Compression::ALL {
        let _ = compression::decompress(codec, data, 1 << 20);
    }
}

// ---- merge ----

/// Checks every promise of [`merge`] for `inputs` and returns the outputs.
fn check_merge(inputs: &[Batch], opts: &MergeOptions) -> Vec<Merged> {
    let limits = Limits::default();
    let outs = merge(inputs, opts).unwrap();
    // Outputs cover the inputs in order, each exactly once.
    let covered: Vec<usize> = outs.iter().flat_map(Merged::inputs).collect();
    assert_eq!(covered, (0..inputs.len()).collect::<Vec<_>>());
    let mut expected = Vec::new();
    for b in inputs {
        expected.extend(b.decode_records(&limits).unwrap());
    }
    let mut got = Vec::new();
    for out in &outs {
        match out {
            Merged::Unchanged { batch, index } => {
                assert_eq!(batch.as_bytes(), inputs[*index].as_bytes());
                got.extend(batch.decode_records(&limits).unwrap());
            }
            Merged::Rewritten {
                batch,
                source_offsets,
                inputs: range,
            } => {
                assert!(range.len() >= 2);
                // Checked from the bytes: a batch merge sealed skips `verify_crc`.
                let reparsed = Batch::parse(Bytes::copy_from_slice(batch.as_bytes())).unwrap();
                reparsed.verify_crc().unwrap();
                let stamp = ProducerStamp {
                    producer_id: 7,
                    producer_epoch: 1,
                    base_sequence: 40,
                };
                assert_eq!(
                    batch.verify_and_patch(stamp).unwrap().to_contiguous(),
                    reparsed.patch(stamp).to_contiguous()
                );
                assert_eq!(batch.classify(usize::MAX), Class::Forward);
                assert!(
                    batch.size() <= opts.max_bytes,
                    "{} > {}",
                    batch.size(),
                    opts.max_bytes
                );
                let h = batch.header();
                let codec = inputs[range.start].header().compression();
                assert!(
                    inputs[range.clone()]
                        .iter()
                        .all(|b| b.header().compression() == codec)
                );
                assert_eq!(h.compression(), codec);
                assert!(
                    opts.compressed.merges(codec),
                    "{codec:?} merged under {:?}",
                    opts.compressed
                );
                assert_eq!(h.attributes.0, u16::from(codec.id()));
                assert_eq!(h.base_offset, 0);
                assert_eq!(
                    (h.producer_id, h.producer_epoch, h.base_sequence),
                    (-1, -1, -1)
                );
                let records = batch.decode_records(&limits).unwrap();
                assert_eq!(records.len(), h.records_count as usize);
                assert_eq!(source_offsets.len(), records.len());
                assert_eq!(h.base_timestamp, records[0].timestamp);
                assert_eq!(
                    h.max_timestamp,
                    records.iter().map(|r| r.timestamp).max().unwrap()
                );
                let src: Vec<i64> = inputs[range.clone()]
                    .iter()
                    .flat_map(|b| b.decode_records(&limits).unwrap())
                    .map(|r| r.offset)
                    .collect();
                assert_eq!(source_offsets.to_vec(), src);
                // Runs are maximal and increasing.
                for w in source_offsets.runs().windows(2) {
                    assert!(w[0].end() < w[1].first);
                }
                for (i, mut r) in records.into_iter().enumerate() {
                    assert_eq!(r.offset, i as i64);
                    r.offset = src[i];
                    got.push(r);
                }
            }
        }
    }
    assert_eq!(got, expected);
    outs
}

fn dense(codec: Compression, base_offset: i64, n: i32, ts: i64, value_len: usize) -> Batch {
    let recs: Vec<Raw> = (0..n)
        .map(|i| {
            let mut r = raw(
                i,
                ts + i64::from(i % 3) - 1,
                &vec![b'a' + (i % 26) as u8; value_len],
            );
            if i % 4 == 1 {
                r.key = None;
                r.headers = vec![Header {
                    key: Bytes::from_static(b"h"),
                    value: None,
                }];
            }
            r
        })
        .collect();
    one(hand_batch(
        codec,
        base_offset,
        n - 1,
        0,
        ProducerStamp::NONE,
        &recs,
    ))
}

fn rewritten(out: &Merged) -> (&Batch, &SourceOffsets) {
    match out {
        Merged::Rewritten {
            batch,
            source_offsets,
            ..
        } => (batch, source_offsets),
        Merged::Unchanged { index, .. } => panic!("input {index} left unchanged"),
    }
}

#[test]
fn merge_dense_uncompressed_into_one_run() {
    let inputs = [
        dense(Compression::None, 100, 5, 1_000, 30),
        dense(Compression::None, 105, 70, 2_000, 30),
        dense(Compression::None, 175, 1, 500, 30),
    ];
    let outs = check_merge(&inputs, &MergeOptions::new(1 << 20));
    assert_eq!(outs.len(), 1);
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(batch.header().records_count, 76);
    assert_eq!(batch.header().last_offset_delta, 75);
    assert_eq!(
        offsets.runs(),
        &[OffsetRun {
            first: 100,
            count: 76
        }]
    );
    assert!(offsets.is_dense());
    assert_eq!((offsets.first(), offsets.last()), (Some(100), Some(175)));
    // The merged batch is the inputs minus two headers, plus at most a byte per record whose
    // offset delta grew past 63 and one per record whose timestamp delta grew past ±63.
    let inputs_size: usize = inputs.iter().map(Batch::size).sum();
    assert!(batch.size() <= inputs_size - 2 * HEADER_LEN + 2 * 76);
}

#[test]
fn merge_reports_gaps_between_and_within_inputs() {
    // Compaction left offsets 11 and 13 out of the second batch; 20..30 was never fetched.
    let gapped = one(hand_batch(
        Compression::None,
        10,
        4,
        Attributes::LOG_APPEND_TIME | Attributes::DELETE_HORIZON,
        ProducerStamp {
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 10,
        },
        &[raw(0, 5, b"a"), raw(2, 3, b"b"), raw(4, 9, b"c")],
    ));
    let inputs = [
        dense(Compression::None, 0, 10, 1, 8),
        gapped,
        dense(Compression::None, 30, 2, 7, 8),
    ];
    assert_eq!(
        inputs[1].classify(usize::MAX),
        Class::NeedsReencode(ReencodeReason::Gapped)
    );
    let outs = check_merge(&inputs, &MergeOptions::new(1 << 20));
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(
        offsets.runs(),
        &[
            OffsetRun {
                first: 0,
                count: 11
            },
            OffsetRun {
                first: 12,
                count: 1
            },
            OffsetRun {
                first: 14,
                count: 1
            },
            OffsetRun {
                first: 30,
                count: 2
            },
        ]
    );
    assert_eq!(
        batch.header().attributes.timestamp_type(),
        TimestampType::CreateTime
    );
    assert!(!batch.header().attributes.has_delete_horizon());
}

#[test]
fn merge_rejects_control_transactional_and_disorder() {
    let data = dense(Compression::None, 0, 3, 1, 4);
    let control = one(control_batch(3, 1, 1));
    let err = merge(&[data.clone(), control], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::NotMergeable {
            base_offset: 3,
            reason: "control batch"
        }
    ));
    let txn = one(txn_batch(3, 1, 2));
    let err = merge(&[data.clone(), txn], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::NotMergeable {
            reason: "transactional batch",
            ..
        }
    ));
    let overlapping = dense(Compression::None, 2, 3, 1, 4);
    let err = merge(&[data.clone(), overlapping], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err,
        Error::MergeOutOfOrder {
            base_offset: 2,
            expected_at_least: 3
        }
    ));
    // A gap is fine; an empty input list gives no output.
    check_merge(
        &[data.clone(), dense(Compression::None, 9, 1, 1, 4)],
        &MergeOptions::new(1 << 20),
    );
    assert!(merge(&[], &MergeOptions::new(1 << 20)).unwrap().is_empty());
}

#[test]
fn merge_verifies_crcs_and_record_framing() {
    let good = dense(Compression::None, 0, 3, 1, 4);
    let mut bad = dense(Compression::None, 3, 3, 1, 4).as_bytes().to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let bad = one(Bytes::from(bad));
    let err = merge(&[good.clone(), bad], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err.root(),
        Error::CrcMismatch { base_offset: 3, .. }
    ));
    // Offset deltas past lastOffsetDelta, with a valid CRC.
    let lying = one(hand_batch(
        Compression::None,
        3,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, 1, b"x"), raw(2, 1, b"y")],
    ));
    let err = merge(&[good, lying], &MergeOptions::new(1 << 20)).unwrap_err();
    assert!(matches!(
        err.root(),
        Error::OffsetDeltaOutOfOrder { delta: 2, .. }
    ));
}

#[test]
fn merge_respects_max_bytes() {
    let inputs: Vec<Batch> = (0..20)
        .map(|i| dense(Compression::None, i * 10, 10, 1_000 * i, 100))
        .collect();
    let size = inputs[0].size();
    let max = 4 * size;
    let outs = check_merge(&inputs, &MergeOptions::new(max));
    assert!(outs.len() >= 5, "{} outputs", outs.len());
    // Each output holds as many inputs as fit (the headers saved make room for a fourth).
    assert!(outs.iter().all(|o| o.inputs().len() == 4));
    // An input larger than max_bytes passes unchanged, between merged neighbours.
    let mut inputs = inputs[..6].to_vec();
    inputs.insert(3, dense(Compression::None, 55, 3, 1, 2 * size));
    for (i, b) in inputs.iter_mut().enumerate().skip(4) {
        *b = dense(Compression::None, 60 + 10 * i as i64, 10, 1, 100);
    }
    let outs = check_merge(&inputs, &MergeOptions::new(max));
    let kinds: Vec<_> = outs
        .iter()
        .map(|o| (o.inputs(), matches!(o, Merged::Rewritten { .. })))
        .collect();
    assert_eq!(kinds, [(0..3, true), (3..4, false), (4..7, true)]);
    // Nothing fits: everything unchanged.
    let outs = check_merge(&inputs, &MergeOptions::new(100));
    assert!(outs.iter().all(|o| matches!(o, Merged::Unchanged { .. })));
}

#[test]
fn merge_compressed_by_policy() {
    let inputs = [
        dense(Compression::None, 0, 4, 1, 50),
        dense(Compression::None, 4, 4, 1, 50),
        dense(Compression::Lz4, 8, 4, 1, 50),
        dense(Compression::Lz4, 12, 4, 1, 50),
        dense(Compression::Zstd, 16, 4, 1, 50),
        dense(Compression::Zstd, 20, 4, 1, 50),
        dense(Compression::Lz4, 24, 4, 1, 50),
    ];
    let kinds = |outs: &[Merged]| -> Vec<(std::ops::Range<usize>, Option<Compression>)> {
        outs.iter()
            .map(|o| match o {
                Merged::Rewritten { batch, inputs, .. } => {
                    (inputs.clone(), Some(batch.header().compression()))
                }
                Merged::Unchanged { index, .. } => (*index..index + 1, None),
            })
            .collect()
    };
    let never = check_merge(&inputs, &MergeOptions::new(1 << 20));
    assert_eq!(
        kinds(&never),
        [
            (0..2, Some(Compression::None)),
            (2..3, None),
            (3..4, None),
            (4..5, None),
            (5..6, None),
            (6..7, None)
        ]
    );
    let opts = MergeOptions::new(1 << 20).compressed(CompressedPolicy::Recompress);
    let re = check_merge(&inputs, &opts);
    assert_eq!(
        kinds(&re),
        [
            (0..2, Some(Compression::None)),
            (2..4, Some(Compression::Lz4)),
            (4..6, Some(Compression::Zstd)),
            (6..7, None)
        ]
    );
    // The decompressed cap bounds one merged batch's records.
    let tight = MergeOptions {
        limits: Limits {
            max_decompressed_bytes: 300,
            ..Limits::default()
        },
        ..opts
    };
    let outs = check_merge(&inputs, &tight);
    assert!(
        outs.iter()
            .skip(1)
            .all(|o| matches!(o, Merged::Unchanged { .. }))
    );
    // Incompressible values: the recompressed group is too large and is halved.
    let noisy: Vec<Batch> = (0..8)
        .map(|i| {
            let recs: Vec<Raw> = (0..4)
                .map(|j| {
                    let mut seed = (i * 4 + j) as u64 + 1;
                    let v: Vec<u8> = (0..200)
                        .map(|_| {
                            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                            (seed >> 56) as u8
                        })
                        .collect();
                    raw(j, 1, &v)
                })
                .collect();
            one(hand_batch(
                Compression::Zstd,
                i64::from(i) * 4,
                3,
                0,
                ProducerStamp::NONE,
                &recs,
            ))
        })
        .collect();
    let sum: usize = noisy.iter().map(Batch::size).sum();
    let opts = MergeOptions::new(sum / 2).compressed(CompressedPolicy::Recompress);
    let outs = check_merge(&noisy, &opts);
    assert!(outs.len() >= 2);
}

#[test]
fn merge_empty_batches() {
    // Compaction can keep a header with no records.
    let empty = one(hand_batch(
        Compression::None,
        0,
        4,
        0,
        ProducerStamp::NONE,
        &[],
    ));
    let outs = check_merge(std::slice::from_ref(&empty), &MergeOptions::new(1 << 20));
    assert!(matches!(outs[..], [Merged::Unchanged { index: 0, .. }]));
    let empty2 = one(hand_batch(
        Compression::None,
        5,
        2,
        0,
        ProducerStamp::NONE,
        &[],
    ));
    let outs = check_merge(&[empty.clone(), empty2], &MergeOptions::new(1 << 20));
    assert_eq!(outs.len(), 2);
    let outs = check_merge(
        &[empty, dense(Compression::None, 5, 2, 1, 4)],
        &MergeOptions::new(1 << 20),
    );
    let (batch, offsets) = rewritten(&outs[0]);
    assert_eq!(batch.header().records_count, 2);
    assert_eq!(offsets.runs(), &[OffsetRun { first: 5, count: 2 }]);
}

#[test]
fn merge_keeps_extreme_timestamps() {
    let a = one(hand_batch(
        Compression::None,
        0,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, i64::MAX, b"x"), raw(1, i64::MIN, b"y")],
    ));
    let b = one(hand_batch(
        Compression::None,
        2,
        1,
        0,
        ProducerStamp::NONE,
        &[raw(0, -1, b"x"), raw(1, 0, b"y")],
    ));
    check_merge(&[a, b], &MergeOptions::new(1 << 20));
}

/// Input batches for the merge properties: (codec, records as (gap before, timestamp,
/// value length, keyed)), and the gap before the batch.
type MergeInput = (u8, Vec<(i32, i64, usize, bool)>, i64);

fn merge_input() -> impl Strategy<Value = MergeInput> {
    (
        prop_oneof![Just(0u8), Just(0u8), Just(3u8), Just(4u8), Just(1u8)],
        proptest::collection::vec(
            (
                prop_oneof![Just(0i32), Just(0), Just(0), 1i32..3],
                prop_oneof![1_700_000_000_000i64..1_700_000_100_000, any::<i64>()],
                0usize..300,
                any::<bool>(),
            ),
            0..25,
        ),
        prop_oneof![Just(0i64), Just(0), 1i64..100],
    )
}

fn build_inputs(specs: &[MergeInput]) -> Vec<Batch> {
    let mut next = 1_000i64;
    specs
        .iter()
        .map(|(codec, recs, gap)| {
            let codec = Compression::from_id(*codec).unwrap();
            let base = next + gap;
            let mut delta = -1;
            let raws: Vec<Raw> = recs
                .iter()
                .enumerate()
                .map(|(i, (g, ts, len, keyed))| {
                    delta += 1 + g;
                    let mut r = raw(delta, *ts, &vec![(i % 251) as u8; *len]);
                    if !keyed {
                        r.key = None;
                    }
                    if i % 3 == 0 {
                        r.headers = vec![Header {
                            key: Bytes::from_static(b"trace"),
                            value: Some(Bytes::from(vec![i as u8; i % 5])),
                        }];
                    }
                    r
                })
                .collect();
            // Compaction keeps the last offset delta; sometimes the gap is at the end.
            let last = delta + i32::from(recs.len() % 4 == 3);
            let last = last.max(0);
            next = base + i64::from(last) + 1;
            one(hand_batch(codec, base, last, 0, ProducerStamp::NONE, &raws))
        })
        .collect()
}

proptest! {
    #[test]
    fn merge_keeps_content_offsets_and_limits(
        specs in proptest::collection::vec(merge_input(), 0..12),
        max in prop_oneof![100usize..3_000, 3_000usize..40_000, Just(usize::MAX)],
        policy in prop_oneof![
            Just(CompressedPolicy::Never),
            Just(CompressedPolicy::RecompressFast),
            Just(CompressedPolicy::Recompress),
        ],
        pooled in any::<bool>(),
    ) {
        let inputs = build_inputs(&specs);
        let mut opts = MergeOptions::new(max).compressed(policy);
        if pooled {
            opts.buffers = BufferPool::new(4 << 20);
        }
        // Twice, so that the second pass writes into buffers the first one gave back.
        check_merge(&inputs, &opts);
        check_merge(&inputs, &opts);
    }

    #[test]
    fn merge_never_panics_on_mutated_inputs(
        specs in proptest::collection::vec(merge_input(), 1..5),
        flips in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 1..6),
        fix_crc in any::<bool>(),
    ) {
        let inputs = build_inputs(&specs);
        let mut raw: Vec<Vec<u8>> = inputs.iter().map(|b| b.as_bytes().to_vec()).collect();
        for (which, at, x) in flips {
            let b = &mut raw[which % inputs.len()];
            // Leave the framing (bytes 0..17) alone so that the batches still parse.
            let i = 17 + at % (b.len() - 17);
            b[i] ^= x;
            if fix_crc {
                let crc = crc32c::crc32c(&b[CRC_START..]);
                b[17..21].copy_from_slice(&crc.to_be_bytes());
            }
        }
        let mutated: Vec<Batch> = raw.into_iter().filter_map(|b| Batch::parse(Bytes::from(b)).ok()).collect();
        for policy in [CompressedPolicy::Never, CompressedPolicy::Recompress] {
            let _ = merge(&mutated, &MergeOptions::new(2_000).compressed(policy));
            let _ = merge(&mutated, &MergeOptions::new(usize::MAX).compressed(policy));
        }
    }
}
