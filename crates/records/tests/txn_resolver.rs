//! `TxnResolver`: transactional data is released only once its marker decides it, and all
//! batches leave in offset order.

use std::path::Path;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use strait_records::{
    AbortedFilter, AbortedTransaction, Batch, BatchBuilder, BatchHeader, Compression, Limits,
    ProducerStamp, Resolved, SkipReason, TxnResolver, split,
};

const TRANSACTIONAL: u16 = 1 << 4;
const CONTROL: u16 = 1 << 5;

/// A data batch of `count` records at `base_offset`, transactional when `pid` is `Some`.
fn data(base_offset: i64, count: i32, pid: Option<i64>) -> Batch {
    let mut b = BatchBuilder::new(Compression::None).producer(ProducerStamp {
        producer_id: pid.unwrap_or(-1),
        producer_epoch: if pid.is_some() { 0 } else { -1 },
        base_sequence: if pid.is_some() { 0 } else { -1 },
    });
    for i in 0..count {
        b.push(1_000 + i64::from(i), Some(b"k"), Some(b"v"), &[])
            .unwrap();
    }
    let batch = b.build().unwrap();
    rewrite(
        batch,
        base_offset,
        if pid.is_some() { TRANSACTIONAL } else { 0 },
    )
}

/// A transaction marker of `pid` at `offset` (`commit` or abort).
fn marker(offset: i64, pid: i64, commit: bool) -> Batch {
    // Control record: key = version int16 0, type int16; value = version + coordinator epoch.
    let mut key = BytesMut::new();
    key.put_i16(0);
    key.put_i16(i16::from(commit));
    let mut value = BytesMut::new();
    value.put_i16(0);
    value.put_i32(0);
    let mut b = BatchBuilder::new(Compression::None).producer(ProducerStamp {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: -1,
    });
    b.push(2_000, Some(&key), Some(&value), &[]).unwrap();
    rewrite(b.build().unwrap(), offset, TRANSACTIONAL | CONTROL)
}

/// Sets the base offset and adds attribute bits (the resolver does not look at CRCs).
fn rewrite(batch: Batch, base_offset: i64, attributes: u16) -> Batch {
    let mut header: BatchHeader = *batch.header();
    header.base_offset = base_offset;
    header.attributes.0 |= attributes;
    let mut bytes = BytesMut::from(&header.encode()[..]);
    bytes.extend_from_slice(&batch.payload());
    Batch::parse(bytes.freeze()).unwrap()
}

/// Feeds batches through a fresh per-response aborted filter and the resolver; returns
/// (base offset, outcome) of everything released.
fn run(
    batches: &[Batch],
    aborted: &[AbortedTransaction],
) -> (Vec<(i64, Option<SkipReason>)>, TxnResolver) {
    let limits = Limits::default();
    let mut filter = AbortedFilter::new(aborted, limits);
    let mut resolver = TxnResolver::new(limits);
    let mut out = Vec::new();
    for b in batches {
        let verdict = filter.check(b).unwrap();
        resolver.push(b.clone(), verdict).unwrap();
        while let Some(r) = resolver.pop() {
            out.push(outcome(&r));
        }
    }
    (out, resolver)
}

fn outcome(r: &Resolved) -> (i64, Option<SkipReason>) {
    match r {
        Resolved::Forward(b) => (b.header().base_offset, None),
        Resolved::Skip(b, why) => (b.header().base_offset, Some(*why)),
    }
}

#[test]
fn non_transactional_batches_pass_straight_through() {
    let (out, resolver) = run(&[data(0, 3, None), data(3, 2, None)], &[]);
    assert_eq!(out, vec![(0, None), (3, None)]);
    assert_eq!(resolver.held_batches(), 0);
    assert_eq!(resolver.held_bytes(), 0);
}

#[test]
fn committed_data_waits_for_its_marker_and_keeps_order() {
    let limits = Limits::default();
    let mut r = TxnResolver::new(limits);
    let mut filter = AbortedFilter::new(&[], limits);
    let txn = data(0, 2, Some(7));
    let plain = data(2, 1, None);
    for b in [&txn, &plain] {
        r.push(b.clone(), filter.check(b).unwrap()).unwrap();
    }
    // The plain batch is decided but sits behind the open transaction.
    assert!(r.pop().is_none());
    assert!(r.is_waiting());
    assert_eq!(r.held_bytes(), txn.size() + plain.size());
    let commit = marker(3, 7, true);
    r.push(commit.clone(), filter.check(&commit).unwrap())
        .unwrap();
    let released: Vec<_> = std::iter::from_fn(|| r.pop())
        .map(|x| outcome(&x))
        .collect();
    assert_eq!(
        released,
        vec![(0, None), (2, None), (3, Some(SkipReason::Control))]
    );
    assert!(!r.is_waiting());
    assert_eq!(r.held_bytes(), 0);
}

