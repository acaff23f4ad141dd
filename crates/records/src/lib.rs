//! Kafka v2 record batches over [`bytes::Bytes`]: split, validate, patch for forwarding,
//! re-encode, codecs. Pure: no I/O, no async.
//!
//! # The fast path
//!
//! A Fetch response's `records` for one partition is a slice of the response buffer.
//! [`split()`] walks it into [`Batch`]es — slices of that same buffer, never copies —
//! trimming a partial trailing batch (Fetch responses may end with one). Each batch's
//! 61-byte header is decoded into a [`BatchHeader`]. Then, per batch:
//!
//! 1. [`AbortedFilter`] / [`filter_aborted`] drops data of aborted transactions;
//! 2. [`Batch::classify`] says whether it can be forwarded as it is;
//! 3. [`Batch::verify_and_patch`] checks CRC-32C and produces a [`PatchedBatch`]: a new
//!    61-byte header (baseOffset 0, no transaction or LogAppendTime bits, our producer
//!    fields, a new CRC) plus the untouched payload slice, to be written with vectored I/O.
//!    The payload is read once and never copied or decompressed.
//!
//! ```
//! use bytes::Bytes;
//! use strait_records::{BatchBuilder, Class, Compression, Limits, ProducerStamp, split};
//!
//! // A record set as a broker would return it (here: one batch we build ourselves).
//! let mut builder = BatchBuilder::new(Compression::Lz4);
//! builder.push(1_700_000_000_000, Some(b"key"), Some(b"value"), &[])?;
//! let records: Bytes = builder.build()?.into_bytes();
//!
//! let split = split(records.clone(), &Limits::default())?;
//! assert_eq!(split.trimmed, 0);
//! for batch in &split.batches {
//!     assert_eq!(batch.classify(1 << 20), Class::Forward);
//!     let patched = batch.verify_and_patch(ProducerStamp::NONE)?;
//!     // The payload is the very bytes of the fetched buffer.
//!     assert_eq!(patched.payload().as_ptr(), records[61..].as_ptr());
//! }
//! # Ok::<(), strait_records::Error>(())
//! ```
//!
//! # The slow path
//!
//! [`Batch::records`] decodes the records of a batch of any codec (bounded by
//! [`Limits::max_decompressed_bytes`]); [`BatchBuilder`] writes new batches; and
//! [`Batch::reencode`] rewrites a batch that compaction left with gaps (or that is too
//! large for the target) with dense offset deltas, reporting the source offset of every
//! record so the offset map stays exact.
//!
//! # Coalescing
//!
//! [`merge()`] turns many small consecutive batches of one partition into fewer large ones
//! (up to [`MergeOptions::max_bytes`]), for links where round trips, not bytes, are the
//! limit. Uncompressed records are rewritten without decoding keys, values or headers;
//! compressed batches are left alone or recompressed ([`CompressedPolicy`]). Each merged
//! batch reports the source offset of every record as runs ([`SourceOffsets`]). Its buffer
//! can come from a [`BufferPool`] and go back to it once the batch is dropped, so that the
//! allocator does not return and re-fault those pages for every merged batch; and since
//! this crate computed its CRC, [`Batch::verify_and_patch`] does not read it again.
//!
//! # Modules
//!
//! - `split`: record set → batches, [`Limits`]; `header`: the 61-byte header; `codec`: the
//!   codec ids ([`Compression`]);
//! - `patch`: header rewrite and CRC for forwarding; `crc`: the CRC update that avoids a
//!   second pass over the payload;
//! - `classify`: forward / drop / re-encode; `aborted`: aborted transactions from a Fetch
//!   response's list; `txn`: holding transactional data until its marker decides it;
//! - `record`: the record codec; `varint`: bounded zig-zag varints; `decode`: records of a
//!   batch, control records; `builder` and `reencode`: writing batches; `merge`: coalescing
//!   consecutive batches; `pool`: reusing merged batches' buffers; `lean`: queues that
//!   give back their memory once drained ([`push_lean`]);
//! - [`compression`]: gzip, snappy (xerial and raw), LZ4 frames, zstd;
//! - `error`: the one [`Error`] type; `test_support` (tests only): batches written by hand.
//!
//! Every length read from input is checked against the bytes that remain or a cap before
//! anything is allocated from it, and no input makes this crate panic.

mod aborted;
mod builder;
mod classify;
mod codec;
pub mod compression;
mod crc;
mod decode;
mod error;
mod header;
mod lean;
mod merge;
mod patch;
mod pool;
mod record;
mod reencode;
mod split;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
mod txn;
mod varint;

pub use aborted::{AbortedFilter, AbortedTransaction, TxnVerdict, filter_aborted};
pub use builder::BatchBuilder;
pub use classify::{Class, ReencodeReason};
pub use decode::{ControlRecordType, control_record_type};
pub use error::{Error, Result};
pub use header::{
    Attributes, BatchHeader, CRC_START, Compression, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2,
    MIN_BATCH_LENGTH, TimestampType,
};
pub use lean::push_lean;
pub use merge::{CompressedPolicy, MergeOptions, Merged, OffsetRun, SourceOffsets, merge};
pub use patch::{PatchedBatch, ProducerStamp};
pub use pool::BufferPool;
pub use record::{Header, Record, Records};
pub use reencode::{ReencodeOptions, Reencoded};
pub use split::{Batch, Batches, Limits, Split, split};
pub use txn::{Resolved, SkipReason, TxnResolver};
pub use varint::put_unsigned as put_uvarint;
