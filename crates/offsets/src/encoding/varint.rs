//! LEB128 varints, zigzag for signed distances, and a bounds-checked reader.
//!
//! strait-records has the same LEB128 writer (`put_uvarint`, shared with strait-client);
//! this crate keeps its own few lines rather than depend on the record crate and its
//! compression codecs, so that the offset maps stay a dependency-light crate of their own.

use super::DecodeError;
use crate::side::{MAX_OFFSET, Side};

/// Appends `value` as an unsigned LEB128 varint (1 to 10 bytes).
pub(crate) fn put(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Maps a signed distance to an unsigned one, small magnitudes to small values.
pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Cursor over a frame body. Every read is bounds-checked.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn byte(&mut self) -> Result<u8, DecodeError> {
        let (&first, rest) = self
            .buf
            .split_first()
            .ok_or(DecodeError::Truncated("missing byte"))?;
        self.buf = rest;
        Ok(first)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte().map_err(|_| DecodeError::Truncated("varint"))?;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may only carry the single remaining bit.
            if shift == 63 && bits > 1 {
                return Err(DecodeError::VarintOverflow);
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::VarintOverflow)
    }

    /// A varint that must be a valid offset or position.
    pub(crate) fn offset(&mut self) -> Result<u64, DecodeError> {
        let value = self.varint()?;
        if value > MAX_OFFSET {
            return Err(DecodeError::Malformed("offset out of range"));
        }
        Ok(value)
    }

    /// `base` moved by a zigzag-encoded distance; the result must be a valid offset.
    pub(crate) fn offset_from(&mut self, base: u64) -> Result<u64, DecodeError> {
        let distance = unzigzag(self.varint()?);
        base.checked_add_signed(distance)
            .filter(|value| *value <= MAX_OFFSET)
            .ok_or(DecodeError::Malformed("offset out of range"))
    }

    pub(crate) fn side(&mut self) -> Result<Side, DecodeError> {
        match self.byte()? {
            0 => Ok(Side::Source),
            1 => Ok(Side::Target),
            _ => Err(DecodeError::Malformed("unknown side")),
        }
    }

    /// A count, capped by `cap` and by what `min_bytes` per item allows in what remains.
    pub(crate) fn count(
        &mut self,
        what: &'static str,
        cap: usize,
        min_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let count = self.varint()?;
        let cap = cap.min(self.remaining() / min_bytes) as u64;
        if count > cap {
            return Err(DecodeError::TooMany { what, count, cap });
        }
        // Fits: `cap` came from a usize.
        Ok(count as usize)
    }

    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
}

pub(crate) fn put_side(buf: &mut Vec<u8>, side: Side) {
    buf.push(match side {
        Side::Source => 0,
        Side::Target => 1,
    });
}
