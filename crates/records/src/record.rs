//! The record codec: one record inside a batch's (decompressed) records section.
//!
//! ```text
//! length varint · attributes int8 · timestampDelta varlong · offsetDelta varint
//! keyLength varint (-1 = null) · key · valueLength varint (-1 = null) · value
//! headerCount varint · [headerKeyLength varint · headerKey · headerValueLength varint · value]
//! ```

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::varint::{
    read_varint, read_varlong, varint_len, varlong_len, write_varint, write_varlong,
};

/// Smallest encoded record: length, attributes, timestampDelta, offsetDelta, key and value
/// lengths and header count, one byte each.
pub(crate) const MIN_RECORD_LEN: usize = 7;

/// One record header. The key is kept as bytes so re-encoding is exact; Kafka clients
/// write UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header name (UTF-8 by convention).
    pub key: Bytes,
    /// Header value; `None` is a null value, distinct from an empty one.
    pub value: Option<Bytes>,
}

/// One record, with absolute offset and timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// `baseOffset + offsetDelta`.
    pub offset: i64,
    /// `baseTimestamp + timestampDelta`: the timestamp stored with the record. For a
    /// LogAppendTime batch consumers show [`crate::BatchHeader::log_append_time`] instead.
    pub timestamp: i64,
    /// Key; `None` is null, distinct from empty.
    pub key: Option<Bytes>,
    /// Value; `None` is null (a tombstone), distinct from empty.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

/// A cursor over a records section that reports failures with their position.
struct Cursor<'a> {
    data: &'a Bytes,
    pos: usize,
    end: usize,
    index: usize,
}

impl Cursor<'_> {
    fn fail(&self, reason: &'static str) -> Error {
        Error::InvalidRecord {
            index: self.index,
            position: self.pos,
            reason,
        }
    }

    fn rest(&self) -> &[u8] {
        &self.data[self.pos..self.end]
    }

    fn varint(&mut self) -> Result<i32> {
        let (v, n) = read_varint(self.rest()).map_err(|e| self.fail(e.reason()))?;
        self.pos += n;
        Ok(v)
    }

    fn varlong(&mut self) -> Result<i64> {
        let (v, n) = read_varlong(self.rest()).map_err(|e| self.fail(e.reason()))?;
        self.pos += n;
        Ok(v)
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .rest()
            .first()
            .ok_or_else(|| self.fail("truncated record"))?;
        self.pos += 1;
        Ok(b)
    }

    fn bytes(&mut self, len: usize, what: &'static str) -> Result<Bytes> {
        if len > self.end - self.pos {
            return Err(self.fail(what));
        }
        let b = self.data.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(b)
    }

    /// A `varint` length then that many bytes; -1 is null.
    fn nullable(&mut self, what: &'static str) -> Result<Option<Bytes>> {
        match self.varint()? {
            -1 => Ok(None),
            len if len < 0 => Err(self.fail("negative length")),
            len => self.bytes(len as usize, what).map(Some),
        }
    }
}

/// Iterator over the records of a records section; yields exactly `recordsCount` records,
/// then fails if bytes remain. After an error it returns `None`.
#[derive(Debug, Clone)]
pub struct Records {
    data: Bytes,
    pos: usize,
    index: usize,
    count: usize,
    base_offset: i64,
    base_timestamp: i64,
    done: bool,
}

impl Records {
    /// Iterates over `count` records in `data`, a decompressed records section. Errors are
    /// reported as [`Error::Batch`] naming `base_offset`.
    pub(crate) fn new(
        data: Bytes,
        count: i32,
        base_offset: i64,
        base_timestamp: i64,
    ) -> Result<Records> {
        // Each record takes at least MIN_RECORD_LEN bytes, so a larger count is a lie.
        let count = usize::try_from(count)
            .ok()
            .filter(|&c| c <= data.len() / MIN_RECORD_LEN)
            .ok_or(Error::InvalidRecordCount {
                count,
                len: data.len(),
            })
            .map_err(|e| e.in_batch(base_offset))?;
        Ok(Records {
            data,
            pos: 0,
            index: 0,
            count,
            base_offset,
            base_timestamp,
            done: false,
        })
    }

