//! Building batches of every codec and reading them back.

use bytes::Bytes;
use proptest::prelude::*;

use crate::*;

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
}
