//! The subset of Kafka's `org.apache.kafka.common.protocol.types` binary encoding that
//! MM2's `heartbeats` and `checkpoints` records use: big-endian `INT16`/`INT32`/`INT64`
//! and non-nullable `STRING` (an `INT16` byte length, then UTF-8).

use std::fmt;

/// Why bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// Appends fields to a buffer.
#[derive(Debug, Default)]
pub(crate) struct Writer(Vec<u8>);

impl Writer {
    pub(crate) fn i16(mut self, v: i16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(crate) fn i32(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(crate) fn i64(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A `STRING`. Java's `Type.STRING` throws past `i16::MAX` bytes; names that long
    /// cannot exist in Kafka (group ids and topics are far shorter), so we truncate at a
    /// character boundary rather than fail — never reached in practice.
    pub(crate) fn string(self, s: &str) -> Self {
        let mut end = s.len().min(i16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut w = self.i16(end as i16);
        w.0.extend_from_slice(&s.as_bytes()[..end]);
        w
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads fields from a byte slice, failing on short input.
#[derive(Debug)]
pub(crate) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes)
    }

    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], WireError> {
        let Some((head, rest)) = self.0.split_first_chunk::<N>() else {
            return Err(WireError(format!("truncated {what}")));
        };
        self.0 = rest;
        Ok(*head)
    }

    pub(crate) fn i16(&mut self, what: &str) -> Result<i16, WireError> {
        self.take::<2>(what).map(i16::from_be_bytes)
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, WireError> {
        self.take::<4>(what).map(i32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, WireError> {
        self.take::<8>(what).map(i64::from_be_bytes)
    }

    pub(crate) fn string(&mut self, what: &str) -> Result<String, WireError> {
        let len = self.i16(what)?;
        let len = usize::try_from(len)
            .map_err(|_| WireError(format!("{what}: negative length {len} (null STRING)")))?;
        if self.0.len() < len {
            return Err(WireError(format!("truncated {what}")));
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        String::from_utf8(s.to_vec()).map_err(|_| WireError(format!("{what}: invalid UTF-8")))
    }

    /// Java's `Schema.read` ignores trailing bytes; so do we, for forward compatibility
    /// with later value versions that append fields.
    pub(crate) fn version(&mut self, supported: i16) -> Result<i16, WireError> {
        let v = self.i16("version")?;
        if v < 0 || v > supported {
            return Err(WireError(format!("unsupported version {v}")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests;