#[test]
fn data_known_committed_is_released_at_once_with_its_producers_held_batches() {
    // Apache Kafka: below a real last stable offset and not listed as aborted.
    let limits = Limits::default();
    let mut r = TxnResolver::new(limits);
    let mut filter = AbortedFilter::new(&[], limits);
    let (held, other) = (data(0, 2, Some(7)), data(2, 1, Some(8)));
    for b in [&held, &other] {
        r.push(b.clone(), filter.check(b).unwrap()).unwrap();
    }
    assert!(r.pop().is_none(), "7 and 8 wait for markers");
    r.push_committed(data(3, 1, Some(7)));
    assert_eq!(
        outcome(&r.pop().unwrap()),
        (0, None),
        "7's held batch goes first"
    );
    assert!(
        r.pop().is_none(),
        "8 still waits: it is another transaction"
    );
    let commit = marker(4, 8, true);
    r.push(commit.clone(), filter.check(&commit).unwrap())
        .unwrap();
    let rest: Vec<_> = std::iter::from_fn(|| r.pop())
        .map(|x| outcome(&x))
        .collect();
    assert_eq!(
        rest,
        vec![(2, None), (3, None), (4, Some(SkipReason::Control))]
    );
    assert_eq!((r.held_batches(), r.held_bytes()), (0, 0));
}

#[test]
fn aborted_data_is_dropped_by_its_marker_even_without_an_aborted_list() {
    // What Tansu sends: an empty aborted list, the data, then the ABORT marker.
    let batches = [data(0, 3, Some(7)), marker(3, 7, false), data(4, 1, None)];
    let (out, _) = run(&batches, &[]);
    assert_eq!(
        out,
        vec![
            (0, Some(SkipReason::Aborted)),
            (3, Some(SkipReason::Control)),
            (4, None)
        ]
    );
}

#[test]
fn aborted_list_condemns_data_before_the_marker_arrives() {
    // What Kafka sends: the aborted list covers the data, so nothing has to wait.
    let aborted = [AbortedTransaction {
        producer_id: 7,
        first_offset: 0,
    }];
    let (out, resolver) = run(&[data(0, 3, Some(7)), data(3, 1, None)], &aborted);
    assert_eq!(out, vec![(0, Some(SkipReason::Aborted)), (3, None)]);
    assert!(!resolver.is_waiting());
}

#[test]
fn interleaved_producers_are_settled_independently() {
    let batches = [
        data(0, 1, Some(1)),
        data(1, 1, Some(2)),
        data(2, 1, Some(1)),
        marker(3, 2, true), // producer 2 commits: offset 1 is decided, but 0 is not
        marker(4, 1, false), // producer 1 aborts: everything is decided
    ];
    let (out, resolver) = run(&batches, &[]);
    assert_eq!(
        out,
        vec![
            (0, Some(SkipReason::Aborted)),
            (1, None),
            (2, Some(SkipReason::Aborted)),
            (3, Some(SkipReason::Control)),
            (4, Some(SkipReason::Control)),
        ]
    );
    assert_eq!(resolver.held_batches(), 0);
}

#[test]
fn a_marker_for_an_unknown_producer_is_just_skipped() {
    let (out, _) = run(&[marker(0, 9, true), data(1, 1, None)], &[]);
    assert_eq!(out, vec![(0, Some(SkipReason::Control)), (1, None)]);
}

#[test]
fn clear_forgets_held_batches() {
    let (out, mut resolver) = run(&[data(0, 1, Some(1)), data(1, 1, None)], &[]);
    assert!(out.is_empty());
    assert_eq!(resolver.held_batches(), 2);
    resolver.clear();
    assert_eq!(resolver.held_batches(), 0);
    assert_eq!(resolver.held_bytes(), 0);
    assert!(!resolver.is_waiting());
}

#[test]
fn tansu_fixture_with_an_empty_aborted_list_releases_only_committed_data() {
    // txn-abort.bin (tests/data/README.md): aborted data 0-5, ABORT at 6, committed 7-11,
    // COMMIT at 12, served by Tansu with an empty aborted-transactions list.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/txn-abort.bin");
    let bin = Bytes::from(std::fs::read(&path).unwrap());
    let batches = split(bin, &Limits::default()).unwrap().batches;
    let (out, resolver) = run(&batches, &[]);
    let forwarded: Vec<i64> = out
        .iter()
        .filter(|(_, skip)| skip.is_none())
        .map(|(o, _)| *o)
        .collect();
    let forwarded_records: i64 = batches
        .iter()
        .filter(|b| forwarded.contains(&b.header().base_offset))
        .map(|b| i64::from(b.header().records_count))
        .sum();
    assert_eq!(forwarded_records, 5, "only the committed transaction");
    assert!(forwarded.iter().all(|&o| (7..=11).contains(&o)));
    assert_eq!(out.len(), batches.len(), "every batch released");
    assert_eq!(resolver.held_batches(), 0);
}

