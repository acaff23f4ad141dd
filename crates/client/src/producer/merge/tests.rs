use super::*;

fn asked() -> bool {
    panic!("the backlog is asked only when the other rules do not decide")
}

#[test]
fn idle_broker_sends_at_once() {
    assert!(send_now(0, 1, 0, asked));
}

#[test]
fn as_large_as_the_largest_outstanding_request_sends_at_once() {
    assert!(send_now(3, 6, 6, asked));
    assert!(send_now(3, 7, 6, asked));
}

#[test]
fn live_partitions_never_wait() {
    assert!(send_now(2, 1, 6, || false));
}

#[test]
fn otherwise_backlogged_partitions_wait_for_the_next_response() {
    assert!(!send_now(1, 2, 6, || true));
    assert!(!send_now(4, 5, 6, || true));
}
