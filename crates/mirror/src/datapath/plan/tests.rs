//! Tests of [`super`]: the planning rules, the transaction rules (markers, a real LSO)
//! and spilling, each test named after its rule.

use super::*;
use bytes::BytesMut;
use strait_records::{BatchBuilder, BatchHeader, Compression, HEADER_LEN, ProducerStamp};

/// A batch of `n` records (values "v<i>") at `base`, as a broker stores it.
fn batch(base: i64, n: usize, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new(codec);
    for i in 0..n {
        let v = format!("v{}", base + i as i64);
        b.push(1_700_000_000_000, Some(b"k"), Some(v.as_bytes()), &[])
            .unwrap();
    }
    rebase(b.build().unwrap().into_bytes(), base, None)
}

/// Rewrites base offset (outside the CRC) and optionally the producer fields and
/// attributes (inside it, so the CRC is recomputed).
fn rebase(bytes: Bytes, base: i64, txn: Option<(i64, u16)>) -> Bytes {
    let mut b = BytesMut::from(&bytes[..]);
    b[0..8].copy_from_slice(&base.to_be_bytes());
    if let Some((pid, attrs)) = txn {
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&b[..HEADER_LEN]);
        let mut h = BatchHeader::parse(&head, 0).unwrap();
        h.producer_id = pid;
        h.producer_epoch = 0;
        h.base_sequence = 0;
        h.attributes.0 |= attrs;
        b[..HEADER_LEN].copy_from_slice(&h.encode());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    b.freeze()
}

fn concat(parts: &[Bytes]) -> Bytes {
    let mut b = BytesMut::new();
    for p in parts {
        b.extend_from_slice(p);
    }
    b.freeze()
}

const TXN: u16 = 0x10;
const CONTROL: u16 = 0x20;

/// A transaction marker of `pid` at `offset`: a control record with key version 0 and
/// type 1 (COMMIT) or 0 (ABORT).
fn marker(offset: i64, pid: i64, commit: bool) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None);
    b.push(
        0,
        Some(&[0, 0, 0, u8::from(commit)]),
        Some(&[0, 0, 0, 0, 0, 0]),
        &[],
    )
    .unwrap();
    rebase(
        b.build().unwrap().into_bytes(),
        offset,
        Some((pid, TXN | CONTROL)),
    )
}

/// A transactional data batch of `pid`.
fn txn(base: i64, n: usize, pid: i64) -> Bytes {
    rebase(batch(base, n, Compression::None), base, Some((pid, TXN)))
}

/// (records, source_next) of each step.
fn shape<P>(p: &Plan<P>) -> Vec<(i64, i64)> {
    p.steps
        .iter()
        .map(|(s, _)| (s.records(), s.source_next()))
        .collect()
}

