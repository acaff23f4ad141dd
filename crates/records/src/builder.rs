//! Building v2 batches from records.

use bytes::Bytes;

use crate::compression::compress;
use crate::error::{Error, Result};
use crate::header::{
    Attributes, BatchHeader, CRC_START, Compression, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2,
};
use crate::patch::ProducerStamp;
use crate::record::{Header, Record, encode_record};
use crate::split::Batch;

/// Builds one batch the way a producer writes it: `baseOffset = 0`, offset deltas
/// `0..n`, `baseTimestamp` = the first record's timestamp, `maxTimestamp` = the largest,
/// CreateTime, not transactional.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    compression: Compression,
    producer: ProducerStamp,
    records: Vec<u8>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// An empty builder writing with `compression` and no producer id.
    pub fn new(compression: Compression) -> BatchBuilder {
        BatchBuilder {
            compression,
            producer: ProducerStamp::NONE,
            records: Vec::new(),
            count: 0,
            base_timestamp: -1,
            max_timestamp: -1,
        }
    }

    /// Stamps the batch with producer fields.
    pub fn producer(mut self, stamp: ProducerStamp) -> BatchBuilder {
        self.producer = stamp;
        self
    }

    /// Appends a record; its offset delta is the number of records before it.
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<()> {
        if self.count == i32::MAX {
            return Err(Error::BatchOverflow {
                reason: "more than i32::MAX records",
            });
        }
        if self.count == 0 {
            self.base_timestamp = timestamp;
            self.max_timestamp = timestamp;
        }
        // Wrapping, so that any i64 timestamp round-trips through the delta.
        let delta = timestamp.wrapping_sub(self.base_timestamp);
        encode_record(&mut self.records, self.count, delta, key, value, headers)?;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
        Ok(())
    }

    /// Appends a record's timestamp, key, value and headers (its offset is not used).
    pub fn push_record(&mut self, record: &Record) -> Result<()> {
        self.push(
            record.timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        )
    }

    /// Records pushed so far.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Uncompressed size of the records section so far.
    pub fn records_size(&self) -> usize {
        self.records.len()
    }

    /// Compresses the records and writes the header and CRC.
    pub fn build(self) -> Result<Batch> {
        if self.count == 0 {
            return Err(Error::EmptyBatch);
        }
        let payload = compress(self.compression, &self.records)?;
        let batch_length =
            i32::try_from(HEADER_LEN - LOG_OVERHEAD + payload.len()).map_err(|_| {
                Error::BatchOverflow {
                    reason: "batchLength above i32::MAX",
                }
            })?;
        let header = BatchHeader {
            base_offset: 0,
            batch_length,
            // What producers write: the broker assigns it.
            partition_leader_epoch: -1,
            magic: MAGIC_V2,
            crc: 0,
            attributes: Attributes(u16::from(self.compression.id())),
            last_offset_delta: self.count - 1,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            producer_id: self.producer.producer_id,
            producer_epoch: self.producer.producer_epoch,
            base_sequence: self.producer.base_sequence,
            records_count: self.count,
        };
        let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
        bytes.extend_from_slice(&header.encode());
        bytes.extend_from_slice(&payload);
        let crc = crc32c::crc32c(&bytes[CRC_START..]);
        bytes[17..CRC_START].copy_from_slice(&crc.to_be_bytes());
        Batch::parse(Bytes::from(bytes))
    }
}

#[cfg(test)]
mod tests;
