//! Varints as Kafka uses them: zig-zag `varint`/`varlong` in records, unsigned LEB128 in
//! the flexible protocol versions' lengths ([`put_unsigned`] is public for strait-client's
//! hand-encoded requests: one writer for both). Decoded with bounds.

use bytes::BufMut;

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The input ended inside the varint.
    Truncated,
    /// More bytes, or higher bits, than the type holds.
    Overflow,
}

impl VarintError {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            VarintError::Truncated => "truncated varint",
            VarintError::Overflow => "varint overflows its type",
        }
    }
}

/// Reads an unsigned LEB128 value of at most `max_bits` bits; returns it and its length.
fn read_unsigned(buf: &[u8], max_bits: u32) -> Result<(u64, usize), VarintError> {
    let mut value = 0u64;
    let mut shift = 0u32;
    for (i, &b) in buf.iter().enumerate() {
        let bits = u64::from(b & 0x7f);
        // Reject bits past the type instead of dropping them silently.
        if shift >= max_bits || (max_bits - shift < 7 && bits >> (max_bits - shift) != 0) {
            return Err(VarintError::Overflow);
        }
        value |= bits << shift;
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
        shift += 7;
    }
    Err(VarintError::Truncated)
}

/// Reads a zig-zag `varint` (32-bit).
pub(crate) fn read_varint(buf: &[u8]) -> Result<(i32, usize), VarintError> {
    let (v, n) = read_unsigned(buf, 32)?;
    let v = v as u32;
    Ok((((v >> 1) as i32) ^ -((v & 1) as i32), n))
}

/// Reads a zig-zag `varlong` (64-bit).
pub(crate) fn read_varlong(buf: &[u8]) -> Result<(i64, usize), VarintError> {
    let (v, n) = read_unsigned(buf, 64)?;
    Ok((((v >> 1) as i64) ^ -((v & 1) as i64), n))
}

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
pub fn put_unsigned(out: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

fn write_unsigned(out: &mut Vec<u8>, v: u64) {
    put_unsigned(out, v);
}

/// Appends a zig-zag `varint`.
pub(crate) fn write_varint(out: &mut Vec<u8>, v: i32) {
    write_unsigned(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// Appends a zig-zag `varlong`.
pub(crate) fn write_varlong(out: &mut Vec<u8>, v: i64) {
    write_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Encoded length of a zig-zag `varint`.
pub(crate) fn varint_len(v: i32) -> usize {
    unsigned_len(u64::from(((v << 1) ^ (v >> 31)) as u32))
}

/// Encoded length of a zig-zag `varlong`.
pub(crate) fn varlong_len(v: i64) -> usize {
    unsigned_len(((v << 1) ^ (v >> 63)) as u64)
}

fn unsigned_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests;
