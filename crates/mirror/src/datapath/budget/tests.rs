//! Tests of the in-flight budget (`budget.rs`).

use super::*;
use std::time::Duration;

/// The account label of partition 0 of topic `topic` in flow `f`.
fn label(topic: &str) -> Label {
    Label {
        flow: Arc::from("f"),
        topic: Arc::from(topic),
        partition: 0,
    }
}

/// Asserts that `waiter` still waits after 20 ms (`why`), runs `release`, and returns
/// what the waiter then finishes with.
async fn waits_until<T>(
    waiter: tokio::task::JoinHandle<T>,
    why: &str,
    release: impl FnOnce(),
) -> T {
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!waiter.is_finished(), "{why}");
    release();
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("woken")
        .expect("task")
}

#[tokio::test]
async fn reserve_waits_until_bytes_are_returned() {
    let b = Budget::new(100);
    let r1 = b.reserve(60).await;
    assert_eq!(b.used(), 60);
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.reserve(50).await });
    let r2 = waits_until(waiter, "only 40 bytes are left", || drop(r1)).await;
    assert_eq!(b.used(), 50);
    drop(r2);
    assert_eq!(b.used(), 0);
}

#[tokio::test]
async fn try_reserve_never_waits() {
    let b = Budget::new(100);
    let r1 = b.try_reserve(60).expect("room");
    assert!(b.try_reserve(50).is_none(), "only 40 bytes are left");
    assert!(b.try_reserve(1_000).is_none(), "larger than the budget");
    let r2 = b.try_reserve(40).expect("room");
    assert_eq!(b.used(), 100);
    drop((r1, r2));
    assert_eq!(b.used(), 0);
}

#[tokio::test]
async fn reserve_free_takes_what_is_free_up_to_its_max_and_never_waits() {
    let b = Budget::new(100);
    let r1 = b.reserve_free(60);
    assert_eq!(r1.bytes(), 60);
    let r2 = b.reserve_free(60);
    assert_eq!(r2.bytes(), 40, "only 40 bytes were left");
    assert_eq!(b.reserve_free(10).bytes(), 0, "none left: nothing, at once");
    assert_eq!(b.used(), 100);
    drop((r1, r2));
    assert_eq!(b.used(), 0);
}

#[tokio::test]
async fn a_share_grows_at_once_when_the_rest_is_free() {
    let b = Budget::new(100);
    let share = b.try_reserve(30).expect("room");
    let grown = tokio::time::timeout(Duration::from_secs(1), b.grow(share, 70))
        .await
        .expect("the rest was free");
    assert_eq!((grown.bytes(), b.used()), (70, 70));
}

#[tokio::test]
async fn a_response_larger_than_the_budget_minus_its_own_share_is_not_waited_for_forever() {
    // The hang this rule came from: a 1 MiB budget, a fetch that reserved 544 KiB, a
    // response of more than the whole budget; waiting for the rest beside its own share
    // waited for bytes it held itself.
    let b = Budget::new(100);
    let mut up = b.reserve_response(50, 50).await;
    let share = up.take(50);
    let grown = tokio::time::timeout(Duration::from_secs(1), b.grow(share, 150))
        .await
        .expect("not waiting for its own bytes");
    assert_eq!(grown.bytes(), 100, "the whole budget, no more");
    drop((up, grown));
    assert_eq!(b.used(), 0);
}