    /// Records not yet yielded (an upper bound once an error occurs).
    pub fn remaining(&self) -> usize {
        self.count - self.index
    }

    fn next_record(&mut self) -> Result<Option<(Record, i32)>> {
        if self.index == self.count {
            let remaining = self.data.len() - self.pos;
            if remaining != 0 {
                return Err(Error::TrailingBytes {
                    remaining,
                    count: self.count,
                });
            }
            return Ok(None);
        }
        let mut c = Cursor {
            data: &self.data,
            pos: self.pos,
            end: self.data.len(),
            index: self.index,
        };
        let len = c.varint()?;
        let len = usize::try_from(len).map_err(|_| c.fail("negative record length"))?;
        if len > c.end - c.pos {
            return Err(c.fail("record length exceeds the records section"));
        }
        c.end = c.pos + len;
        let _attributes = c.byte()?; // no record attribute bits are defined in v2
        let timestamp_delta = c.varlong()?;
        let offset_delta = c.varint()?;
        let key = c.nullable("key length exceeds the record")?;
        let value = c.nullable("value length exceeds the record")?;
        let header_count = c.varint()?;
        // A header takes at least two bytes; reject counts the record cannot hold before
        // reserving space for them.
        let header_count = usize::try_from(header_count)
            .ok()
            .filter(|&n| n <= (c.end - c.pos) / 2)
            .ok_or_else(|| c.fail("impossible header count"))?;
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let key_len = c.varint()?;
            let key_len =
                usize::try_from(key_len).map_err(|_| c.fail("negative header key length"))?;
            let key = c.bytes(key_len, "header key length exceeds the record")?;
            let value = c.nullable("header value length exceeds the record")?;
            headers.push(Header { key, value });
        }
        if c.pos != c.end {
            return Err(c.fail("record length does not match its fields"));
        }
        let offset = self
            .base_offset
            .checked_add(i64::from(offset_delta))
            .ok_or_else(|| c.fail("offset overflows"))?;
        self.pos = c.end;
        self.index += 1;
        Ok(Some((
            Record {
                offset,
                // Wrapping, as the Java client computes it.
                timestamp: self.base_timestamp.wrapping_add(timestamp_delta),
                key,
                value,
                headers,
            },
            offset_delta,
        )))
    }

    /// Like `next`, but also yields the record's offset delta.
    pub(crate) fn next_with_delta(&mut self) -> Option<Result<(Record, i32)>> {
        if self.done {
            return None;
        }
        let base_offset = self.base_offset;
        let item = self
            .next_record()
            .map_err(|e| e.in_batch(base_offset))
            .transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl Iterator for Records {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        self.next_with_delta().map(|r| r.map(|(record, _)| record))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            (0, Some(self.remaining()))
        }
    }
}

impl std::iter::FusedIterator for Records {}

fn nullable_len(b: Option<&[u8]>) -> usize {
    match b {
        None => varint_len(-1),
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

/// Appends one record. Lengths must fit an `i32` (the builder checks the batch size first).
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) -> Result<()> {
    let mut body = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    body += nullable_len(key) + nullable_len(value);
    body += varint_len(headers.len().try_into().map_err(|_| too_big())?);
    for h in headers {
        body += varint_len(h.key.len().try_into().map_err(|_| too_big())?) + h.key.len();
        body += nullable_len(h.value.as_deref());
    }
    let body_len: i32 = body.try_into().map_err(|_| too_big())?;
    out.reserve(varint_len(body_len) + body);
    write_varint(out, body_len);
    out.push(0); // attributes
    write_varlong(out, timestamp_delta);
    write_varint(out, offset_delta);
    write_nullable(out, key);
    write_nullable(out, value);
    write_varint(out, headers.len() as i32);
    for h in headers {
        write_varint(out, h.key.len() as i32);
        out.extend_from_slice(&h.key);
        write_nullable(out, h.value.as_deref());
    }
    Ok(())
}

fn too_big() -> Error {
    Error::BatchOverflow {
        reason: "record larger than 2 GiB",
    }
}

fn write_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

#[cfg(test)]
mod tests;
