use super::*;
use proptest::prelude::*;

#[test]
fn suggests_close_keys_only() {
    let keys = ["bootstrap_servers", "client_id", "request_timeout"];
    assert_eq!(
        did_you_mean("bootstrap_server", keys),
        Some("bootstrap_servers")
    );
    assert_eq!(
        did_you_mean("bootstrap.servers", keys),
        Some("bootstrap_servers")
    );
    assert_eq!(did_you_mean("clientid", keys), Some("client_id"));
    assert_eq!(did_you_mean("colour", keys), None);
}

#[test]
fn distance_basics() {
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
}

proptest! {
    #[test]
    fn distance_is_a_metric(a in "[a-c]{0,8}", b in "[a-c]{0,8}", c in "[a-c]{0,8}") {
        prop_assert_eq!(edit_distance(&a, &b), edit_distance(&b, &a));
        prop_assert_eq!(edit_distance(&a, &a), 0);
        prop_assert!(edit_distance(&a, &c) <= edit_distance(&a, &b) + edit_distance(&b, &c));
    }
}