#[tokio::test]
async fn growing_never_waits_while_holding_part_of_the_budget() {
    // Two fetchers each hold part of what both need (60 + 30 of 100; 90 and 70 wanted).
    // Waiting for the rest while holding its part, each would wait for the other forever;
    // each lets go of its part instead, and both grow, one after the other.
    let b = Budget::new(100);
    let a = b.try_reserve(60).expect("room");
    let other = b.try_reserve(30).expect("room");
    let b2 = b.clone();
    let first = tokio::spawn(async move { b2.grow(a, 90).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(b.used(), 30, "the waiter let go of its 60 bytes");
    let b3 = b.clone();
    let second = tokio::spawn(async move { b3.grow(other, 70).await });
    let a = tokio::time::timeout(Duration::from_secs(1), first)
        .await
        .expect("the first grows once the second let go")
        .expect("task");
    assert_eq!((a.bytes(), b.used()), (90, 90));
    let other = waits_until(second, "10 bytes are free, it wants 70", || drop(a)).await;
    assert_eq!((other.bytes(), b.used()), (70, 70));
}

#[tokio::test]
async fn up_front_reservations_are_shared_out_and_the_rest_returned() {
    let b = Budget::new(100);
    let other = b.reserve(30).await;
    let mut upfront = b.reserve_share(10, 1_000).await;
    assert_eq!(upfront.bytes(), 40, "the minimum and half of the 60 left");
    assert_eq!(b.used(), 70);
    let a = upfront.take(25);
    let c = upfront.take(100);
    assert_eq!((a.bytes(), c.bytes(), upfront.bytes()), (25, 15, 0));
    drop(upfront);
    assert_eq!(b.used(), 70, "shares are still held");
    drop((a, other));
    assert_eq!(b.used(), 15);
    let mut merged = b.reserve(5).await;
    merged.absorb(c);
    assert_eq!(merged.bytes(), 20);
    let capped = b.reserve_share(1, 10).await;
    assert_eq!(capped.bytes(), 10, "never more than the maximum");
    drop(capped);
    drop(merged);
    assert_eq!(b.used(), 0);
    assert!(b.try_reserve(100).is_some(), "every permit came back");
}

#[tokio::test]
async fn reserve_share_waits_for_its_minimum() {
    let b = Budget::new(100);
    let r1 = b.reserve(95).await;
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.reserve_share(20, 60).await });
    let r = waits_until(waiter, "only 5 bytes are free", || drop(r1)).await;
    assert_eq!(r.bytes(), 60, "20, then half of the 80 left, capped at 60");
}

/// One fetch round of a fetcher: reserves room, and hands each partition that may
/// fetch `chunk` bytes of it (as `deliver` does); the rest goes back.
async fn fetch_round(b: &Budget, shares: &[&Share], chunk: usize) -> Vec<Option<Reservation>> {
    let wanted: Vec<bool> = shares.iter().map(|s| b.may_fetch(s, chunk)).collect();
    let n = wanted.iter().filter(|w| **w).count();
    let mut upfront = b.reserve_share(chunk, chunk * n.max(1)).await;
    shares
        .iter()
        .zip(wanted)
        .map(|(s, w)| w.then(|| upfront.take_for(chunk, s)))
        .collect()
}

#[tokio::test]
async fn a_partition_whose_target_never_acknowledges_holds_at_most_its_share() {
    // 4 partitions, a 64-byte budget, 4 bytes per fetch. Partition 0's target never
    // acknowledges (its reservations are kept forever); the others' are returned at
    // once. The healthy ones must keep getting room, and the stuck one stays within
    // its quota: at most half the budget (rule 3) plus one fetch.
    let b = Budget::new(64);
    let shares: Vec<Share> = (0..4)
        .map(|i| b.register(label(&format!("p{i}"))))
        .collect();
    let refs: Vec<&Share> = shares.iter().collect();
    let mut stuck = Vec::new();
    let mut healthy_fetches = [0u32; 3];
    for _ in 0..100 {
        let round = tokio::time::timeout(Duration::from_secs(1), fetch_round(&b, &refs, 4))
            .await
            .expect("a fetch round never waits for the stuck partition's bytes");
        for (i, r) in round.into_iter().enumerate() {
            match (i, r) {
                (0, Some(r)) => stuck.push(r),
                (i, Some(_)) => healthy_fetches[i - 1] += 1,
                (_, None) => {}
            }
        }
    }
    assert_eq!(
        healthy_fetches, [100; 3],
        "the healthy partitions fetched every round"
    );
    assert!(
        shares[0].outstanding() <= 64 / 2 + 4,
        "{}",
        shares[0].outstanding()
    );
    assert!(shares[0].outstanding() >= 16, "it had its fair share");
    assert_eq!(b.used(), shares[0].outstanding());
    // Its target comes back: everything is returned and it is fetched again.
    stuck.clear();
    assert_eq!(shares[0].outstanding(), 0);
    assert!(b.may_fetch(&shares[0], 4));
}

