//! Patching a batch header for forwarding, leaving the payload untouched.
//!
//! The patched batch is a fresh 61-byte header plus the original payload slice; the client
//! writes the two parts with vectored I/O, so the payload is never copied.

use bytes::Bytes;

use crate::crc::{HEAD_LEN, update_head};
use crate::error::Result;
use crate::header::{
    ATTRIBUTES_AT, Attributes, BASE_SEQUENCE_AT, CRC_AT, CRC_START, HEADER_LEN, PRODUCER_EPOCH_AT,
    PRODUCER_ID_AT,
};
use crate::split::Batch;

/// Producer fields to stamp on a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerStamp {
    /// Producer id, -1 for none.
    pub producer_id: i64,
    /// Producer epoch, -1 for none.
    pub producer_epoch: i16,
    /// Sequence of the batch's first record, -1 for none.
    pub base_sequence: i32,
}

impl ProducerStamp {
    /// No producer: a plain, non-idempotent batch.
    pub const NONE: ProducerStamp = ProducerStamp {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
}

impl Default for ProducerStamp {
    fn default() -> Self {
        Self::NONE
    }
}

/// Attribute bits a forwarded batch must not carry: the source's transaction (the target
/// would refuse it), LogAppendTime (the target refuses it from clients), and the source's
/// delete horizon (the target's cleaner keeps its own; record timestamps do not change,
/// since they are deltas from `baseTimestamp` either way).
const CLEARED_BITS: u16 =
    Attributes::TRANSACTIONAL | Attributes::LOG_APPEND_TIME | Attributes::DELETE_HORIZON;

/// A batch ready to produce: a new header and the original payload, whose concatenation is
/// one valid v2 batch.
#[derive(Debug, Clone)]
pub struct PatchedBatch {
    header: Bytes,
    payload: Bytes,
}

impl PatchedBatch {
    /// The new 61-byte header.
    pub fn header(&self) -> &Bytes {
        &self.header
    }

    /// The records section: the same allocation as the source batch.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// Header and payload, in write order (cheap reference-count clones).
    pub fn parts(&self) -> [Bytes; 2] {
        [self.header.clone(), self.payload.clone()]
    }

    /// Header and payload, in write order.
    pub fn into_parts(self) -> [Bytes; 2] {
        [self.header, self.payload]
    }

    /// Size of the batch in bytes.
    pub fn size(&self) -> usize {
        self.header.len() + self.payload.len()
    }

    /// The same batch with the transactional attribute bit set (`true`) or cleared, for a
    /// transactional producer writing inside its own transaction. Only the header changes:
    /// the CRC-32C is updated from the header difference without reading the payload
    /// again, and the payload stays the same allocation.
    pub fn with_transactional(self, transactional: bool) -> PatchedBatch {
        let Ok(old) = <&[u8; HEADER_LEN]>::try_from(&self.header[..]) else {
            return self; // never: a patched header is always HEADER_LEN bytes
        };
        let attributes = u16::from_be_bytes([old[ATTRIBUTES_AT], old[ATTRIBUTES_AT + 1]]);
        let want = if transactional {
            attributes | Attributes::TRANSACTIONAL
        } else {
            attributes & !Attributes::TRANSACTIONAL
        };
        if want == attributes {
            return self;
        }
        let mut header = *old;
        header[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&want.to_be_bytes());
        let old_crc = u32::from_be_bytes([
            old[CRC_AT],
            old[CRC_AT + 1],
            old[CRC_AT + 2],
            old[CRC_AT + 3],
        ]);
        let crc = match update_head(old_crc, head(old), head(&header), self.payload.len()) {
            Some(crc) => crc,
            None => crc32c::crc32c_append(crc32c::crc32c(&header[CRC_START..]), &self.payload),
        };
        header[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
        PatchedBatch {
            header: Bytes::copy_from_slice(&header),
            payload: self.payload,
        }
    }

    /// The batch as one contiguous buffer (copies; for tools and tests, not the hot path).
    pub fn to_contiguous(&self) -> Bytes {
        let mut v = Vec::with_capacity(self.size());
        v.extend_from_slice(&self.header);
        v.extend_from_slice(&self.payload);
        Bytes::from(v)
    }
}

impl Batch {
    /// Patches the header for forwarding and recomputes CRC-32C over bytes 21..end by
    /// reading the new header tail and then the payload in place.
    ///
    /// Sets `baseOffset = 0`, clears the transactional, LogAppendTime and delete-horizon
    /// bits and stamps `stamp`. Does not verify the old CRC: use
    /// [`Batch::verify_and_patch`] on data off the wire.
    pub fn patch(&self, stamp: ProducerStamp) -> PatchedBatch {
        let mut header = patched_header(self.header_bytes(), stamp);
        let payload = self.payload();
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header[CRC_START..]), &payload);
        header[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
        PatchedBatch {
            header: Bytes::copy_from_slice(&header),
            payload,
        }
    }

    /// Verifies the stored CRC, then patches like [`Batch::patch`], reading the payload
    /// once: the new CRC is derived from the verified one, since only header bytes changed.
    /// A batch this process sealed (a merged one) is not read at all.
    pub fn verify_and_patch(&self, stamp: ProducerStamp) -> Result<PatchedBatch> {
        self.verify_crc()?;
        let old = self.header_bytes();
        let mut header = patched_header(old, stamp);
        let payload = self.payload();
        let crc = match update_head(self.header().crc, head(old), head(&header), payload.len()) {
            Some(crc) => crc,
            // Unreachable for i32-sized batches; fall back to reading the payload again.
            None => crc32c::crc32c_append(crc32c::crc32c(&header[CRC_START..]), &payload),
        };
        header[CRC_AT..CRC_START].copy_from_slice(&crc.to_be_bytes());
        Ok(PatchedBatch {
            header: Bytes::copy_from_slice(&header),
            payload,
        })
    }
}

fn head(h: &[u8; HEADER_LEN]) -> &[u8; HEAD_LEN] {
    h[CRC_START..]
        .try_into()
        .expect("HEAD_LEN = HEADER_LEN - CRC_START")
}

/// The header with forwarding fields set; the CRC field still holds the old value.
fn patched_header(old: &[u8; HEADER_LEN], stamp: ProducerStamp) -> [u8; HEADER_LEN] {
    let mut h = *old;
    h[..8].copy_from_slice(&0i64.to_be_bytes());
    let attributes = u16::from_be_bytes([h[ATTRIBUTES_AT], h[ATTRIBUTES_AT + 1]]) & !CLEARED_BITS;
    h[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    h[PRODUCER_ID_AT..PRODUCER_EPOCH_AT].copy_from_slice(&stamp.producer_id.to_be_bytes());
    h[PRODUCER_EPOCH_AT..BASE_SEQUENCE_AT].copy_from_slice(&stamp.producer_epoch.to_be_bytes());
    h[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&stamp.base_sequence.to_be_bytes());
    h
}

#[cfg(test)]
mod tests;
