//! Tests of the transaction rules, named after them.
use std::sync::Arc;

use super::*;

fn tp(p: i32) -> TopicPartition {
    (Arc::from("t"), p)
}
fn code(c: i16) -> Error {
    Error::from_code(c).unwrap()
}
fn ack() -> Result<Ack, Error> {
    Ok(Ack {
        base_offset: 0,
        log_append_time_ms: -1,
        duplicate: false,
    })
}
/// Admits `tp` through a successful add.
fn add(t: &mut Transaction, p: i32) {
    match t.admit(&tp(p)).unwrap() {
        Admission::Add(v) => {
            assert_eq!(v, vec![tp(p)]);
            t.on_added(Ok(()));
            assert_eq!(t.admit(&tp(p)).unwrap(), Admission::Go);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn one_transaction_at_a_time() {
    let mut t = Transaction::new();
    assert!(t.admit(&tp(0)).is_err(), "no batch outside a transaction");
    t.begin().unwrap();
    assert!(t.begin().is_err());
    t.begin_commit().unwrap();
    assert!(t.admit(&tp(0)).is_err(), "no batch once the commit began");
    assert_eq!(t.end().unwrap(), End::Done);
    assert_eq!(t.phase(), Phase::Ready);
    t.begin().unwrap();
}

#[test]
fn a_partition_is_added_before_its_first_batch_once_per_transaction() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    add(&mut t, 0);
    t.sent();
    assert_eq!(t.admit(&tp(0)).unwrap(), Admission::Go, "added once");
    t.sent();
    t.begin_commit().unwrap();
    assert_eq!(t.end().unwrap(), End::Send { commit: true });
    t.on_ended(Ok(()), false);
    assert_eq!(t.phase(), Phase::Ready);
    t.begin().unwrap();
    assert!(
        matches!(t.admit(&tp(0)).unwrap(), Admission::Add(_)),
        "and again in the next transaction"
    );
}

#[test]
fn partitions_wanted_during_an_add_go_together_in_the_next_one() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    assert_eq!(t.admit(&tp(0)).unwrap(), Admission::Add(vec![tp(0)]));
    assert_eq!(t.admit(&tp(1)).unwrap(), Admission::Wait);
    assert_eq!(t.admit(&tp(2)).unwrap(), Admission::Wait);
    assert_eq!(t.admit(&tp(1)).unwrap(), Admission::Wait, "asked for once");
    assert_eq!(
        t.admit(&tp(0)).unwrap(),
        Admission::Wait,
        "still being added"
    );
    t.on_added(Ok(()));
    assert_eq!(t.admit(&tp(0)).unwrap(), Admission::Go);
    assert_eq!(t.admit(&tp(2)).unwrap(), Admission::Add(vec![tp(1), tp(2)]));
    // An abandoned add is asked for again.
    t.on_add_abandoned();
    assert_eq!(t.admit(&tp(1)).unwrap(), Admission::Add(vec![tp(1), tp(2)]));
    t.on_added(Ok(()));
    assert_eq!(t.partitions(), 3);
    assert_eq!(t.sending(), 1);
}

#[test]
fn commit_waits_for_every_batch_and_a_failed_batch_makes_it_abortable() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    add(&mut t, 0);
    t.begin_commit().unwrap();
    assert_eq!(t.sending(), 1, "the driver waits for the send to return");
    t.sent();
    t.on_batch(&Err(code(10))); // MESSAGE_TOO_LARGE
    let e = t.end().unwrap_err();
    assert!(e.is_transaction_abortable(), "{e}");
    assert_eq!(t.phase(), Phase::Abortable);
    assert!(t.begin_commit().is_err());
    assert!(t.admit(&tp(1)).unwrap_err().is_transaction_abortable());
    assert!(t.begin_abort().unwrap());
    assert_eq!(t.end().unwrap(), End::Send { commit: false });
    t.on_ended(Ok(()), false);
    assert_eq!(t.phase(), Phase::Ready);
}

