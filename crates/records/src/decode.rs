//! Reading the records of a batch, whatever its codec.

use bytes::Bytes;

use crate::compression::decompress_into;
use crate::error::{Error, Result};
use crate::header::{Compression, HEADER_LEN};
use crate::record::{Record, Records};
use crate::split::{Batch, Limits};

/// Type of a control record, from its key (`version int16, type int16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// Transaction abort marker (type 0).
    Abort,
    /// Transaction commit marker (type 1).
    Commit,
    /// Any other control record (leader change, snapshot markers, ...).
    Other(i16),
}

impl Batch {
    /// The records section, decompressed (a slice, not a copy, when uncompressed).
    pub fn decompressed_payload(&self, limits: &Limits) -> Result<Bytes> {
        if self.header().compression() == Compression::None {
            return Ok(self.payload());
        }
        let mut out = Vec::new();
        self.decompress_payload_into(limits, &mut out)?;
        Ok(Bytes::from(out))
    }

    /// The records section, decompressed into `into` (emptied first, its capacity reused;
    /// a copy when uncompressed).
    pub(crate) fn decompress_payload_into(
        &self,
        limits: &Limits,
        into: &mut Vec<u8>,
    ) -> Result<()> {
        into.clear();
        let payload = &self.as_bytes()[HEADER_LEN..];
        // Compaction can leave a batch with no records and no payload; whatever the codec
        // bits say, there is nothing to decompress.
        if payload.is_empty() {
            return Ok(());
        }
        let header = self.header();
        decompress_into(
            header.compression(),
            payload,
            limits.max_decompressed_bytes,
            into,
        )
        .map_err(|e| e.in_batch(header.base_offset))
    }

    /// Iterates over the batch's records (decompressing the whole section first).
    pub fn records(&self, limits: &Limits) -> Result<Records> {
        let h = self.header();
        Records::new(
            self.decompressed_payload(limits)?,
            h.records_count,
            h.base_offset,
            h.base_timestamp,
        )
    }

    /// All records of the batch.
    pub fn decode_records(&self, limits: &Limits) -> Result<Vec<Record>> {
        self.records(limits)?.collect()
    }

    /// For a control batch, the type of its first record; `None` for a data batch or a
    /// control batch emptied by compaction.
    pub fn control_type(&self, limits: &Limits) -> Result<Option<ControlRecordType>> {
        if !self.header().attributes.is_control() {
            return Ok(None);
        }
        let Some(first) = self.records(limits)?.next().transpose()? else {
            return Ok(None);
        };
        control_record_type(first.key.as_deref())
            .map(Some)
            .map_err(|e| e.in_batch(self.header().base_offset))
    }
}

/// Decodes a control record key.
pub fn control_record_type(key: Option<&[u8]>) -> Result<ControlRecordType> {
    let bad = |reason| Error::InvalidControlRecord { reason };
    let key = key.ok_or_else(|| bad("null key"))?;
    let (version, rest) = key
        .split_first_chunk::<2>()
        .ok_or_else(|| bad("key too short"))?;
    let (kind, _) = rest
        .split_first_chunk::<2>()
        .ok_or_else(|| bad("key too short"))?;
    // Newer key versions only append fields, as the Java client assumes.
    if i16::from_be_bytes(*version) < 0 {
        return Err(bad("negative key version"));
    }
    Ok(match i16::from_be_bytes(*kind) {
        0 => ControlRecordType::Abort,
        1 => ControlRecordType::Commit,
        other => ControlRecordType::Other(other),
    })
}

#[cfg(test)]
mod tests;
