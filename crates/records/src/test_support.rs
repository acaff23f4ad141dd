//! Batches written by hand for the crate's unit tests (gaps, control records, odd headers),
//! with the crate's own record encoder.

use bytes::Bytes;

use crate::compression::compress;
use crate::header::{Attributes, BatchHeader, CRC_START, HEADER_LEN, LOG_OVERHEAD};
use crate::record::encode_record;
use crate::{Batch, Compression, Header, ProducerStamp};

/// A record to write by hand: offset delta, timestamp, key, value, headers.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub(crate) delta: i32,
    pub(crate) ts: i64,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) value: Option<Vec<u8>>,
    pub(crate) headers: Vec<Header>,
}

pub(crate) fn raw(delta: i32, ts: i64, value: &[u8]) -> Raw {
    Raw {
        delta,
        ts,
        key: Some(format!("k{delta}").into_bytes()),
        value: Some(value.to_vec()),
        headers: vec![],
    }
}

/// Writes a batch with exactly these records and header fields (CRC made valid).
pub(crate) fn hand_batch(
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

pub(crate) fn control_batch(base_offset: i64, producer_id: i64, kind: i16) -> Bytes {
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

pub(crate) fn txn_batch(base_offset: i64, producer_id: i64, n: i32) -> Bytes {
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

pub(crate) fn concat(parts: &[Bytes]) -> Bytes {
    Bytes::from(parts.concat())
}

pub(crate) fn one(bytes: Bytes) -> Batch {
    Batch::parse(bytes).unwrap()
}
