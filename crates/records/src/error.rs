//! The crate's one error type.

use crate::codec::Compression;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while splitting, validating, decoding or building batches.
///
/// Errors about the framing of a record set name the byte position of the offending batch
/// inside the record set; errors about a batch's contents are wrapped in [`Error::Batch`],
/// which names the batch's base offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `batchLength` is below the 49 bytes every v2 batch has after that field.
    #[error("batch at byte {position}: batchLength {length} is below the v2 minimum of 49")]
    BatchLengthTooSmall {
        /// Byte position of the batch in the record set.
        position: usize,
        /// The length field as read.
        length: i32,
    },
    /// `batchLength` is above the configured cap.
    #[error("batch at byte {position}: batchLength {length} exceeds the cap of {cap} bytes")]
    BatchLengthTooLarge {
        /// Byte position of the batch in the record set.
        position: usize,
        /// The length field as read.
        length: i32,
        /// The configured cap ([`crate::Limits::max_batch_bytes`]).
        cap: usize,
    },
    /// A magic 0 or 1 message set (Kafka before 0.11): not supported.
    #[error(
        "batch at byte {position}: legacy message format (magic {magic}) is not supported; \
         only v2 record batches (magic 2, Kafka 0.11+) are"
    )]
    LegacyMessageFormat {
        /// Byte position of the message set entry in the record set.
        position: usize,
        /// The magic byte (0 or 1).
        magic: i8,
    },
    /// A magic byte that no Kafka version writes.
    #[error("batch at byte {position}: unknown magic byte {magic}")]
    UnknownMagic {
        /// Byte position of the batch in the record set.
        position: usize,
        /// The magic byte.
        magic: i8,
    },
    /// A buffer given as one batch does not hold exactly one whole batch.
    #[error("not one whole batch: {len} bytes given, {expected} expected")]
    BadBatchFraming {
        /// Bytes given.
        len: usize,
        /// Bytes the header announces (or 61 when the header itself is cut).
        expected: usize,
    },
    /// The stored CRC-32C does not match the bytes.
    #[error(
        "batch at byte {position} (base offset {base_offset}): CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        /// Byte position of the batch in the record set it was split from (0 for a lone batch).
        position: usize,
        /// The batch's base offset.
        base_offset: i64,
        /// CRC stored in the header.
        stored: u32,
        /// CRC computed over bytes 21..end.
        computed: u32,
    },
    /// Attribute bits 0..3 name no codec.
    #[error(
        "batch at byte {position} (base offset {base_offset}): unknown compression codec id {codec}"
    )]
    UnknownCompression {
        /// Byte position of the batch in the record set.
        position: usize,
        /// The batch's base offset.
        base_offset: i64,
        /// The codec bits.
        codec: u8,
    },
    /// A codec rejected its input.
    #[error("{codec} decompression failed: {reason}")]
    Decompress {
        /// The codec.
        codec: Compression,
        /// What the codec reported.
        reason: String,
    },
    /// Decompressed data would exceed the configured cap.
    #[error("{codec} data expands past the cap of {cap} bytes")]
    DecompressedTooLarge {
        /// The codec.
        codec: Compression,
        /// The configured cap ([`crate::Limits::max_decompressed_bytes`]).
        cap: usize,
    },
    /// A codec failed to compress (only on internal encoder errors).
    #[error("{codec} compression failed: {reason}")]
    Compress {
        /// The codec.
        codec: Compression,
        /// What the codec reported.
        reason: String,
    },
    /// A record (or the records section) is malformed.
    #[error("record #{index} at byte {position} of the records section: {reason}")]
    InvalidRecord {
        /// Zero-based index of the record in the batch.
        index: usize,
        /// Byte position in the (decompressed) records section.
        position: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// `recordsCount` is negative or cannot fit in the records section.
    #[error("recordsCount {count} is impossible for a {len}-byte records section")]
    InvalidRecordCount {
        /// The header's `recordsCount`.
        count: i32,
        /// Bytes in the (decompressed) records section.
        len: usize,
    },
    /// Bytes remain after the declared number of records.
    #[error("{remaining} bytes remain after the last of {count} records")]
    TrailingBytes {
        /// Bytes left over.
        remaining: usize,
        /// Records read.
        count: usize,
    },
    /// A control batch's record key is not `version int16, type int16`.
    #[error("invalid control record: {reason}")]
    InvalidControlRecord {
        /// What is wrong.
        reason: &'static str,
    },
    /// Record offsets in a batch are not strictly increasing within `0..=lastOffsetDelta`.
    #[error(
        "record #{index}: offset delta {delta} out of order (previous {previous}, lastOffsetDelta {last_offset_delta})"
    )]
    OffsetDeltaOutOfOrder {
        /// Zero-based index of the record.
        index: usize,
        /// Its offset delta.
        delta: i32,
        /// The previous record's offset delta (-1 before the first).
        previous: i32,
        /// The header's `lastOffsetDelta`.
        last_offset_delta: i32,
    },
    /// A batch must hold at least one record.
    #[error("a batch needs at least one record")]
    EmptyBatch,
    /// A built batch would not fit the size limits.
    #[error("a single record needs a {size}-byte batch, above the limit of {limit} bytes")]
    RecordTooLarge {
        /// Size of the one-record batch.
        size: usize,
        /// The limit it had to fit.
        limit: usize,
    },
    /// A built batch would exceed what the v2 format can describe.
    #[error("batch too large for the v2 format: {reason}")]
    BatchOverflow {
        /// Which field overflowed.
        reason: &'static str,
    },
    /// A batch that [`crate::merge()`] must not merge (control or transactional).
    #[error("batch at base offset {base_offset} cannot be merged: {reason}")]
    NotMergeable {
        /// The batch's base offset.
        base_offset: i64,
        /// Why.
        reason: &'static str,
    },
    /// [`crate::merge()`] inputs are not in offset order.
    #[error(
        "batch at base offset {base_offset} starts before the previous batch ends (offset {expected_at_least})"
    )]
    MergeOutOfOrder {
        /// The batch's base offset.
        base_offset: i64,
        /// The offset after the previous batch's last one.
        expected_at_least: i64,
    },
    /// An error inside one batch, with the batch's identity.
    #[error("batch at base offset {base_offset}: {inner}")]
    Batch {
        /// The batch's base offset.
        base_offset: i64,
        /// What went wrong inside it.
        inner: Box<Error>,
    },
}

impl Error {
    /// The error without its [`Error::Batch`] context, for matching on the cause.
    pub fn root(&self) -> &Error {
        match self {
            Error::Batch { inner, .. } => inner.root(),
            e => e,
        }
    }

    /// Wraps an error about a batch's contents with that batch's base offset.
    pub(crate) fn in_batch(self, base_offset: i64) -> Error {
        Error::Batch {
            base_offset,
            inner: Box::new(self),
        }
    }
}
