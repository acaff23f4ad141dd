//! `strait verify`'s rules, one test each (named after the rule), without sockets.

use std::time::{Duration, Instant};

use strait_offsets::{OffsetMap, Precision, Translation};

use super::compare::{Comparer, Finding, MAX_NAMED};
use super::content::{Content, Field, Seen};
use super::judge::{self, GroupVerdict, Outcome, Pace, Step};
use super::spans::{Span, Spans, WINDOW, sample, spans};

/// The record with content number `n` at `offset` (contents differ by `n`).
fn rec(offset: u64, n: u64) -> Seen {
    Seen {
        offset,
        content: Content {
            key: n,
            value: n * 7 + 1,
            headers: 0,
            timestamp: 1_000 + n as i64,
            tombstone: false,
        },
    }
}

/// Records `n..m` at their own offsets plus `shift`.
fn recs(range: std::ops::Range<u64>, shift: u64) -> Vec<Seen> {
    range.map(|n| rec(n + shift, n)).collect()
}

fn exact(source: u64, target: u64, len: u64) -> Span {
    Span::Exact {
        source,
        target,
        len,
    }
}

#[test]
fn an_exact_run_pairs_records_by_offset_and_identical_logs_match() {
    let mut c = Comparer::new(false);
    c.span(&exact(0, 100, 10), &recs(0..10, 0), &recs(0..10, 100));
    let out = c.finish();
    assert!(out.tally.clean(), "{out:?}");
    assert_eq!(out.tally.matched, 10);
    assert_eq!(
        (out.tally.source_records, out.tally.target_records),
        (10, 10)
    );
    assert_eq!(out.source_digest, out.target_digest);
}

#[test]
fn a_changed_field_is_named_with_the_pair() {
    let mut target = recs(0..10, 0);
    target[4].content.value ^= 1;
    target[6].content.timestamp += 1;
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, 10), &recs(0..10, 0), &target);
    let out = c.finish();
    assert_eq!(out.tally.changed, 2);
    assert_eq!(out.tally.matched, 8);
    assert_eq!(
        out.findings,
        vec![
            Finding::Changed {
                source: 4,
                target: 4,
                fields: vec![Field::Value],
                holds_source: None
            },
            Finding::Changed {
                source: 6,
                target: 6,
                fields: vec![Field::Timestamp],
                holds_source: None
            },
        ]
    );
    assert_ne!(out.source_digest, out.target_digest);
}

#[test]
fn a_shifted_target_names_the_source_record_it_holds() {
    // Source record 3 was lost and the target is one behind from there.
    let mut target = recs(0..3, 0);
    target.extend((3..9).map(|n| rec(n, n + 1)));
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, 9), &recs(0..9, 0), &target);
    let out = c.finish();
    assert_eq!(
        out.findings.first(),
        Some(&Finding::Changed {
            source: 3,
            target: 3,
            fields: vec![Field::Key, Field::Value, Field::Timestamp],
            holds_source: Some(4),
        })
    );
}

#[test]
fn a_source_record_without_its_target_is_missing() {
    let mut target = recs(0..10, 0);
    target.remove(5);
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, 10), &recs(0..10, 0), &target);
    let out = c.finish();
    assert_eq!(out.tally.missing, 1);
    assert_eq!(
        out.findings,
        vec![Finding::Missing {
            source: 5,
            target: Some(5)
        }]
    );
}

#[test]
fn a_target_record_without_its_source_is_a_duplicate_of_the_record_it_copies() {
    // Source offset 5 is gone (say, an aborted record read_committed skips), but the
    // target holds a copy of source record 2 there.
    let mut source = recs(0..10, 0);
    source.remove(5);
    let mut target = recs(0..10, 0);
    target[5] = rec(5, 2);
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, 10), &source, &target);
    let out = c.finish();
    assert_eq!(out.tally.duplicate, 1);
    assert_eq!(
        out.findings,
        vec![Finding::Duplicate {
            target: 5,
            of_source: 2
        }]
    );
}

