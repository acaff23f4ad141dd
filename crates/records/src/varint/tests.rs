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
