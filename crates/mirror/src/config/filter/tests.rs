use super::*;
use crate::config::defaults::{GROUP_EXCLUDES, TOPIC_EXCLUDES, owned};

#[test]
fn mm2_default_topic_excludes() {
    let f = NameFilter::exclude_only(&owned(TOPIC_EXCLUDES)).unwrap();
    for t in ["orders", "payments.v1", "internal-ish", "a.heartbeats"] {
        assert!(f.accepts(t), "{t}");
    }
    for t in [
        "__consumer_offsets",
        "__transaction_state",
        "connect-offsets.internal",
        "app-internal",
        "b.checkpoints.internal",
        "mm2-offset-syncs.b.internal",
        "mm2-status",
        "orders.replica",
        "strait-state.a-to-b.internal",
    ] {
        assert!(!f.accepts(t), "{t}");
    }
}

#[test]
fn patterns_match_whole_names_and_exclude_wins() {
    let f = NameFilter::new(&owned(&["orders.*", "pay"]), &owned(&["orders-test"])).unwrap();
    assert!(f.accepts("orders"));
    assert!(f.accepts("orders-prod"));
    assert!(!f.accepts("orders-test"));
    assert!(f.accepts("pay"));
    assert!(
        !f.accepts("payments"),
        "a pattern must match the whole name"
    );
    assert!(!f.accepts("my-orders"));
}

#[test]
fn mm2_default_group_excludes() {
    let f = NameFilter::exclude_only(&owned(GROUP_EXCLUDES)).unwrap();
    assert!(f.accepts("billing"));
    assert!(!f.accepts("console-consumer-1234"));
    assert!(!f.accepts("connect-sink"));
    assert!(!f.accepts("__internal"));
}
