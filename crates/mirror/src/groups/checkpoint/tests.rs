use super::*;

fn sample() -> Checkpoint {
    Checkpoint {
        group: "g1".into(),
        topic: "src.orders".into(),
        partition: 2,
        upstream_offset: 300,
        downstream_offset: 257,
        metadata: "m".into(),
    }
}

#[test]
fn bytes_match_mm2_layout() {
    let c = sample();
    let key: &[u8] = b"\x00\x02g1\x00\x0asrc.orders\x00\x00\x00\x02";
    assert_eq!(c.encode_key(), key);
    let value: &[u8] = b"\x00\x00\
            \x00\x00\x00\x00\x00\x00\x01\x2c\
            \x00\x00\x00\x00\x00\x00\x01\x01\
            \x00\x01m";
    assert_eq!(c.encode_value(), value);
    assert_eq!(Checkpoint::decode(key, value), Ok(c));
}

#[test]
fn topic_name_follows_separator() {
    assert_eq!(checkpoints_topic("us", "."), "us.checkpoints.internal");
    assert_eq!(checkpoints_topic("us", "__"), "us__checkpoints.internal");
}

#[test]
fn garbage_does_not_decode() {
    let c = sample();
    assert!(Checkpoint::decode(&c.encode_key()[..5], &c.encode_value()).is_err());
    assert!(Checkpoint::decode(&c.encode_key(), &c.encode_value()[..10]).is_err());
    let mut v1 = c.encode_value();
    v1[1] = 1;
    assert!(
        Checkpoint::decode(&c.encode_key(), &v1).is_err(),
        "unknown version"
    );
}