#[test]
fn dense_batches_are_forwarded_without_copying() {
    let set = concat(&[
        batch(0, 3, Compression::Lz4),
        batch(3, 2, Compression::None),
    ]);
    let p = plan(set.clone(), &[], 0, 1 << 20, &Limits::default()).unwrap();
    assert_eq!(p.next_position, 5);
    assert_eq!(p.steps.len(), 2);
    match &p.steps[0].0 {
        Step::Forward {
            batch,
            source_first,
            count,
        } => {
            assert_eq!((*source_first, *count), (0, 3));
            assert_eq!(
                batch.as_bytes().as_ptr(),
                set.as_ptr(),
                "a slice, not a copy"
            );
            // The producer will be able to patch it.
            batch.verify_and_patch(ProducerStamp::NONE).unwrap();
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.steps[1].0.source_next(), 5);
    assert!(p.slow.is_empty());
}

#[test]
fn batches_before_the_position_are_ignored_and_a_straddling_one_is_cut() {
    let set = concat(&[
        batch(0, 3, Compression::Gzip),
        batch(3, 4, Compression::Zstd),
    ]);
    let p = plan(set, &[], 5, 1 << 20, &Limits::default()).unwrap();
    assert_eq!(p.slow, vec![SlowReason::Partial]);
    assert_eq!(p.next_position, 7);
    match &p.steps[0].0 {
        Step::Reencoded {
            batch,
            source_offsets,
        } => {
            assert_eq!(source_offsets, &vec![5, 6]);
            let values: Vec<_> = batch
                .records(&Limits::default())
                .unwrap()
                .map(|r| r.unwrap().value.unwrap())
                .collect();
            assert_eq!(values, vec![Bytes::from("v5"), Bytes::from("v6")]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.steps.last().unwrap().0.source_next(), 7);
}

#[test]
fn too_large_batches_are_split_and_keep_their_source_offsets() {
    let set = batch(10, 40, Compression::None);
    let p = plan(set, &[], 10, 300, &Limits::default()).unwrap();
    assert_eq!(p.slow, vec![SlowReason::TooLarge]);
    let mut offsets: Vec<i64> = Vec::new();
    for (s, _) in &p.steps {
        if let Step::Reencoded {
            batch,
            source_offsets,
        } = s
        {
            assert!(batch.size() <= 300, "{}", batch.size());
            offsets.extend(source_offsets.iter().copied());
        }
    }
    assert!(p.steps.len() > 2);
    assert_eq!(offsets, (10..50).collect::<Vec<_>>());
    assert_eq!(p.next_position, 50);
}

#[test]
fn control_and_aborted_batches_are_skipped_and_counted() {
    let committed = rebase(batch(0, 2, Compression::None), 0, Some((7, TXN)));
    let commit = marker(2, 7, true);
    let aborted = rebase(batch(3, 2, Compression::None), 3, Some((8, TXN)));
    let abort = marker(5, 8, false);
    let after = batch(6, 1, Compression::None);
    let set = concat(&[committed, commit, aborted, abort, after]);
    let aborted_list = [AbortedTxn {
        producer_id: 8,
        first_offset: 3,
    }];
    let p = plan(set, &aborted_list, 0, 1 << 20, &Limits::default()).unwrap();
    assert_eq!((p.dropped_aborted, p.dropped_control), (1, 2));
    let kinds: Vec<(i64, i64)> = p
        .steps
        .iter()
        .map(|(s, _)| (s.records(), s.source_next()))
        .collect();
    assert_eq!(kinds, vec![(2, 2), (0, 3), (0, 5), (0, 6), (1, 7)]);
}

#[test]
fn partial_trailing_batch_is_left_for_the_next_fetch() {
    let whole = batch(0, 2, Compression::None);
    let next = batch(2, 2, Compression::None);
    let set = concat(&[whole, next.slice(..next.len() - 5)]);
    let p = plan(set, &[], 0, 1 << 20, &Limits::default()).unwrap();
    assert_eq!(p.next_position, 2);
    assert_eq!(p.steps.len(), 1);
    assert!(p.trimmed > 0);
}

#[test]
fn corrupt_batch_on_the_slow_path_is_an_error() {
    let mut b = BytesMut::from(&batch(0, 3, Compression::None)[..]);
    let last = b.len() - 1;
    b[last] ^= 0xff;
    let e = plan(b.freeze(), &[], 1, 1 << 20, &Limits::default()).unwrap_err();
    assert_eq!(e.offset, 0);
}

/// Tansu: aborted data comes back with an empty aborted list; only the ABORT marker,
/// in a later response, tells. Held data waits across responses and leaves in order.
#[test]
fn aborted_data_without_an_aborted_list_is_held_until_its_marker_then_dropped() {
    let limits = Limits::default();
    let mut planner: Planner<u32> = Planner::new(0, 1 << 20, limits);
    // Response 1: a committed transaction (data + marker), then the start of
    // transaction 8 and a plain batch behind it.
    let r1 = concat(&[
        txn(0, 2, 7),
        marker(2, 7, true),
        txn(3, 2, 8),
        batch(5, 1, Compression::None),
    ]);
    let p = planner.plan(r1, &[], 0, 1).unwrap();
    assert_eq!(
        p.next_position, 6,
        "the fetch position moves past held batches"
    );
    assert_eq!(shape(&p), vec![(2, 2), (0, 3)]);
    assert_eq!(
        planner.released_next(),
        3,
        "the map may only advance to here"
    );
    assert_eq!(planner.held_batches(), 2);
    assert!(planner.held_bytes() > 0);
    assert_eq!(
        planner.oldest_open(),
        Some(OpenTxn {
            producer_id: 8,
            first_offset: 3
        })
    );
    // Response 2: more of transaction 8, its ABORT marker, one more plain batch.
    let r2 = concat(&[
        txn(6, 1, 8),
        marker(7, 8, false),
        batch(8, 2, Compression::None),
    ]);
    let p = planner.plan(r2, &[], 6, 2).unwrap();
    assert_eq!(p.dropped_aborted, 2);
    assert_eq!(p.dropped_control, 1);
    assert_eq!(
        shape(&p),
        vec![(0, 5), (1, 6), (0, 7), (0, 8), (2, 10)],
        "aborted batches skipped, the plain batch held behind them released in order"
    );
    // The plain batch at 5 came from response 1 and still pins its buffer.
    let pins: Vec<u32> = p.steps.iter().map(|(_, pin)| *pin).collect();
    assert_eq!(pins, vec![1, 1, 2, 2, 2]);
    assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
    assert_eq!(planner.oldest_open(), None);
    assert_eq!(planner.released_next(), 10);
}

/// A transaction still open when `--once` reaches the end seen at start (Tansu: LSO =
/// HW) is not replicated: none of its steps are released and the position the map
/// may record stays before it, so the next run fetches it again.
#[test]
fn an_open_transaction_is_never_released() {
    let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
    let set = concat(&[
        batch(0, 3, Compression::None),
        txn(3, 2, 9),
        batch(5, 1, Compression::None),
    ]);
    let p = planner.plan(set, &[], 0, ()).unwrap();
    assert_eq!(shape(&p), vec![(3, 3)]);
    assert_eq!(p.next_position, 6);
    assert_eq!(planner.released_next(), 3);
    assert_eq!(planner.held_batches(), 2);
    // A reposition (truncation, re-creation, recovery) forgets what was held.
    planner.reposition(100);
    assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
    assert_eq!(planner.oldest_open(), None);
    assert_eq!(planner.released_next(), 100);
    let p = planner
        .plan(batch(100, 1, Compression::None), &[], 100, ())
        .unwrap();
    assert_eq!(shape(&p), vec![(1, 101)]);
}

/// Apache Kafka (a real LSO): transactional data below the LSO and not in the aborted
/// list is committed and released at once, also when its marker is in a later
/// response; listed data is dropped; data past the LSO (never returned by Kafka, but
/// if it were) still waits for its marker.
#[test]
fn below_a_real_lso_unlisted_transactional_data_is_released_without_its_marker() {
    let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
    let set = concat(&[
        txn(0, 2, 7),
        txn(2, 1, 8),
        batch(3, 1, Compression::None),
        txn(4, 1, 9),
    ]);
    let aborted = [AbortedTxn {
        producer_id: 8,
        first_offset: 2,
    }];
    let p = planner.plan_stable(set, &aborted, Some(4), 0, ()).unwrap();
    assert_eq!(
        shape(&p),
        vec![(2, 2), (0, 3), (1, 4)],
        "7 committed at once, 8 dropped as listed, 9 (past the LSO) held"
    );
    assert_eq!(p.dropped_aborted, 1);
    assert_eq!(planner.held_batches(), 1);
    assert_eq!(
        planner.oldest_open(),
        Some(OpenTxn {
            producer_id: 9,
            first_offset: 4
        })
    );
    // The markers come later: 7's commit is only skipped, 9's decides it.
    let p = planner
        .plan_stable(
            concat(&[marker(5, 7, true), marker(6, 9, true)]),
            &[],
            Some(7),
            5,
            (),
        )
        .unwrap();
    assert_eq!(shape(&p), vec![(1, 5), (0, 6), (0, 7)]);
    assert_eq!((planner.held_batches(), planner.oldest_open()), (0, None));
}

/// A transaction held from a response without a trusted LSO is released, with the
/// rest of its batches, once a later response puts it below a real LSO.
#[test]
fn held_batches_of_a_producer_are_released_with_its_batch_below_a_real_lso() {
    let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
    let p = planner.plan(txn(0, 2, 7), &[], 0, ()).unwrap();
    assert!(p.steps.is_empty());
    let p = planner
        .plan_stable(txn(2, 2, 7), &[], Some(4), 2, ())
        .unwrap();
    assert_eq!(shape(&p), vec![(2, 2), (2, 4)]);
    assert_eq!(planner.held_batches(), 0);
}

/// Tansu (no trusted LSO: LSO = high watermark with open and aborted data below it and
/// no aborted list): data below the reported LSO still waits for its marker, and an
/// ABORT marker drops it. Only [`Planner::plan`] (markers decide) is safe there.
#[test]
fn without_a_trusted_lso_data_below_the_reported_one_waits_for_its_marker() {
    let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
    let p = planner.plan_stable(txn(0, 2, 7), &[], None, 0, ()).unwrap();
    assert!(
        p.steps.is_empty(),
        "held, although the reported LSO (2) is past it"
    );
    let p = planner
        .plan_stable(marker(2, 7, false), &[], None, 2, ())
        .unwrap();
    assert_eq!(shape(&p), vec![(0, 2), (0, 3)]);
    assert_eq!(p.dropped_aborted, 1);
}

/// Rules 1–2: spilling drops what is held and reads ahead without holding; the rewind
/// comes once the held producer's transaction and one that started before its marker
/// are decided (one that started after it is left to the re-read).
#[test]
fn rule1_2_spilling_drops_held_batches_and_rewinds_once_its_transactions_are_decided() {
    let mut planner: Planner<u32> = Planner::new(0, 1 << 20, Limits::default());
    let p = planner
        .plan(
            concat(&[batch(0, 1, Compression::None), txn(1, 2, 7)]),
            &[],
            0,
            1,
        )
        .unwrap();
    assert_eq!(shape(&p), vec![(1, 1)]);
    assert!(planner.held_bytes() > 0);
    assert!(planner.spill());
    assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
    assert!(!planner.spill(), "once");
    // 8 starts before 7's COMMIT (waited for), 9 after it (not waited for).
    let p = planner
        .plan(
            concat(&[txn(3, 1, 8), marker(4, 7, true), txn(5, 1, 9)]),
            &[],
            3,
            2,
        )
        .unwrap();
    assert!(p.steps.is_empty(), "nothing released while reading ahead");
    assert_eq!(p.next_position, 6);
    assert_eq!(planner.held_batches(), 0, "nothing held");
    assert_eq!(planner.take_rewind(), None, "8 is undecided");
    let p = planner
        .plan(
            concat(&[marker(6, 8, false), batch(7, 1, Compression::None)]),
            &[],
            6,
            3,
        )
        .unwrap();
    assert!(p.steps.is_empty());
    assert_eq!(
        planner.take_rewind(),
        Some(1),
        "back to where the steps stopped"
    );
    assert_eq!(planner.take_rewind(), None, "once");
    assert_eq!(planner.released_next(), 1);
}

/// Rules 3–4: after the rewind, record sets from elsewhere are ignored, and the re-read
/// releases committed data and skips aborted data at once, holding nothing.
#[test]
fn rule3_4_the_re_read_releases_decided_transactions_without_holding() {
    let mut planner: Planner<u32> = Planner::new(0, 1 << 20, Limits::default());
    let log = [
        txn(0, 2, 7),
        marker(2, 7, true),
        txn(3, 1, 7),
        txn(4, 1, 8),
        marker(5, 7, false),
        marker(6, 8, true),
        batch(7, 1, Compression::None),
    ];
    planner.plan(log[0].clone(), &[], 0, 0).unwrap();
    assert!(planner.spill());
    planner.plan(concat(&log[1..6]), &[], 2, 0).unwrap();
    assert_eq!(planner.take_rewind(), Some(0));
    // Fetched before the rewind took effect: ignored.
    let p = planner.plan(log[6].clone(), &[], 7, 1).unwrap();
    assert!(p.steps.is_empty());
    assert_eq!(planner.released_next(), 0);
    // The re-read, in pieces: nothing waits for a marker.
    let p = planner.plan(concat(&log[0..4]), &[], 0, 2).unwrap();
    assert_eq!(
        shape(&p),
        vec![(2, 2), (0, 3), (0, 4), (1, 5)],
        "7's committed data forwarded, its aborted second transaction skipped, 8's forwarded"
    );
    assert_eq!(p.dropped_aborted, 1);
    assert_eq!((planner.held_batches(), planner.held_bytes()), (0, 0));
    let p = planner.plan(concat(&log[4..]), &[], 4, 3).unwrap();
    assert_eq!(shape(&p), vec![(0, 6), (0, 7), (1, 8)]);
    assert!(!planner.is_spilling());
}

/// Kafka: the aborted list condemns data before its marker is fetched; committed
/// data of another producer interleaved with it is released at its own marker.
#[test]
fn the_aborted_list_and_markers_combine_across_producers() {
    let mut planner: Planner<()> = Planner::new(0, 1 << 20, Limits::default());
    let set = concat(&[
        txn(0, 1, 1),
        txn(1, 1, 2),
        marker(2, 2, true),
        marker(3, 1, false),
    ]);
    let aborted = [AbortedTxn {
        producer_id: 1,
        first_offset: 0,
    }];
    let p = planner.plan(set, &aborted, 0, ()).unwrap();
    assert_eq!(shape(&p), vec![(0, 1), (1, 2), (0, 3), (0, 4)]);
    assert_eq!((p.dropped_aborted, p.dropped_control), (1, 2));
    assert_eq!(planner.held_batches(), 0);
}
