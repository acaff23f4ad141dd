use super::*;

#[test]
fn a_member_key_round_trips_and_another_kind_is_refused() {
    let k = encode_member_key("strait-group.x-1234");
    assert_eq!(decode_member_key(&k).unwrap(), "strait-group.x-1234");
    assert!(decode_member_key(&[1, 0, 1, b'a']).is_err());
    assert!(decode_member_key(&k[..k.len() - 1]).is_err());
}
