//! The fetchers' pure decisions: partition limits, partial batches, the topic-id pause.

use super::broker::{Partial, beyond_budget, partial, partition_limit};
use super::*;

#[test]
fn a_partial_batch_doubles_the_partition_limit_within_the_room() {
    assert_eq!(partition_limit(1 << 20, 0, 8 << 20), 1 << 20);
    assert_eq!(partition_limit(1 << 20, 1, 8 << 20), 2 << 20);
    assert_eq!(partition_limit(1 << 20, 3, 8 << 20), 8 << 20);
    assert_eq!(
        partition_limit(1 << 20, 9, 8 << 20),
        8 << 20,
        "capped by the room"
    );
    assert_eq!(
        partition_limit(1 << 20, 40, i32::MAX),
        i32::MAX,
        "no overflow"
    );
    assert_eq!(
        partition_limit(1 << 20, 0, 1),
        1 << 20,
        "never below the configured limit"
    );
}

fn feed(id: Uuid) -> Arc<PartitionFeed> {
    let metrics = crate::metrics::Metrics::new().partition("f", "t", 0);
    let feed = PartitionFeed::new("t".into(), 0, 100, 4, metrics);
    feed.set_topic_id(id);
    feed
}

const A: Uuid = Uuid::from_bytes([1; 16]);
const B: Uuid = Uuid::from_bytes([2; 16]);

#[test]
fn a_recreated_topic_pauses_the_feed_and_is_reported_once_per_new_id() {
    let f = feed(A);
    assert_eq!(f.pause_if_recreated(Some(A)), None);
    assert_eq!(
        f.pause_if_recreated(None),
        None,
        "gone: the topic refresh decides"
    );
    assert!(!f.with_cursor(|c| c.paused));
    assert_eq!(f.pause_if_recreated(Some(B)), Some((A, B)));
    assert!(
        f.with_cursor(|c| c.paused),
        "nothing of the new topic is fetched"
    );
    // Unpaused by another reposition: paused again, not reported again.
    f.with_cursor(|c| c.paused = false);
    assert_eq!(f.pause_if_recreated(Some(B)), None);
    assert!(f.with_cursor(|c| c.paused));
    // The flow moved the feed to the new id: nothing to say any more.
    f.set_topic_id(B);
    f.with_cursor(|c| c.paused = false);
    assert_eq!(f.pause_if_recreated(Some(B)), None);
    assert!(!f.with_cursor(|c| c.paused));
}

#[test]
fn a_feed_without_a_topic_id_is_never_paused_for_one() {
    let f = feed(Uuid::nil());
    assert_eq!(f.pause_if_recreated(Some(B)), None);
    assert!(!f.with_cursor(|c| c.paused));
}

#[test]
fn a_batch_larger_than_the_whole_budget_is_a_clear_error_not_a_loop() {
    let mut head = vec![0u8; 12];
    head[8..12].copy_from_slice(&(100_000_000i32).to_be_bytes());
    assert_eq!(partial(&head, 24 << 20), Partial::TooLarge(100_000_012));
    head[8..12].copy_from_slice(&(3_000_000i32).to_be_bytes());
    assert_eq!(partial(&head, 24 << 20), Partial::Grow);
    // Fewer than 12 bytes: the length is unknown yet; ask for more.
    assert_eq!(partial(&head[..5], 24 << 20), Partial::Grow);
    // A negative length is the split's error to report; no loop either way.
    head[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(partial(&head, 24 << 20), Partial::Grow);
}

#[test]
fn a_whole_batch_larger_than_the_budget_is_a_clear_error_not_a_wait_for_room_that_never_comes() {
    // Kafka sends a first batch whole past the fetch's limit (KIP-74): 3 MB against 2 MiB.
    let mut batch = vec![0u8; 3_000_012];
    batch[8..12].copy_from_slice(&(3_000_000i32).to_be_bytes());
    assert_eq!(beyond_budget(&batch, 2 << 20), Some(3_000_012));
    // It fits: delivered, the missing room reserved as before.
    assert_eq!(beyond_budget(&batch, 4 << 20), None);
}