#[test]
fn a_target_record_no_source_record_has_is_foreign() {
    let mut c = Comparer::new(false);
    let gap = Span::Gap {
        source: 10..10,
        target: 10..11,
    };
    c.span(&exact(0, 0, 10), &recs(0..10, 0), &recs(0..10, 0));
    c.span(&gap, &[], &[rec(10, 999)]);
    let out = c.finish();
    assert_eq!(out.tally.foreign, 1);
    assert_eq!(out.findings, vec![Finding::Foreign { target: 10 }]);
}

#[test]
fn a_gap_holds_nothing() {
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, 5), &recs(0..5, 0), &recs(0..5, 0));
    let gap = Span::Gap {
        source: 5..7,
        target: 5..6,
    };
    // A source record the map never paired, and a resend of source record 4.
    c.span(&gap, &[rec(6, 6)], &[rec(5, 4)]);
    let out = c.finish();
    assert_eq!(
        out.findings,
        vec![
            Finding::Missing {
                source: 6,
                target: None
            },
            Finding::Duplicate {
                target: 5,
                of_source: 4
            },
        ]
    );
    assert!(!out.tally.clean());
}

#[test]
fn spans_cover_runs_and_gaps_up_to_the_replicated_end() {
    let mut map = OffsetMap::new();
    map.append_dense(0, 10, 0).unwrap();
    map.append_dense(12, 8, 10).unwrap();
    map.advance(25, 18).unwrap();
    let s = spans(&map, [0, 0]);
    assert_eq!(
        s.spans,
        vec![
            exact(0, 0, 10),
            Span::Gap {
                source: 10..12,
                target: 10..10
            },
            exact(12, 10, 8),
            Span::Gap {
                source: 20..25,
                target: 18..18
            },
        ]
    );
    assert_eq!((s.source_range(), s.target_range()), (0..25, 0..18));
}

#[test]
fn spans_are_clipped_to_the_log_starts_and_split_to_the_window() {
    let mut map = OffsetMap::new();
    map.append_dense(0, WINDOW + 10, 100).unwrap();
    // Retention removed 4 records on the source and 6 on the target.
    let s = spans(&map, [4, 106]);
    assert_eq!(
        s.spans,
        vec![exact(6, 106, WINDOW), exact(6 + WINDOW, 106 + WINDOW, 4)]
    );
    assert_eq!(s.skipped, 0);
}

/// A map coarsened by a small budget: runs of 2 records with a gap of one on the source.
fn coarsened() -> OffsetMap {
    let mut map = OffsetMap::with_budget(strait_offsets::MIN_RUN_BUDGET);
    for i in 0..12u64 {
        map.append_dense(i * 3, 2, i * 2).unwrap();
    }
    assert!(!map.coarse_segments().is_empty(), "the budget coarsens");
    map
}

#[test]
fn coarse_history_compares_as_a_sequence() {
    let map = coarsened();
    let s = spans(&map, [0, 0]);
    let Some(coarse) = s.spans.iter().find(|x| matches!(x, Span::Coarse { .. })) else {
        panic!("no coarse span in {s:?}");
    };
    let Span::Coarse { records, .. } = coarse else {
        unreachable!()
    };
    let n = *records;
    let source: Vec<Seen> = (0..n).map(|k| rec(k * 3 / 2, k)).collect();
    let target: Vec<Seen> = (0..n).map(|k| rec(k, k)).collect();
    let mut same = Comparer::new(false);
    same.coarse(&source, &target);
    same.coarse_done(coarse);
    assert_eq!(same.finish().tally.matched, n);

    let mut changed = target.clone();
    changed[1].content.value += 1;
    let mut c = Comparer::new(false);
    c.coarse(&source, &changed);
    c.coarse_done(coarse);
    let out = c.finish();
    assert_eq!(out.tally.coarse_differs, n);
    assert!(matches!(
        out.findings.as_slice(),
        [Finding::CoarseDiffers { source_records, target_records, .. }]
            if *source_records == n && *target_records == n
    ));
}

