use super::*;

#[test]
fn request_layout() {
    let r = encode_request(0x01020304);
    assert_eq!(&r[..4], &((r.len() - 4) as i32).to_be_bytes());
    assert_eq!(&r[4..8], &[0, 18, 0, 0]);
    assert_eq!(&r[8..12], &[1, 2, 3, 4]);
    assert_eq!(&r[14..], CLIENT_ID);
}

#[test]
fn decodes_and_checks() {
    let mut body = vec![0, 0, 0, 7, 0, 0, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3];
    let v = decode_response(&body, 7).unwrap();
    assert_eq!(
        v,
        vec![ApiVersion {
            api_key: 18,
            min_version: 0,
            max_version: 3
        }]
    );
    assert!(decode_response(&body, 8).is_err());
    body[5] = 35; // error code 35
    assert!(decode_response(&body, 7).is_err());
    body[5] = 0;
    body[9] = 2; // claims 2 entries, has 1
    assert!(decode_response(&body, 7).is_err());
    assert!(decode_response(&body[..3], 7).is_err());
}