#[test]
fn held_bytes_are_not_in_flight_and_count_process_wide() {
    let b = Budget::new(100);
    let (a, c) = (b.register(label("a")), b.register(label("c")));
    let mut up = b.try_reserve(60).expect("room");
    let ra = up.take_for(40, &a);
    let rc = up.take_for(20, &c);
    a.set_held(30, Some((7, 100)));
    assert_eq!((a.outstanding(), a.in_flight(), a.held()), (40, 10, 30));
    assert!(b.check_held(&a).is_ok(), "30 of the 50 allowed");
    c.set_held(20, Some((8, 5)));
    assert!(b.check_held(&c).is_ok(), "50 of the 50 allowed");
    c.set_held(25, Some((8, 5)));
    // 55 > 50: c checks, but a holds the most: a is told through its feed.
    assert!(b.check_held(&c).is_ok());
    assert!(
        a.take_nudge() && !a.take_nudge(),
        "the fetcher is told once"
    );
    let why = a.take_eviction().expect("a holds the most");
    assert!(why.contains("flow f: a/0 holds 30 bytes"), "{why}");
    assert!(
        why.contains("producer id 7 open since source offset 100"),
        "{why}"
    );
    assert!(why.contains("55 bytes"), "{why}");
    assert!(c.take_eviction().is_none() && !c.take_nudge());
    assert!(a.take_eviction().is_none(), "taken");
    let oldest = b.oldest_held().expect("open");
    assert_eq!(
        (oldest.producer_id, oldest.first_offset),
        (7, 100),
        "seen first"
    );
    // a fails and goes: its held bytes leave the sum.
    drop((ra, a));
    assert_eq!(b.held(), 25);
    assert!(b.check_held(&c).is_ok());
    c.set_held(60, None);
    let err = b.check_held(&c).expect_err("c alone over the limit");
    assert!(err.contains("flow f: c/0 holds 60 bytes"), "{err}");
    drop(rc);
    assert_eq!(c.outstanding(), 0);
}

#[test]
fn absorbed_and_merged_reservations_keep_counting_for_their_partition() {
    let b = Budget::new(100);
    let s = b.register(label("s"));
    let mut up = b.try_reserve(10).expect("room");
    let mut mine = up.take_for(10, &s);
    mine.absorb(b.try_reserve(5).expect("room"));
    assert_eq!(s.outstanding(), 15);
    let merged = b.try_reserve_like(8, &mine).expect("room");
    assert_eq!(s.outstanding(), 23);
    drop(mine);
    assert_eq!(s.outstanding(), 8);
    drop(merged);
    assert_eq!((s.outstanding(), b.used()), (0, 0));
}

#[tokio::test]
async fn oversized_and_empty_reservations_cannot_deadlock() {
    let b = Budget::new(100);
    let big = b.reserve(1_000).await;
    assert_eq!(b.used(), 100, "capped at the budget");
    drop(big);
    let empty = b.reserve(0).await;
    assert_eq!(b.used(), 0);
    drop(empty);
    assert_eq!(b.total(), 100);
}

/// A fetch's reservation for one response, at once (the tests' budgets have the room).
async fn response(b: &Budget, bytes: usize) -> Reservation {
    tokio::time::timeout(Duration::from_secs(1), b.reserve_response(bytes, bytes))
        .await
        .expect("room for the fetch")
}

