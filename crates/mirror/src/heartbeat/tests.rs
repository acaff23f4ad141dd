use super::*;

#[test]
fn bytes_match_mm2_layout() {
    let hb = Heartbeat {
        source_alias: "us".into(),
        target_alias: "eu".into(),
        timestamp: 0x0102_0304_0506_0708,
    };
    let key: &[u8] = b"\x00\x02us\x00\x02eu";
    let value: &[u8] = b"\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08";
    assert_eq!(hb.encode_key(), key);
    assert_eq!(hb.encode_value(), value);
    assert_eq!(Heartbeat::decode(key, value), Ok(hb));
}

#[test]
fn garbage_does_not_decode() {
    assert!(Heartbeat::decode(b"\x00\x02us", b"\x00\x00").is_err());
    assert!(Heartbeat::decode(b"\x00\x02us\x00\x02eu", b"\x00\x00\x01").is_err());
}