#[test]
fn a_groups_offsets_are_added_once_per_transaction() {
    let mut t = Transaction::new();
    assert!(t.admit_offsets("g").is_err(), "not outside a transaction");
    t.begin().unwrap();
    assert!(t.admit_offsets("g").unwrap(), "AddOffsetsToTxn first");
    t.on_offsets_added("g", Ok(()));
    t.on_offsets_committed(Ok(()));
    t.sent();
    assert!(!t.admit_offsets("g").unwrap(), "once");
    t.sent();
    t.begin_commit().unwrap();
    assert_eq!(
        t.end().unwrap(),
        End::Send { commit: true },
        "offsets alone need an EndTxn"
    );
    t.on_ended(Ok(()), false);
    t.begin().unwrap();
    assert!(t.admit_offsets("g").unwrap(), "and again next transaction");
    // A rebalance makes the offsets uncommittable: abortable, not fatal.
    t.on_offsets_added("g", Ok(()));
    t.on_offsets_committed(Err(code(22))); // ILLEGAL_GENERATION
    t.sent();
    assert_eq!(t.phase(), Phase::Abortable);
}

#[test]
fn a_transaction_that_added_nothing_ends_without_end_txn() {
    let mut t = Transaction::new();
    assert!(!t.begin_abort().unwrap(), "nothing to abort");
    t.begin().unwrap();
    assert!(t.begin_abort().unwrap());
    assert_eq!(t.end().unwrap(), End::Done);
    t.on_ended(Ok(()), false);
    assert_eq!(t.phase(), Phase::Ready);
}

#[test]
fn abort_with_a_broken_sequence_ends_with_an_epoch_bump() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    add(&mut t, 0);
    t.sent();
    t.on_batch(&Err(code(45))); // OUT_OF_ORDER_SEQUENCE_NUMBER
    assert_eq!(t.phase(), Phase::Abortable);
    t.begin_abort().unwrap();
    t.on_batch(&Err(code(45))); // failures while aborting change nothing
    assert_eq!(t.end().unwrap(), End::Send { commit: false });
    t.on_ended(Ok(()), true);
    assert!(t.needs_epoch_bump());
    assert!(t.begin().unwrap_err().is_transaction_abortable());
    // A bump that fails retriably is tried again by the next abort.
    t.on_bumped(Err(Error::new(ErrorKind::Timeout)));
    assert!(t.needs_epoch_bump());
    assert!(t.begin_abort().unwrap());
    t.on_bumped(Ok(()));
    assert_eq!(t.phase(), Phase::Ready);
}

#[test]
fn a_refused_epoch_bump_is_fatal_never_a_fresh_id() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    t.begin_abort().unwrap();
    t.end().unwrap();
    t.on_ended(Ok(()), true);
    t.on_bumped(Err(code(-1))); // Tansu: UNKNOWN_SERVER_ERROR
    assert_eq!(t.phase(), Phase::Fatal);
    let e = t.begin().unwrap_err();
    assert!(e.is_transaction_fatal() && !e.is_fenced(), "{e}");
    assert!(e.to_string().contains("KIP-360"), "{e}");
}

#[test]
fn fencing_is_terminal_and_wins() {
    for (api_code, on_produce) in [(90, true), (90, false), (47, false)] {
        let mut t = Transaction::new();
        t.begin().unwrap();
        add(&mut t, 0);
        t.sent();
        if on_produce {
            t.on_batch(&Err(code(api_code)));
        } else {
            t.begin_commit().unwrap();
            t.end().unwrap();
            t.on_ended(Err(code(api_code)), false);
        }
        assert_eq!(t.phase(), Phase::Fenced, "code {api_code}");
        t.on_batch(&Err(code(10)));
        assert_eq!(t.phase(), Phase::Fenced, "not downgraded");
        for e in [
            t.begin().unwrap_err(),
            t.begin_commit().unwrap_err(),
            t.begin_abort().unwrap_err(),
        ] {
            assert!(e.is_fenced() && e.is_transaction_fatal(), "{e}");
        }
    }
}

#[test]
fn a_fenced_add_partitions_fails_the_waiting_batches() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    assert!(matches!(t.admit(&tp(0)).unwrap(), Admission::Add(_)));
    assert_eq!(t.admit(&tp(1)).unwrap(), Admission::Wait);
    t.on_added(Err(code(90)));
    assert!(t.admit(&tp(1)).unwrap_err().is_fenced());
}