#[tokio::test]
async fn rule7_a_returned_share_stays_counted_while_its_response_is_alive() {
    let b = Budget::new(1_000);
    let (p, q) = (b.register(label("p")), b.register(label("q")));
    let mut up = response(&b, 300).await;
    let fast = up.take_for(100, &p);
    let straggler = up.take_for(50, &q);
    drop(up);
    assert_eq!(
        b.used(),
        150,
        "the fetch's unused remainder went back at once"
    );
    drop(fast);
    assert_eq!(p.outstanding(), 0, "the partition's own quota is free");
    assert_eq!(b.residue(), 100, "its bytes are still resident: counted");
    assert_eq!(b.used(), 150);
    // Rule 9: the response's last share frees the residue with it.
    drop(straggler);
    assert_eq!((b.residue(), b.used()), (0, 0));
    assert!(b.try_reserve(1_000).is_some(), "every permit came back");
}

#[tokio::test]
async fn rule8_residue_beyond_its_limit_is_freed_at_once() {
    // Budget 160: residue limit 70 (7/16).
    let b = Budget::new(160);
    let s = b.register(label("s"));
    let mut first = response(&b, 80).await;
    let (a, keep_a) = (first.take_for(60, &s), first.take_for(20, &s));
    drop(first);
    let mut second = response(&b, 80).await;
    let (c, keep_c) = (second.take_for(30, &s), second.take_for(10, &s));
    drop(second);
    drop(a);
    assert_eq!(b.residue(), 60);
    drop(c);
    assert_eq!(b.residue(), 60, "30 more would pass 70: freed at once");
    assert_eq!(b.used(), 60 + 20 + 10);
    drop((keep_a, keep_c));
    assert_eq!((b.residue(), b.used()), (0, 0));
}

#[tokio::test]
async fn rule9_the_last_share_of_a_response_frees_it_and_plain_reservations_never_linger() {
    let b = Budget::new(100);
    let s = b.register(label("s"));
    let mut up = response(&b, 40).await;
    let only = up.take_for(40, &s);
    drop(up);
    drop(only);
    assert_eq!(
        (b.residue(), b.used()),
        (0, 0),
        "nothing else held the response"
    );
    // Shares of a plain fetch reservation are freed when returned, as before.
    let mut plain = b.reserve_share(40, 40).await;
    let (x, y) = (plain.take_for(20, &s), plain.take_for(20, &s));
    drop((plain, x));
    assert_eq!((b.residue(), b.used()), (0, 20));
    drop(y);
}

/// Rules 6 and 8 together: a partition holds its transaction's bytes (up to half the
/// budget) while every response it was part of stays resident for it; the residue stops
/// at its limit, so once the other partitions' batches are acknowledged a fetch (which may
/// bring the marker) still finds its minimum room.
#[tokio::test]
async fn residue_never_starves_the_fetch_that_brings_a_marker() {
    let b = Budget::new(1_600);
    let min_room = 100; // a sixteenth
    let (txn, other) = (b.register(label("txn")), b.register(label("other")));
    let mut held = Vec::new();
    for _ in 0..40 {
        let mut up = response(&b, 60).await;
        // The transaction's slice stays (its marker has not come) ...
        held.push(up.take_for(20, &txn));
        txn.set_held(txn.outstanding(), Some((1, 0)));
        // ... the other partition's is sent and acknowledged.
        drop(up.take_for(40, &other));
    }
    assert_eq!(
        txn.held(),
        b.held_limit(),
        "the transaction holds half the budget"
    );
    assert!(b.check_held(&txn).is_ok());
    let limit = quota::residue_limit(b.total());
    assert!(
        b.residue() <= limit && b.residue() + 40 > limit,
        "residue {} stops at its limit {limit}",
        b.residue()
    );
    let fetch = tokio::time::timeout(
        Duration::from_secs(1),
        b.reserve_response(min_room, min_room),
    )
    .await
    .expect("the fetch that brings the marker is not starved");
    assert_eq!(fetch.bytes(), min_room);
    drop((fetch, held));
    txn.set_held(0, None);
    assert_eq!((b.residue(), b.used()), (0, 0));
}