/// One generated step: a data batch (optionally transactional for producer 0..3) or a
/// marker (commit or abort) for producer 0..3.
#[derive(Debug, Clone)]
enum Step {
    Plain,
    Txn(i64),
    Marker(i64, bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Plain),
        (0i64..3).prop_map(Step::Txn),
        ((0i64..3), any::<bool>()).prop_map(|(p, c)| Step::Marker(p, c)),
    ]
}

proptest! {
    /// Against a model that knows every transaction's outcome: released batches come out
    /// in offset order, forwarded data is exactly the non-transactional data plus the data
    /// of transactions that later committed, and nothing is released before its marker.
    #[test]
    fn releases_in_order_and_exactly_the_committed_data(steps in prop::collection::vec(step(), 0..40)) {
        let mut batches = Vec::new();
        let mut expected_forward = Vec::new();
        let mut open: Vec<Vec<i64>> = vec![Vec::new(); 3];
        for (offset, s) in steps.iter().enumerate() {
            let offset = offset as i64;
            match *s {
                Step::Plain => {
                    batches.push(data(offset, 1, None));
                    expected_forward.push(offset);
                }
                Step::Txn(p) => {
                    batches.push(data(offset, 1, Some(p)));
                    open[p as usize].push(offset);
                }
                Step::Marker(p, commit) => {
                    batches.push(marker(offset, p, commit));
                    let decided = std::mem::take(&mut open[p as usize]);
                    if commit {
                        expected_forward.extend(decided);
                    }
                }
            }
        }
        expected_forward.sort_unstable();
        let undecided: usize = open.iter().map(Vec::len).sum();
        let (out, resolver) = run(&batches, &[]);
        let offsets: Vec<i64> = out.iter().map(|(o, _)| *o).collect();
        prop_assert!(offsets.windows(2).all(|w| w[0] < w[1]), "in order: {offsets:?}");
        prop_assert_eq!(offsets.len() + resolver.held_batches(), batches.len());
        // Everything before the first undecided batch has been released.
        let first_open = open.iter().flatten().min().copied();
        let released_until = first_open.unwrap_or(batches.len() as i64);
        prop_assert_eq!(offsets.len() as i64, released_until);
        let forwarded: Vec<i64> = out.iter().filter(|(_, s)| s.is_none()).map(|(o, _)| *o).collect();
        let expected: Vec<i64> = expected_forward.into_iter().filter(|&o| o < released_until).collect();
        prop_assert_eq!(forwarded, expected);
        prop_assert_eq!(resolver.is_waiting(), undecided > 0);
    }
}

/// Feeds batches through [`TxnResolver::in_commit_order`]; returns what it released and
/// the resolver.
fn run_in_commit_order(batches: &[Batch]) -> (Vec<(i64, Option<SkipReason>)>, TxnResolver) {
    let limits = Limits::default();
    let mut filter = AbortedFilter::new(&[], limits);
    let mut resolver = TxnResolver::in_commit_order(limits);
    let mut out = Vec::new();
    for b in batches {
        resolver.push(b.clone(), filter.check(b).unwrap()).unwrap();
        while let Some(r) = resolver.pop() {
            out.push(outcome(&r));
        }
    }
    (out, resolver)
}

#[test]
fn in_commit_order_a_producers_commit_is_not_hidden_by_another_producers_open_transaction() {
    // Slot 1's transaction stays open at the end of the log (its owner was killed); slot
    // 2 committed twice after it began. Offset order would release nothing of slot 2.
    let batches = [
        data(0, 1, Some(1)),
        data(1, 1, Some(2)),
        marker(2, 2, true),
        data(3, 1, None),
        data(4, 1, Some(2)),
        marker(5, 2, true),
    ];
    let (out, resolver) = run_in_commit_order(&batches);
    assert_eq!(
        out,
        vec![
            (1, None),
            (2, Some(SkipReason::Control)),
            (3, None),
            (4, None),
            (5, Some(SkipReason::Control)),
        ]
    );
    // Slot 1's open data is held, never released as committed.
    assert_eq!(resolver.held_batches(), 1);
    assert!(resolver.is_waiting());
    let (offset_order, _) = run(&batches, &[]);
    assert!(offset_order.is_empty(), "{offset_order:?}");
}

#[test]
fn in_commit_order_a_transaction_is_released_at_its_marker_in_its_own_offset_order() {
    let batches = [
        data(0, 1, Some(1)),
        data(1, 1, Some(2)),
        data(2, 1, Some(1)),
        marker(3, 2, false), // producer 2 aborts first
        marker(4, 1, true),
    ];
    let (out, resolver) = run_in_commit_order(&batches);
    assert_eq!(
        out,
        vec![
            (1, Some(SkipReason::Aborted)),
            (3, Some(SkipReason::Control)),
            (0, None),
            (2, None),
            (4, Some(SkipReason::Control)),
        ]
    );
    assert_eq!(resolver.held_batches(), 0);
    assert_eq!(resolver.held_bytes(), 0);
}