#[test]
fn a_coarse_segment_partly_removed_by_retention_is_skipped_and_counted() {
    let map = coarsened();
    let all = spans(&map, [0, 0]);
    let Some(Span::Coarse {
        source, records, ..
    }) = all.spans.first().cloned()
    else {
        panic!("the first span is coarse: {all:?}");
    };
    let s = spans(&map, [source.start + 1, 0]);
    assert_eq!(s.skipped, records);
    assert!(!s.spans.iter().any(|x| matches!(x, Span::Coarse { .. })));
}

#[test]
fn compaction_explains_an_absence_when_the_key_returns_later() {
    // Source record 2 (key 2) was compacted away after replication: key 2 was written
    // again at source offset 8.
    let mut source = recs(0..8, 0);
    source.remove(2);
    source.push(rec(8, 2));
    let target = recs(0..9, 0);
    let mut c = Comparer::new(true);
    let mut t = target.clone();
    t[8] = rec(8, 2);
    c.span(&exact(0, 0, 9), &source, &t);
    let out = c.finish();
    assert_eq!(out.tally.compacted, 1, "{out:?}");
    assert!(out.tally.clean(), "{out:?}");
}

#[test]
fn compaction_explains_a_missing_tombstone() {
    let mut target = recs(0..5, 0);
    target[3].content.tombstone = true;
    let mut source = target.clone();
    source.remove(3);
    let mut c = Comparer::new(true);
    c.span(&exact(0, 0, 5), &source, &target);
    let out = c.finish();
    assert_eq!(out.tally.compacted, 1);
    assert!(out.tally.clean());
}

#[test]
fn compaction_does_not_explain_a_record_whose_key_never_returns() {
    let mut target = recs(0..5, 0);
    target.remove(3);
    let mut c = Comparer::new(true);
    c.span(&exact(0, 0, 5), &recs(0..5, 0), &target);
    let out = c.finish();
    assert_eq!(
        out.findings,
        vec![Finding::Missing {
            source: 3,
            target: None
        }]
    );
}

#[test]
fn compaction_counts_keys_written_past_the_replicated_end() {
    let mut source = recs(0..5, 0);
    source.remove(1);
    let mut c = Comparer::new(true);
    c.span(&exact(0, 0, 5), &source, &recs(0..5, 0));
    c.later(strait_offsets::Side::Source, &[rec(9, 1)]);
    let out = c.finish();
    assert_eq!(out.tally.compacted, 1);
    assert!(out.tally.clean());
}

#[test]
fn findings_are_named_up_to_the_limit_and_all_counted() {
    let n = MAX_NAMED as u64 * 2;
    let target: Vec<Seen> = (0..n).map(|k| rec(k, k + 10_000)).collect();
    let mut c = Comparer::new(false);
    c.span(&exact(0, 0, n), &recs(0..n, 0), &target);
    let out = c.finish();
    assert_eq!(out.tally.changed, n);
    assert_eq!(out.findings.len(), MAX_NAMED);
}

#[test]
fn sampling_reads_windows_spread_over_the_exact_runs() {
    let all = Spans {
        spans: vec![
            exact(0, 0, 1_000),
            Span::Gap {
                source: 1_000..1_005,
                target: 1_000..1_000,
            },
            exact(1_005, 1_000, 1_000),
        ],
        skipped: 0,
    };
    let s = sample(&all, 100, 4);
    let total: u64 = s
        .spans
        .iter()
        .map(|x| x.source().end - x.source().start)
        .sum();
    assert_eq!(total, 100);
    assert_eq!(s.spans.first(), Some(&exact(0, 0, 25)));
    assert_eq!(s.spans.last(), Some(&exact(1_980, 1_975, 25)));
    assert!(s.spans.iter().all(|x| matches!(x, Span::Exact { .. })));
    // Small enough: everything.
    assert_eq!(sample(&all, 5_000, 4), all);
}

