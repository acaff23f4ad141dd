//! CRC-32C helpers, including an O(1)-in-payload update for header patches.
//!
//! CRC-32C is linear: for two messages of equal length, `crc(X) ^ crc(Y)` equals the raw
//! (zero-init, no final xor) CRC of `X ^ Y`. A patch changes only the 40 header bytes
//! 21..61, so `crc(patched) = crc(original) ^ raw(diff ++ zeros(payload))`, and appending
//! zeros to a raw CRC is a multiplication by `x^(8·n)` modulo the polynomial. That lets the
//! hot path read the payload once (to verify) instead of twice (verify, then recompute).

/// CRC-32C polynomial, reflected.
const POLY: u32 = 0x82F6_3B78;

/// `a · b mod P` in the reflected representation (bit 31 is `x^0`).
const fn mul_mod(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                return p;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        if m == 0 {
            return p;
        }
    }
}

/// `SHIFT[k][v] = x^(8 · v · 256^k) mod P`: the operator appending `v · 256^k` zero bytes.
static SHIFT: [[u32; 256]; 4] = build_shift_table();

const fn build_shift_table() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    // x^8 (one zero byte): x^0 is bit 31, so x^8 is bit 23.
    let mut unit = 1u32 << 23;
    let mut k = 0;
    while k < 4 {
        t[k][0] = 1u32 << 31;
        let mut v = 1;
        while v < 256 {
            t[k][v] = mul_mod(t[k][v - 1], unit);
            v += 1;
        }
        // The next row's unit is 256 times this one's.
        unit = mul_mod(t[k][255], unit);
        k += 1;
    }
    t
}

/// `x^(8·n) mod P`, for `n < 2^32`.
fn zeros_operator(n: u32) -> u32 {
    let mut op = 1u32 << 31;
    for (k, row) in SHIFT.iter().enumerate() {
        let byte = (n >> (8 * k)) & 0xff;
        if byte != 0 {
            op = mul_mod(op, row[byte as usize]);
        }
    }
    op
}

/// Raw CRC-32C register update of `data` from a zero state, without final inversion.
fn raw_crc(data: &[u8]) -> u32 {
    // crc32c_append(c, d) inverts c on entry and the result on exit.
    !crc32c::crc32c_append(u32::MAX, data)
}

/// Bytes of the header covered by the CRC (21..61).
pub(crate) const HEAD_LEN: usize = crate::header::HEADER_LEN - crate::header::CRC_START;

/// The CRC of `new_head ++ tail` given the CRC of `old_head ++ tail`, where `tail_len` is
/// the length of the unchanged tail. `None` when the tail is 4 GiB or more (never for a
/// Kafka batch, whose length is an `i32`).
pub(crate) fn update_head(
    old_crc: u32,
    old_head: &[u8; HEAD_LEN],
    new_head: &[u8; HEAD_LEN],
    tail_len: usize,
) -> Option<u32> {
    let n = u32::try_from(tail_len).ok()?;
    let mut diff = [0u8; HEAD_LEN];
    for ((d, a), b) in diff.iter_mut().zip(old_head).zip(new_head) {
        *d = a ^ b;
    }
    Some(old_crc ^ mul_mod(raw_crc(&diff), zeros_operator(n)))
}

#[cfg(test)]
mod tests;
