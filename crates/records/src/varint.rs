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
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let mut out = Vec::new();
        write_varint(&mut out, -1);
        assert_eq!(out, [0x01]);
        out.clear();
        write_varint(&mut out, 1);
        assert_eq!(out, [0x02]);
        out.clear();
        write_varint(&mut out, 300);
        assert_eq!(out, [0xd8, 0x04]);
        assert_eq!(read_varint(&[0xd8, 0x04]), Ok((300, 2)));
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f]),
            Ok((i32::MIN, 5))
        );
    }

    #[test]
    fn bounds() {
        assert_eq!(read_varint(&[]), Err(VarintError::Truncated));
        assert_eq!(read_varint(&[0x80, 0x80]), Err(VarintError::Truncated));
        // A sixth byte, or high bits in the fifth, do not fit 32 bits.
        assert_eq!(
            read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            Err(VarintError::Overflow)
        );
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f]),
            Err(VarintError::Overflow)
        );
        assert_eq!(read_varlong(&[0xff; 10]), Err(VarintError::Overflow));
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(read_varlong(&max), Ok((i64::MIN, 10)));
    }

    proptest! {
        #[test]
        fn varint_round_trip(v in any::<i32>()) {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_len(v));
            prop_assert_eq!(read_varint(&out), Ok((v, out.len())));
        }

        #[test]
        fn varlong_round_trip(v in any::<i64>()) {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            prop_assert_eq!(out.len(), varlong_len(v));
            prop_assert_eq!(read_varlong(&out), Ok((v, out.len())));
        }

        #[test]
        fn no_panic(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let _ = read_varint(&bytes);
            let _ = read_varlong(&bytes);
        }
    }
}
