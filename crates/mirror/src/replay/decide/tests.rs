//! Tests of [`super`], each named after its rule.

use super::*;
use bytes::{Bytes, BytesMut};
use strait_records::{Batch, Compression, split};

fn bounds(log_start: i64, end: i64) -> Bounds {
    Bounds { log_start, end }
}

/// A stored batch of records `base..base + n`, record `i` with timestamp `ts(i)`.
fn batch(base: i64, n: i64, codec: Compression, ts: impl Fn(i64) -> i64) -> Batch {
    let mut b = BatchBuilder::new(codec);
    for o in base..base + n {
        let v = format!("v{o}");
        b.push(ts(o), Some(b"k"), Some(v.as_bytes()), &[]).unwrap();
    }
    let mut bytes = BytesMut::from(&b.build().unwrap().into_bytes()[..]);
    bytes[0..8].copy_from_slice(&base.to_be_bytes());
    let mut s = split(Bytes::from(bytes), &Limits::default()).unwrap();
    s.batches.remove(0)
}

fn forward(b: Batch) -> Step {
    let h = *b.header();
    Step::Forward {
        source_first: h.base_offset,
        count: i64::from(h.records_count),
        batch: b,
    }
}

fn values(step: &Step) -> Vec<String> {
    let b = match step {
        Step::Forward { batch, .. } | Step::Reencoded { batch, .. } => batch,
        Step::Skip { .. } => return Vec::new(),
    };
    b.decode_records(&Limits::default())
        .unwrap()
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn rule_1_the_range_is_from_the_first_offset_at_from_to_the_first_offset_at_until() {
    let b = bounds(0, 100);
    assert_eq!(
        range(b, TimeOffset::At(10), Some(TimeOffset::At(40))),
        (10, 40)
    );
    // No record as recent as --until: to the end.
    assert_eq!(
        range(b, TimeOffset::At(10), Some(TimeOffset::None)),
        (10, 100)
    );
    // Without --until: the end at start.
    assert_eq!(range(b, TimeOffset::At(10), None), (10, 100));
    // Nothing as recent as --from: empty, at the end.
    assert_eq!(range(b, TimeOffset::None, None), (100, 100));
}

#[test]
fn rule_2_the_range_is_clamped_to_the_log_and_never_negative() {
    let b = bounds(20, 50);
    assert_eq!(
        range(b, TimeOffset::At(0), Some(TimeOffset::At(70))),
        (20, 50)
    );
    assert_eq!(
        range(b, TimeOffset::At(40), Some(TimeOffset::At(30))),
        (40, 40)
    );
}

#[test]
fn a_spec_needs_from_before_until_and_its_id_is_stable() {
    assert_eq!(
        Spec::new("t", "u", 10, Some(10)),
        Err(SpecError::EmptyTimeRange {
            from_ms: 10,
            until_ms: 10
        })
    );
    assert_eq!(
        Spec::new("t", "u", -1, None),
        Err(SpecError::BeforeEpoch(-1))
    );
    let a = Spec::new("t", "u", 10, Some(20)).unwrap();
    assert_eq!(a.id(), Spec::new("t", "u", 10, Some(20)).unwrap().id());
    assert_eq!(a.id().len(), 17);
    for other in [
        Spec::new("t", "v", 10, Some(20)),
        Spec::new("t", "u", 11, Some(20)),
        Spec::new("t", "u", 10, None),
        Spec::new("s", "u", 10, Some(20)),
    ] {
        assert_ne!(a.id(), other.unwrap().id());
    }
}

/// Runs a search against batches of `size` records over `0..n`, timestamps `ts`.
fn search(n: i64, size: i64, ts: impl Fn(i64) -> i64, ms: i64) -> (TimeOffset, u32) {
    let mut s = TimeSearch::new(ms, bounds(0, n));
    while let Some(at) = s.next_probe() {
        let base = at - at % size;
        let probed = Probed {
            base,
            next: (base + size).min(n),
            max_timestamp: (base..(base + size).min(n)).map(&ts).max().unwrap(),
            control: false,
            records: (base..(base + size).min(n)).map(|o| (o, ts(o))).collect(),
        };
        s.observe(at, Some(&probed));
    }
    (s.answer().unwrap(), s.probes())
}

#[test]
fn rule_3_4_5_the_search_finds_the_first_record_at_or_after_the_time() {
    // Record o at 1000 + 10·o; batches of 7.
    let ts = |o: i64| 1000 + 10 * o;
    for ms in [0, 1000, 1001, 1005, 1070, 1075, 1500, 1990] {
        let expected = (0..100).find(|o| ts(*o) >= ms).unwrap();
        assert_eq!(
            search(100, 7, ts, ms).0,
            TimeOffset::At(expected),
            "ms {ms}"
        );
    }
    // Later than every record: the end.
    assert_eq!(search(100, 7, ts, 5000).0, TimeOffset::None);
}

#[test]
fn rule_3_4_5_offsets_left_by_compaction_do_not_mislead_the_search() {
    // Only even offsets hold records (at 1000 + o), in batches spanning 4 offsets: a
    // probe at an odd offset gets the batch around it, whose records skip it.
    let mut s = TimeSearch::new(1031, bounds(0, 80));
    while let Some(at) = s.next_probe() {
        let base = at - at % 4;
        let records: Vec<(i64, i64)> = (base..base + 4)
            .filter(|o| o % 2 == 0)
            .map(|o| (o, 1000 + o))
            .collect();
        let probed = Probed {
            base,
            next: base + 4,
            max_timestamp: records.iter().map(|r| r.1).max().unwrap_or(-1),
            control: false,
            records,
        };
        s.observe(at, Some(&probed));
    }
    assert_eq!(s.answer(), Some(TimeOffset::At(32)));
}

#[test]
fn rule_3_a_batch_ending_before_the_time_moves_the_search_past_it() {
    let mut s = TimeSearch::new(500, bounds(0, 100));
    let at = s.next_probe().unwrap();
    s.observe(
        at,
        Some(&Probed {
            base: 40,
            next: 60,
            max_timestamp: 499,
            control: false,
            records: vec![],
        }),
    );
    assert!(s.next_probe().unwrap() >= 60);
}

#[test]
fn rule_4_equal_timestamps_across_batches_give_the_first_of_them() {
    // Every record of 30..100 at the same instant.
    let ts = |o: i64| if o < 30 { o } else { 1_000 };
    assert_eq!(search(100, 4, ts, 1_000).0, TimeOffset::At(30));
    assert_eq!(search(100, 4, ts, 30).0, TimeOffset::At(30));
}

#[test]
fn rule_5_the_search_is_bounded_by_the_bits_of_an_offset() {
    let ts = |o: i64| o;
    let (answer, probes) = search(1 << 40, 1000, ts, (1 << 39) + 17);
    assert_eq!(answer, TimeOffset::At((1 << 39) + 17));
    assert!(probes <= 41, "{probes}");
    // An empty fetch (nothing below the end) ends the search there.
    let mut s = TimeSearch::new(5, bounds(0, 10));
    while let Some(at) = s.next_probe() {
        s.observe(at, None);
    }
    assert_eq!(s.answer(), Some(TimeOffset::None));
}

#[test]
fn rule_6_a_transaction_marker_is_passed_over_whatever_its_timestamp() {
    // Records at 1000 + o, batches of one; offsets 20 and 41 are markers stamped "now".
    let ts = |o: i64| 1000 + o;
    for ms in [1010, 1030, 1045, 1060] {
        let mut s = TimeSearch::new(ms, bounds(0, 64));
        while let Some(at) = s.next_probe() {
            let control = at == 20 || at == 41;
            let t = if control { 9_999_999 } else { ts(at) };
            s.observe(
                at,
                Some(&Probed {
                    base: at,
                    next: at + 1,
                    max_timestamp: t,
                    control,
                    records: vec![(at, t)],
                }),
            );
        }
        let expected = (0..64)
            .find(|o| *o != 20 && *o != 41 && ts(*o) >= ms)
            .unwrap();
        assert_eq!(s.answer(), Some(TimeOffset::At(expected)), "ms {ms}");
    }
}

#[test]
fn rule_7_a_step_ending_before_the_end_is_kept_as_it_is() {
    let b = batch(10, 5, Compression::Lz4, |_| 0);
    let bytes = b.clone().into_bytes();
    let kept = cut(forward(b), 15, &Limits::default()).unwrap().unwrap();
    match kept {
        Step::Forward { batch, .. } => assert_eq!(batch.into_bytes(), bytes),
        other => panic!("not forwarded: {other:?}"),
    }
}

#[test]
fn rule_8_a_step_starting_at_or_after_the_end_is_dropped() {
    let b = batch(15, 5, Compression::None, |_| 0);
    assert!(cut(forward(b), 15, &Limits::default()).unwrap().is_none());
    let r = Step::Reencoded {
        batch: batch(0, 2, Compression::None, |_| 0),
        source_offsets: vec![20, 22],
    };
    assert!(cut(r, 20, &Limits::default()).unwrap().is_none());
}

#[test]
fn rule_9_a_batch_straddling_the_end_is_rebuilt_with_the_records_before_it() {
    for codec in [Compression::None, Compression::Zstd] {
        let b = batch(10, 5, codec, |o| 1000 + o);
        let step = cut(forward(b), 13, &Limits::default()).unwrap().unwrap();
        assert_eq!(values(&step), ["v10", "v11", "v12"]);
        let Step::Reencoded {
            batch,
            source_offsets,
        } = &step
        else {
            panic!("not rebuilt: {step:?}");
        };
        assert_eq!(source_offsets, &[10, 11, 12]);
        assert_eq!(batch.header().compression(), codec);
        let ts: Vec<i64> = batch
            .decode_records(&Limits::default())
            .unwrap()
            .iter()
            .map(|r| r.timestamp)
            .collect();
        assert_eq!(ts, [1010, 1011, 1012]);
    }
    // A re-encoded piece (offsets 0..n in its batch) keeps its source offsets.
    let piece = batch(0, 3, Compression::None, |_| 0);
    let step = Step::Reencoded {
        batch: piece,
        source_offsets: vec![30, 32, 34],
    };
    match cut(step, 33, &Limits::default()).unwrap().unwrap() {
        Step::Reencoded { source_offsets, .. } => assert_eq!(source_offsets, [30, 32]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rule_10_a_skip_past_the_end_stops_at_the_end() {
    match cut(Step::Skip { source_next: 50 }, 40, &Limits::default()).unwrap() {
        Some(Step::Skip { source_next }) => assert_eq!(source_next, 40),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rules_11_12_13_runs_start_refuse_or_resume() {
    assert_eq!(decide_run(None, false), RunDecision::Start { run: 1 });
    assert_eq!(decide_run(None, true), RunDecision::Start { run: 1 });
    let done = EarlierRun {
        run: 2,
        complete: true,
    };
    assert_eq!(
        decide_run(Some(done), false),
        RunDecision::AlreadyDone { run: 2 }
    );
    assert_eq!(decide_run(Some(done), true), RunDecision::Start { run: 3 });
    let cut_short = EarlierRun {
        run: 1,
        complete: false,
    };
    assert_eq!(
        decide_run(Some(cut_short), false),
        RunDecision::Resume { run: 1 }
    );
    assert_eq!(
        decide_run(Some(cut_short), true),
        RunDecision::Start { run: 2 }
    );
}

#[test]
fn rules_14_to_17_a_partition_resumes_from_its_map_after_checking_the_target() {
    assert_eq!(resume(true, 5, 9), Resume::Done);
    assert_eq!(resume(false, 5, 5), Resume::Continue);
    assert_eq!(resume(false, 5, 9), Resume::Check { from: 5, end: 9 });
    assert_eq!(
        resume(false, 5, 3),
        Resume::TargetShorter {
            expected: 5,
            end: 3
        }
    );
}