#[test]
fn an_unknown_commit_outcome_is_retried_not_guessed() {
    let mut t = Transaction::new();
    t.begin().unwrap();
    add(&mut t, 0);
    t.sent();
    t.on_batch(&ack());
    t.begin_commit().unwrap();
    assert_eq!(t.end().unwrap(), End::Send { commit: true });
    t.on_ended(Err(Error::new(ErrorKind::ConnectionClosed)), false);
    assert_eq!(t.phase(), Phase::Committing);
    assert!(t.begin_abort().is_err(), "no abort after an unknown commit");
    t.begin_commit().unwrap();
    assert_eq!(t.end().unwrap(), End::Send { commit: true });
    t.on_ended(Ok(()), false);
    assert_eq!(t.phase(), Phase::Ready);
}

#[test]
fn errors_are_classified_like_the_java_client() {
    use TxnApi::*;
    let cases = [
        (AddPartitions, 51, Verdict::Retry), // CONCURRENT_TRANSACTIONS
        (EndTxn, 51, Verdict::Retry),
        (EndTxn, 16, Verdict::Retry),        // NOT_COORDINATOR
        (AddPartitions, 14, Verdict::Retry), // COORDINATOR_LOAD_IN_PROGRESS
        (EndTxn, 90, Verdict::Fenced),
        (EndTxn, 47, Verdict::Fenced),
        (Produce, 47, Verdict::Abortable), // KIP-588
        (Produce, 90, Verdict::Fenced),
        (InitProducerId, 53, Verdict::Fatal), // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        (AddPartitions, 48, Verdict::Fatal),  // INVALID_TXN_STATE
        (AddPartitions, 59, Verdict::Abortable), // UNKNOWN_PRODUCER_ID
        (AddPartitions, 29, Verdict::Abortable), // TOPIC_AUTHORIZATION_FAILED
        (AddPartitions, 55, Verdict::Abortable), // OPERATION_NOT_ATTEMPTED
        (Produce, 45, Verdict::Abortable),
        (Produce, 7, Verdict::Abortable), // REQUEST_TIMED_OUT, after the retries
        (InitProducerId, -1, Verdict::Fatal),
        (TxnOffsetCommit, 25, Verdict::Abortable), // UNKNOWN_MEMBER_ID
        (TxnOffsetCommit, 90, Verdict::Fenced),
        (AddOffsets, 30, Verdict::Abortable), // GROUP_AUTHORIZATION_FAILED
        (AddOffsets, 51, Verdict::Retry),
    ];
    for (api, c, want) in cases {
        assert_eq!(classify(api, &code(c)), want, "{api:?} code {c}");
    }
    assert_eq!(
        classify(EndTxn, &Error::new(ErrorKind::ConnectionClosed)),
        Verdict::Retry
    );
    assert_eq!(
        classify(Produce, &Error::new(ErrorKind::NotSent("x".into()))),
        Verdict::Abortable
    );
}

#[test]
fn try_admit_goes_only_for_a_partition_already_in_the_open_transaction_and_else_changes_nothing() {
    let mut t = Transaction::new();
    assert!(!t.try_admit(&tp(0)), "no transaction");
    t.begin().unwrap();
    assert!(!t.try_admit(&tp(0)), "not added yet");
    assert_eq!(t.sending(), 0, "a refusal counts no send");
    // Nothing was asked for: `admit` still starts the add.
    add(&mut t, 0);
    t.sent();
    assert!(t.try_admit(&tp(0)), "added: goes");
    assert_eq!(t.sending(), 1, "and counts as a send until `sent`");
    t.sent();
    assert!(!t.try_admit(&tp(1)), "another partition is not in it");
    assert_eq!(t.admit(&tp(1)).unwrap(), Admission::Add(vec![tp(1)]));
    t.begin_commit().unwrap();
    assert!(!t.try_admit(&tp(0)), "not once the commit began");
    assert!(t.admit(&tp(0)).is_err(), "where `admit` says why");
}
