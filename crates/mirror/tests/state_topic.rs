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
