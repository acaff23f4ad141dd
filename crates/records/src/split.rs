//! Splitting a fetched record set into batches, without copying.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::header::{
    BATCH_LENGTH_AT, BatchHeader, CRC_START, HEADER_LEN, LOG_OVERHEAD, MAGIC_AT, MIN_BATCH_LENGTH,
    check_magic,
};

/// Caps applied to lengths read off the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest batch accepted by the splitter, in bytes (header included).
    pub max_batch_bytes: usize,
    /// Largest records section a compressed batch may expand to.
    pub max_decompressed_bytes: usize,
}

impl Limits {
    /// 64 MiB: far above any sane `max.message.bytes`, far below memory trouble.
    pub const DEFAULT_MAX_BATCH_BYTES: usize = 64 << 20;
    /// 64 MiB per batch.
    pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 64 << 20;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_batch_bytes: Self::DEFAULT_MAX_BATCH_BYTES,
            max_decompressed_bytes: Self::DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

/// One v2 record batch: a slice of the buffer it came from, plus its decoded header.
#[derive(Debug, Clone)]
pub struct Batch {
    bytes: Bytes,
    header: BatchHeader,
    position: usize,
    /// This process computed the stored CRC over these very bytes (a batch it sealed), so
    /// verifying it again would only read the batch for nothing.
    crc_computed_here: bool,
}

impl Batch {
    /// Takes `bytes` as exactly one batch (for instance one built by [`crate::BatchBuilder`]).
    pub fn parse(bytes: Bytes) -> Result<Batch> {
        let mut it = Batches::new(
            bytes.clone(),
            Limits {
                max_batch_bytes: usize::MAX,
                ..Limits::default()
            },
        );
        match it.next() {
            Some(Ok(batch)) if batch.size() == bytes.len() => Ok(batch),
            Some(Err(e)) => Err(e),
            Some(Ok(batch)) => Err(Error::BadBatchFraming {
                len: bytes.len(),
                expected: batch.size(),
            }),
            None => Err(Error::BadBatchFraming {
                len: bytes.len(),
                expected: expected_len(&bytes),
            }),
        }
    }

    /// The decoded header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The whole batch, header included (a slice of the original buffer).
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The whole batch, header included.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// Size of the batch in bytes, header included.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Byte position of the batch in the record set it was split from.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The records section (bytes 61..), still compressed: a slice, not a copy.
    pub fn payload(&self) -> Bytes {
        self.bytes.slice(HEADER_LEN..)
    }

    /// The header's 61 bytes.
    pub(crate) fn header_bytes(&self) -> &[u8; HEADER_LEN] {
        self.bytes[..HEADER_LEN]
            .try_into()
            .expect("a Batch always holds at least the header")
    }

    /// CRC-32C of bytes 21..end, as it is now.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.bytes[CRC_START..])
    }

    /// Checks the stored CRC-32C against the bytes (at once for a batch whose CRC this
    /// process computed, such as a merged one: its bytes cannot have changed since).
    pub fn verify_crc(&self) -> Result<()> {
        if self.crc_computed_here {
            return Ok(());
        }
        self.check_crc(self.compute_crc())
    }

    /// Takes `bytes`, whose CRC this process has just computed, as one batch.
    pub(crate) fn sealed(bytes: Bytes) -> Result<Batch> {
        let mut batch = Batch::parse(bytes)?;
        batch.crc_computed_here = true;
        Ok(batch)
    }

    pub(crate) fn check_crc(&self, computed: u32) -> Result<()> {
        if computed == self.header.crc {
            Ok(())
        } else {
            Err(Error::CrcMismatch {
                position: self.position,
                base_offset: self.header.base_offset,
                stored: self.header.crc,
                computed,
            })
        }
    }
}

/// What [`split`] found: the whole batches, and how many bytes of a partial batch at the end
/// were left out.
#[derive(Debug, Clone, Default)]
pub struct Split {
    /// Whole batches, in order.
    pub batches: Vec<Batch>,
    /// Bytes of a partial trailing batch that were dropped (a Fetch may end with one).
    pub trimmed: usize,
}

/// Splits a record set into batches, trimming a partial trailing batch.
///
/// Fails on the first impossible length, legacy or unknown magic, or unknown codec, naming
/// the byte position. CRCs are not checked here (see [`Batch::verify_crc`]).
pub fn split(records: Bytes, limits: &Limits) -> Result<Split> {
    let mut it = Batches::new(records, *limits);
    let batches = it.by_ref().collect::<Result<Vec<_>>>()?;
    Ok(Split {
        batches,
        trimmed: it.trimmed(),
    })
}

/// Iterator over the batches of a record set; see [`split`].
///
/// After it returns `None`, [`Batches::trimmed`] tells how many trailing bytes belonged to a
/// partial batch. After an error it returns `None`.
#[derive(Debug, Clone)]
pub struct Batches {
    data: Bytes,
    pos: usize,
    limits: Limits,
    trimmed: usize,
    done: bool,
}

impl Batches {
    /// Iterates over the batches of `records`.
    pub fn new(records: Bytes, limits: Limits) -> Batches {
        Batches {
            data: records,
            pos: 0,
            limits,
            trimmed: 0,
            done: false,
        }
    }

    /// Bytes of a partial trailing batch (meaningful once the iterator is exhausted).
    pub fn trimmed(&self) -> usize {
        self.trimmed
    }

    fn next_batch(&mut self) -> Result<Option<Batch>> {
        let position = self.pos;
        let rest = &self.data[position..];
        if rest.is_empty() {
            return Ok(None);
        }
        let Some(len_field) = rest.get(BATCH_LENGTH_AT..LOG_OVERHEAD) else {
            self.trimmed = rest.len();
            return Ok(None);
        };
        let length = i32::from_be_bytes([len_field[0], len_field[1], len_field[2], len_field[3]]);
        // Legacy message sets keep magic at the same byte, so check it before the v2
        // length rules (their messages can be shorter than a v2 header).
        if let Some(&magic) = rest.get(MAGIC_AT) {
            check_magic(magic as i8, position)?;
        }
        if length < MIN_BATCH_LENGTH {
            return Err(Error::BatchLengthTooSmall { position, length });
        }
        // `length` is positive here, so the cast is exact.
        let total = length as usize + LOG_OVERHEAD;
        if total > self.limits.max_batch_bytes {
            return Err(Error::BatchLengthTooLarge {
                position,
                length,
                cap: self.limits.max_batch_bytes,
            });
        }
        if total > rest.len() {
            self.trimmed = rest.len();
            return Ok(None);
        }
        let header_bytes: &[u8; HEADER_LEN] = rest[..HEADER_LEN]
            .try_into()
            .expect("total >= HEADER_LEN was checked");
        let header = BatchHeader::parse(header_bytes, position)?;
        self.pos += total;
        Ok(Some(Batch {
            bytes: self.data.slice(position..position + total),
            header,
            position,
            crc_computed_here: false,
        }))
    }
}

impl Iterator for Batches {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.done {
            return None;
        }
        let item = self.next_batch().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl std::iter::FusedIterator for Batches {}

fn expected_len(bytes: &[u8]) -> usize {
    bytes
        .get(BATCH_LENGTH_AT..LOG_OVERHEAD)
        .and_then(|b| usize::try_from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok())
        .map_or(HEADER_LEN, |l| l + LOG_OVERHEAD)
}

#[cfg(test)]
mod tests;
