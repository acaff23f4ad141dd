//! The state topic read by several exactly-once writers (scale-out slots), on a real
//! Tansu broker: one slot's open transaction never hides another slot's newer committed
//! state, and an open transaction's own records never count.

mod control;

use control::Pair;
use strait_client::{TransactionalConfig, TransactionalProducer};
use strait_mirror::state::{self, PartitionState, StateWriter, ensure_state_topic};
use strait_offsets::OffsetMap;

/// A partition state whose map has replicated up to `next` source offsets.
fn at(next: u64) -> PartitionState {
    let mut map = OffsetMap::new();
    map.advance(next, next).expect("advance");
    PartitionState {
        topic_id: uuid::Uuid::nil(),
        target_topic: "source.orders".into(),
        snapshot: map.snapshot().bytes,
    }
}

#[tokio::test]
async fn one_slots_open_transaction_does_not_hide_another_slots_newer_commit() {
    let pair = Pair::start().await;
    let flow = pair.flow("");
    ensure_state_topic(&pair.target, &flow)
        .await
        .expect("state topic");
    let slot = |n: u32| {
        let target = pair.target.clone();
        async move {
            TransactionalProducer::new(
                target,
                TransactionalConfig::new(format!("state-test.slot-{n}")),
            )
            .await
            .expect("init producer")
        }
    };
    let (one, two) = (slot(1).await, slot(2).await);
    let mut w1 = StateWriter::new(pair.target.clone(), &flow).in_transactions(one.clone());
    let mut w2 = StateWriter::new(pair.target.clone(), &flow).in_transactions(two.clone());

    // Slot 2 commits partition 1 at 10.
    two.begin().expect("begin");
    w2.write(&[(("orders".into(), 1), at(10))])
        .await
        .expect("write");
    two.commit().await.expect("commit");
    // Slot 1 writes partition 0 in a transaction it leaves open (its owner was killed).
    one.begin().expect("begin");
    w1.write(&[(("orders".into(), 0), at(5))])
        .await
        .expect("write");
    // Slot 2 commits partition 1 at 20, after slot 1's open records.
    two.begin().expect("begin");
    w2.write(&[(("orders".into(), 1), at(20))])
        .await
        .expect("write");
    two.commit().await.expect("commit");

    let saved = state::read_state(&pair.target, &flow).await.expect("read");
    assert_eq!(
        saved.get(&("orders".into(), 1)),
        Some(&at(20)),
        "slot 2's newest commit is read past slot 1's open transaction"
    );
    assert_eq!(
        saved.get(&("orders".into(), 0)),
        None,
        "an open transaction's records never count"
    );
    one.abort().await.expect("abort");
}

#[tokio::test]
async fn a_state_tail_reads_on_from_its_place_and_gives_what_a_whole_read_gives() {
    let pair = Pair::start().await;
    let flow = pair.flow("");
    ensure_state_topic(&pair.target, &flow)
        .await
        .expect("state topic");
    let key = |p: i32| ("orders".to_owned(), p);
    let mut plain = StateWriter::new(pair.target.clone(), &flow);
    let mut tail = state::StateTail::new(&flow);
    let whole = || state::read_state(&pair.target, &flow);

    plain
        .write(&[(key(0), at(5)), (key(1), at(7))])
        .await
        .expect("write");
    let (first, _) = tail.read(&pair.target, &flow).await.expect("read");
    assert_eq!(first, whole().await.expect("whole read"));
    assert_eq!(first.len(), 2);
    assert_eq!(tail.records_read(), 2);

    // A transaction open at the end of one read is taken by the next, once committed.
    let slot = TransactionalProducer::new(
        pair.target.clone(),
        TransactionalConfig::new("state-tail-test.slot-0"),
    )
    .await
    .expect("init producer");
    let mut in_txn = StateWriter::new(pair.target.clone(), &flow).in_transactions(slot.clone());
    slot.begin().expect("begin");
    in_txn.write(&[(key(2), at(9))]).await.expect("write");
    let (second, _) = tail.read(&pair.target, &flow).await.expect("read");
    assert_eq!(second.get(&key(2)), None, "open: not counted yet");
    assert_eq!(second, whole().await.expect("whole read"));
    slot.commit().await.expect("commit");
    plain.write(&[(key(0), at(15))]).await.expect("write");
    let (third, _) = tail.read(&pair.target, &flow).await.expect("read");
    assert_eq!(third.get(&key(2)), Some(&at(9)));
    assert_eq!(third.get(&key(0)), Some(&at(15)));
    assert_eq!(third, whole().await.expect("whole read"));
    // Each record once: whole reads would have taken 2 + 2 + 4.
    assert_eq!(tail.records_read(), 4, "only what was appended was read");

    // The topic re-created (a broker that came back empty): the tail starts over.
    pair.target
        .delete_topics(
            &[flow.state_topic.as_str()],
            std::time::Duration::from_secs(30),
        )
        .await
        .expect("delete");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let meta = pair
            .target
            .metadata(Some(&[flow.state_topic.as_str()]))
            .await
            .expect("metadata");
        if !meta.topics.contains_key(&flow.state_topic) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the topic is gone");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (gone, _) = tail.read(&pair.target, &flow).await.expect("read");
    assert!(
        gone.is_empty(),
        "a missing topic is an empty state: {gone:?}"
    );
    ensure_state_topic(&pair.target, &flow)
        .await
        .expect("state topic again");
    plain.write(&[(key(1), at(1))]).await.expect("write");
    let (again, _) = tail.read(&pair.target, &flow).await.expect("read");
    assert_eq!(again, whole().await.expect("whole read"));
    assert_eq!(again.len(), 1, "{again:?}");
}
