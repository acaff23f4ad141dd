//! The fixed 61-byte header of a v2 record batch.
//!
//! | bytes  | field                | in CRC |
//! |--------|----------------------|--------|
//! | 0..8   | baseOffset           | no     |
//! | 8..12  | batchLength          | no     |
//! | 12..16 | partitionLeaderEpoch | no     |
//! | 16     | magic (= 2)          | no     |
//! | 17..21 | crc (CRC-32C)        | no     |
//! | 21..23 | attributes           | yes    |
//! | 23..27 | lastOffsetDelta      | yes    |
//! | 27..35 | baseTimestamp        | yes    |
//! | 35..43 | maxTimestamp         | yes    |
//! | 43..51 | producerId           | yes    |
//! | 51..53 | producerEpoch        | yes    |
//! | 53..57 | baseSequence         | yes    |
//! | 57..61 | recordsCount         | yes    |

pub use crate::codec::Compression;
use crate::error::{Error, Result};

/// Size of the v2 batch header; the records section starts here.
pub const HEADER_LEN: usize = 61;
/// Bytes before the part that `batchLength` counts (baseOffset + batchLength).
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batchLength`: the header minus [`LOG_OVERHEAD`].
pub const MIN_BATCH_LENGTH: i32 = (HEADER_LEN - LOG_OVERHEAD) as i32;
/// First byte covered by the CRC (the attributes field).
pub const CRC_START: usize = 21;

pub(crate) const BATCH_LENGTH_AT: usize = 8;
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
pub(crate) const ATTRIBUTES_AT: usize = 21;
pub(crate) const PRODUCER_ID_AT: usize = 43;
pub(crate) const PRODUCER_EPOCH_AT: usize = 51;
pub(crate) const BASE_SEQUENCE_AT: usize = 53;

/// The magic byte of a v2 record batch.
pub const MAGIC_V2: i8 = 2;

/// What a batch's timestamps mean (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Set by the producer; each record carries its own.
    CreateTime,
    /// Set by the broker on append; consumers see `maxTimestamp` for every record.
    LogAppendTime,
}

/// The attributes field of a batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Attributes(pub u16);

impl Attributes {
    /// Bits 0..3: the codec id.
    pub const COMPRESSION_MASK: u16 = 0x07;
    /// Bit 3: LogAppendTime.
    pub const LOG_APPEND_TIME: u16 = 0x08;
    /// Bit 4: part of a transaction.
    pub const TRANSACTIONAL: u16 = 0x10;
    /// Bit 5: a control batch (transaction marker and the like).
    pub const CONTROL: u16 = 0x20;
    /// Bit 6: `baseTimestamp` holds the delete horizon (KIP-534).
    pub const DELETE_HORIZON: u16 = 0x40;

    /// The codec id in bits 0..3 (may name no codec; see [`Compression::from_id`]).
    pub fn compression_id(self) -> u8 {
        (self.0 & Self::COMPRESSION_MASK) as u8
    }

    /// The timestamp type (bit 3).
    pub fn timestamp_type(self) -> TimestampType {
        if self.0 & Self::LOG_APPEND_TIME != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Bit 4: the batch belongs to a transaction.
    pub fn is_transactional(self) -> bool {
        self.0 & Self::TRANSACTIONAL != 0
    }

    /// Bit 5: the batch holds control records.
    pub fn is_control(self) -> bool {
        self.0 & Self::CONTROL != 0
    }

    /// Bit 6: `baseTimestamp` is the delete horizon set by the log cleaner.
    pub fn has_delete_horizon(self) -> bool {
        self.0 & Self::DELETE_HORIZON != 0
    }
}

/// Every field of a v2 batch header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record (by offset delta 0).
    pub base_offset: i64,
    /// Bytes after this field: the batch is `batch_length + 12` bytes long.
    pub batch_length: i32,
    /// Leader epoch of the partition when the batch was appended.
    pub partition_leader_epoch: i32,
    /// Format version; always 2 for a parsed header.
    pub magic: i8,
    /// Stored CRC-32C over bytes 21..end.
    pub crc: u32,
    /// Attribute bits.
    pub attributes: Attributes,
    /// Offset delta of the last record the batch was written with (kept through compaction).
    pub last_offset_delta: i32,
    /// Timestamp of the first record, or the delete horizon when bit 6 is set.
    pub base_timestamp: i64,
    /// Largest record timestamp (the append time for LogAppendTime batches).
    pub max_timestamp: i64,
    /// Producer id, -1 for none.
    pub producer_id: i64,
    /// Producer epoch, -1 for none.
    pub producer_epoch: i16,
    /// Sequence number of the first record, -1 for none.
    pub base_sequence: i32,
    /// Records present in the batch.
    pub records_count: i32,
}

fn be_i16(b: &[u8; HEADER_LEN], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn be_i32(b: &[u8; HEADER_LEN], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_i64(b: &[u8; HEADER_LEN], at: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(x)
}

impl BatchHeader {
    /// Decodes the 61 header bytes. `position` is only used in error messages.
    ///
    /// Rejects a magic other than 2 and an unknown codec; lengths are the splitter's job.
    pub fn parse(b: &[u8; HEADER_LEN], position: usize) -> Result<BatchHeader> {
        let magic = b[MAGIC_AT] as i8;
        check_magic(magic, position)?;
        let header = BatchHeader {
            base_offset: be_i64(b, 0),
            batch_length: be_i32(b, BATCH_LENGTH_AT),
            partition_leader_epoch: be_i32(b, 12),
            magic,
            crc: be_i32(b, CRC_AT) as u32,
            attributes: Attributes(be_i16(b, ATTRIBUTES_AT) as u16),
            last_offset_delta: be_i32(b, 23),
            base_timestamp: be_i64(b, 27),
            max_timestamp: be_i64(b, 35),
            producer_id: be_i64(b, PRODUCER_ID_AT),
            producer_epoch: be_i16(b, PRODUCER_EPOCH_AT),
            base_sequence: be_i32(b, BASE_SEQUENCE_AT),
            records_count: be_i32(b, 57),
        };
        if header.compression_checked().is_none() {
            return Err(Error::UnknownCompression {
                position,
                base_offset: header.base_offset,
                codec: header.attributes.compression_id(),
            });
        }
        Ok(header)
    }

    /// Writes the header back to its 61-byte form (the CRC field as stored in `crc`).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.batch_length.to_be_bytes());
        b[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b[16] = self.magic as u8;
        b[17..21].copy_from_slice(&self.crc.to_be_bytes());
        b[21..23].copy_from_slice(&self.attributes.0.to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        b[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.records_count.to_be_bytes());
        b
    }

    fn compression_checked(&self) -> Option<Compression> {
        Compression::from_id(self.attributes.compression_id())
    }

    /// The batch's codec.
    pub fn compression(&self) -> Compression {
        // `parse` rejected unknown ids; a hand-built header with a bad id reads as None.
        self.compression_checked().unwrap_or(Compression::None)
    }

    /// Total size of the batch in bytes (`batch_length + 12`).
    pub fn total_len(&self) -> usize {
        usize::try_from(self.batch_length).unwrap_or(0) + LOG_OVERHEAD
    }

    /// Offset of the last offset the batch covers (`base_offset + last_offset_delta`).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset a fetch should continue from after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The delete horizon (KIP-534), when bit 6 is set.
    pub fn delete_horizon(&self) -> Option<i64> {
        self.attributes
            .has_delete_horizon()
            .then_some(self.base_timestamp)
    }

    /// The timestamp a consumer shows for every record of a LogAppendTime batch.
    pub fn log_append_time(&self) -> Option<i64> {
        (self.attributes.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(self.max_timestamp)
    }
}

/// Magic 0/1 are the legacy formats (distinct error); anything else but 2 is garbage.
pub(crate) fn check_magic(magic: i8, position: usize) -> Result<()> {
    match magic {
        MAGIC_V2 => Ok(()),
        0 | 1 => Err(Error::LegacyMessageFormat { position, magic }),
        _ => Err(Error::UnknownMagic { position, magic }),
    }
}

#[cfg(test)]
mod tests;
