use super::*;

#[test]
fn round_trip_and_layout() {
    let b = Writer::default()
        .i16(1)
        .i32(-2)
        .i64(3)
        .string("hé")
        .finish();
    assert_eq!(
        b,
        [
            0, 1, 255, 255, 255, 254, 0, 0, 0, 0, 0, 0, 0, 3, 0, 3, b'h', 0xc3, 0xa9
        ]
    );
    let mut r = Reader::new(&b);
    assert_eq!(r.i16("a"), Ok(1));
    assert_eq!(r.i32("b"), Ok(-2));
    assert_eq!(r.i64("c"), Ok(3));
    assert_eq!(r.string("d"), Ok("hé".to_owned()));
}

#[test]
fn short_or_null_input_is_an_error() {
    assert!(Reader::new(&[0]).i16("x").is_err());
    assert!(Reader::new(&[0, 5, b'a']).string("x").is_err());
    assert!(Reader::new(&[255, 255]).string("x").is_err());
    assert!(Reader::new(&[0, 1, 0xff]).string("x").is_err());
    assert!(Reader::new(&[0, 1]).version(0).is_err());
}
