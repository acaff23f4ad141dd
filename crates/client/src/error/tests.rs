use super::*;

#[test]
fn predicates_and_display() {
    let e = Error::from_code(6)
        .unwrap()
        .broker(1)
        .topic("t")
        .partition(3);
    assert!(e.is_retriable());
    assert!(e.is_stale_metadata());
    assert_eq!(e.kafka_code(), Some(6));
    assert_eq!(e.partition_index(), Some(3));
    let s = e.to_string();
    assert!(
        s.contains("NotLeaderOrFollower") && s.contains("t-3"),
        "{s}"
    );
    assert!(Error::from_code(0).is_none());
    assert!(!Error::from_code(45).unwrap().is_retriable());
    assert!(Error::new(ErrorKind::ConnectionClosed).is_retriable());
}
