//! Dropping the data of aborted transactions up to their marker.

use crate::test_support::{control_batch, hand_batch, one, raw, txn_batch};
use crate::*;

#[test]
fn aborted_transactions_are_dropped_up_to_their_marker() {
    // Producers 1 and 2 interleave; 1 aborts its first transaction, 2 commits.
    let batches: Vec<Batch> = [
        txn_batch(0, 1, 2),     // 0-1 p1 aborted
        txn_batch(2, 2, 2),     // 2-3 p2 committed
        control_batch(4, 1, 0), // p1 ABORT
        txn_batch(5, 1, 1),     // 5 p1 second txn, committed
        control_batch(6, 2, 1), // p2 COMMIT
        control_batch(7, 1, 1), // p1 COMMIT
        txn_batch(8, 1, 1),     // 8 p1 third txn, aborted
        control_batch(9, 1, 0), // p1 ABORT
    ]
    .into_iter()
    .map(one)
    .collect();
    let aborted = [
        AbortedTransaction {
            producer_id: 1,
            first_offset: 8,
        },
        AbortedTransaction {
            producer_id: 1,
            first_offset: 0,
        },
    ];
    let v = filter_aborted(&batches, &aborted, &Limits::default()).unwrap();
    use TxnVerdict::*;
    assert_eq!(
        v,
        [
            Aborted, Keep, Control, Keep, Control, Control, Aborted, Control
        ]
    );
    assert!(v.iter().filter(|v| v.is_dropped()).count() == 6);
    // Without the list nothing is aborted.
    let v = filter_aborted(&batches, &[], &Limits::default()).unwrap();
    assert_eq!(
        v,
        [Keep, Keep, Control, Keep, Control, Control, Keep, Control]
    );
}

#[test]
fn non_transactional_batches_are_never_aborted() {
    let plain = one(hand_batch(
        Compression::None,
        0,
        0,
        0,
        ProducerStamp {
            producer_id: 1,
            producer_epoch: 0,
            base_sequence: 0,
        },
        &[raw(0, 0, b"")],
    ));
    let v = filter_aborted(
        &[plain],
        &[AbortedTransaction {
            producer_id: 1,
            first_offset: 0,
        }],
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(v, [TxnVerdict::Keep]);
}