#[test]
fn a_commit_at_the_exact_translation_is_proven_by_the_same_record() {
    let exact = Translation::Mapped {
        offset: 40,
        precision: Precision::Exact,
    };
    assert_eq!(
        judge::judge(Some(exact), Some(40)),
        Step::Prove { target: 40 }
    );
    let r = rec(0, 1).content;
    assert_eq!(
        judge::prove(40, Some((42, r)), Some((40, r))),
        GroupVerdict::Proven {
            target: 40,
            record: Some(42)
        }
    );
    assert_eq!(
        judge::prove(40, None, None),
        GroupVerdict::Proven {
            target: 40,
            record: None
        }
    );
}

#[test]
fn a_commit_at_the_translation_over_different_records_differs() {
    let v = judge::prove(
        40,
        Some((42, rec(0, 1).content)),
        Some((40, rec(0, 2).content)),
    );
    assert_eq!(v.outcome(), Outcome::Differs);
    let v = judge::prove(40, Some((42, rec(0, 1).content)), None);
    assert_eq!(
        v,
        GroupVerdict::ContentDiffers {
            target: 40,
            source_record: Some(42),
            target_record: None
        }
    );
}

#[test]
fn a_commit_past_the_translation_is_ahead_and_differs() {
    let t = Translation::Mapped {
        offset: 40,
        precision: Precision::Exact,
    };
    let Step::Done(v) = judge::judge(Some(t), Some(41)) else {
        panic!("judged without reading");
    };
    assert_eq!(
        v,
        GroupVerdict::Ahead {
            expected: 40,
            committed: 41
        }
    );
    assert_eq!(v.outcome(), Outcome::Differs);
}

#[test]
fn a_missing_or_lower_commit_is_behind_not_a_mismatch() {
    let t = Translation::Mapped {
        offset: 40,
        precision: Precision::Exact,
    };
    for committed in [None, Some(39)] {
        let Step::Done(v) = judge::judge(Some(t), committed) else {
            panic!("judged without reading");
        };
        assert_eq!(
            v,
            GroupVerdict::Behind {
                expected: 40,
                committed
            }
        );
        assert_eq!(v.outcome(), Outcome::NotYetReplicated);
    }
}

#[test]
fn a_rounded_translation_matches_without_reading() {
    let t = Translation::Mapped {
        offset: 40,
        precision: Precision::RoundedDown { at_most: 3 },
    };
    let Step::Done(v) = judge::judge(Some(t), Some(40)) else {
        panic!("judged without reading");
    };
    assert_eq!(v.outcome(), Outcome::Matches);
}

#[test]
fn untranslatable_positions_are_pending_or_differ() {
    let pending = Translation::NotYetReplicated {
        replicated_end: 10,
        counterpart_end: 10,
    };
    let before = Translation::BeforeReplication {
        replication_start: 10,
        counterpart: 0,
    };
    let outcome = |t: Option<Translation>| match judge::judge(t, Some(0)) {
        Step::Done(v) => v.outcome(),
        Step::Prove { .. } => panic!("nothing to prove"),
    };
    assert_eq!(outcome(Some(pending)), Outcome::NotYetReplicated);
    assert_eq!(outcome(None), Outcome::NotYetReplicated);
    assert_eq!(outcome(Some(before)), Outcome::Differs);
}

#[test]
fn a_partition_matches_only_when_clean_and_caught_up() {
    assert_eq!(judge::partition_outcome(true, Some(0)), Outcome::Matches);
    assert_eq!(
        judge::partition_outcome(true, Some(3)),
        Outcome::NotYetReplicated
    );
    assert_eq!(
        judge::partition_outcome(true, None),
        Outcome::NotYetReplicated
    );
    assert_eq!(judge::partition_outcome(false, Some(0)), Outcome::Differs);
}

#[test]
fn a_pace_waits_only_past_its_rate() {
    let t0 = Instant::now();
    let mut p = Pace::new(1_000, t0);
    assert_eq!(p.take(t0, 1_000), Duration::ZERO, "one second's burst");
    assert_eq!(p.take(t0, 500), Duration::from_millis(500));
    // A second later the debt is paid and half a second's worth is available again.
    let wait = p.take(t0 + Duration::from_secs(1), 500);
    assert_eq!(wait, Duration::ZERO);
}
