//! Scenario tests: the worked example of docs/offset-translation.md, the end-of-log
//! subtlety, truncation and recreation on both sides, rejected mutations and the journal.

use strait_offsets::{CheckpointKind, MapError, OffsetMap, Precision, Side, Translation, Update};

fn exact(offset: u64) -> Translation {
    Translation::Mapped {
        offset,
        precision: Precision::Exact,
    }
}

/// Replication starts at source 100; a transaction marker at 110; a compacted batch
/// (records 115, 117, 118, 120, re-encoded); an abort marker at 121.
fn example() -> OffsetMap {
    let mut map = OffsetMap::new();
    map.advance(100, 0).unwrap();
    map.append_dense(100, 10, 0).unwrap();
    map.append_dense(111, 4, 10).unwrap();
    map.append_listed(&[115, 117, 118, 120], 14).unwrap();
    map.advance_source(122).unwrap();
    map
}

#[test]
fn worked_example_forward() {
    let map = example();
    let runs: Vec<_> = map
        .runs()
        .map(|r| (r.source_start(), r.target_start(), r.len()))
        .collect();
    // Record 115 continues the run 111..=114 on both sides, so it extends it.
    assert_eq!(
        runs,
        [(100, 0, 10), (111, 10, 5), (117, 15, 2), (120, 17, 1)]
    );
    assert_eq!(map.translate(50), exact(0), "before replication began");
    assert_eq!(map.translate(100), exact(0));
    assert_eq!(map.translate(105), exact(5), "inside a run");
    assert_eq!(
        map.translate(110),
        exact(10),
        "transaction marker: next run"
    );
    assert_eq!(map.translate(116), exact(15), "compacted away: next record");
    assert_eq!(map.translate(121), exact(18), "trailing marker skipped");
    assert_eq!(map.translate(122), exact(18), "read everything replicated");
    assert_eq!(
        map.translate(123),
        Translation::NotYetReplicated {
            replicated_end: 122,
            counterpart_end: 18
        }
    );
}

#[test]
fn worked_example_reverse() {
    let map = example();
    assert_eq!(map.translate_reverse(0), exact(100));
    assert_eq!(map.translate_reverse(9), exact(109));
    assert_eq!(map.translate_reverse(10), exact(111));
    assert_eq!(map.translate_reverse(15), exact(117));
    assert_eq!(map.translate_reverse(17), exact(120));
    assert_eq!(
        map.translate_reverse(18),
        exact(122),
        "read everything: resume at the fetch position"
    );
    assert_eq!(
        map.translate_reverse(19),
        Translation::NotYetReplicated {
            replicated_end: 18,
            counterpart_end: 122
        }
    );
}

#[test]
fn end_of_last_run_needs_the_replicator_position() {
    let mut map = OffsetMap::new();
    map.append_dense(0, 10, 0).unwrap();
    // Position 10 is the end of the last run and the replicator's position: exact.
    assert_eq!(map.translate(10), exact(10));
    // Offsets 10 and 11 may be unread records not fetched yet: no answer for 12.
    assert!(matches!(
        map.translate(12),
        Translation::NotYetReplicated { .. }
    ));
    // The replicator fetched them: they were markers, so 12 resumes after record 9.
    map.advance_source(12).unwrap();
    assert_eq!(map.translate(12), exact(10));
    // The next record lands at 10 on the target: still consistent.
    map.append_dense(12, 1, 10).unwrap();
    assert_eq!(map.translate(12), exact(10));
    assert_eq!(map.translate(13), exact(11));
}

#[test]
fn target_gaps_from_own_transaction_markers() {
    let mut map = OffsetMap::new();
    map.append_dense(0, 5, 0).unwrap();
    map.advance(5, 6).unwrap(); // commit marker at target 5
    map.append_dense(5, 5, 6).unwrap();
    map.advance(10, 12).unwrap(); // commit marker at target 11
    assert_eq!(map.translate(5), exact(6));
    assert_eq!(map.translate(10), exact(12));
    assert_eq!(
        map.translate_reverse(5),
        exact(5),
        "marker maps to the next record"
    );
    assert_eq!(map.translate_reverse(11), exact(10));
    assert_eq!(map.translate_reverse(12), exact(10));
    assert_eq!(map.runs().len(), 2);
}

#[test]
fn source_retention_is_explicit() {
    let mut map = example();
    map.set_source_log_start(105).unwrap();
    let lost = Translation::Truncated {
        side: Side::Source,
        log_start: 105,
    };
    assert_eq!(map.translate(104), lost);
    assert_eq!(map.translate(105), exact(5));
    assert_eq!(
        map.translate_reverse(4),
        lost,
        "target record 4 came from source 104"
    );
    assert_eq!(map.translate_reverse(5), exact(105));
    // Retention beyond the replicator's position: the records in between were never
    // replicated; the position moves up and everything below is reported lost.
    map.set_source_log_start(130).unwrap();
    assert_eq!(map.next(Side::Source), 130);
    assert_eq!(
        map.translate(125),
        Translation::Truncated {
            side: Side::Source,
            log_start: 130
        }
    );
    assert_eq!(map.translate(130), exact(18));
    assert_eq!(map.runs().len(), 0);
    assert_eq!(
        map.translate_reverse(17),
        Translation::Truncated {
            side: Side::Source,
            log_start: 130
        }
    );
    assert_eq!(map.translate_reverse(18), exact(130));
    // Moving it back is ignored (and not journaled as a change).
    let pending = map.pending_updates();
    map.set_source_log_start(120).unwrap();
    assert_eq!(map.pending_updates(), pending);
}

#[test]
fn target_truncation_is_explicit() {
    let mut map = example();
    map.set_target_log_start(12).unwrap();
    let lost = Translation::Truncated {
        side: Side::Target,
        log_start: 12,
    };
    assert_eq!(
        map.translate(112),
        lost,
        "source 112 landed at target 11, now gone"
    );
    assert_eq!(map.translate(113), exact(12));
    assert_eq!(map.translate_reverse(11), lost);
    assert_eq!(map.translate_reverse(12), exact(113));
}

#[test]
fn target_recreated() {
    let mut map = example();
    // The target topic is recreated empty; replication continues from the current source
    // position into it.
    map.target_recreated(0, 122).unwrap();
    assert_eq!(map.runs().len(), 0);
    let lost = Translation::Truncated {
        side: Side::Target,
        log_start: 0,
    };
    assert_eq!(map.translate(105), lost);
    assert_eq!(map.translate(121), lost);
    assert_eq!(map.translate(122), exact(0));
    map.append_dense(122, 3, 0).unwrap();
    assert_eq!(map.translate(123), exact(1));
    assert_eq!(map.translate_reverse(0), exact(122));

    // Or it is copied again from an earlier source offset.
    let mut map = example();
    map.target_recreated(0, 100).unwrap();
    map.append_dense(100, 10, 0).unwrap();
    assert_eq!(map.translate(99), lost);
    assert_eq!(map.translate(105), exact(5));
}

#[test]
fn source_recreated() {
    let mut map = example();
    map.source_recreated(0, 18).unwrap();
    map.append_dense(0, 5, 18).unwrap();
    assert_eq!(map.translate(2), exact(20));
    let lost = Translation::Truncated {
        side: Side::Source,
        log_start: 0,
    };
    assert_eq!(
        map.translate_reverse(17),
        lost,
        "came from the old source topic"
    );
    assert_eq!(map.translate_reverse(18), exact(0));
    // The target is append-only: the new topic cannot land below the target position.
    assert_eq!(
        map.source_recreated(0, 3),
        Err(MapError::Regression {
            side: Side::Target,
            offset: 3,
            next: 23
        })
    );
}

#[test]
fn rejected_mutations_change_nothing() {
    let mut map = example();
    let before = map.clone();
    let pending = map.pending_updates();
    assert_eq!(map.append_dense(122, 0, 18), Err(MapError::EmptyBatch));
    assert_eq!(
        map.append_dense(121, 1, 18),
        Err(MapError::Regression {
            side: Side::Source,
            offset: 121,
            next: 122
        })
    );
    assert_eq!(
        map.append_dense(122, 1, 17),
        Err(MapError::Regression {
            side: Side::Target,
            offset: 17,
            next: 18
        })
    );
    assert_eq!(map.append_listed(&[], 18), Err(MapError::EmptyBatch));
    assert_eq!(
        map.append_listed(&[125, 130, 130], 18),
        Err(MapError::NotIncreasing {
            previous: 130,
            offset: 130
        })
    );
    assert!(matches!(
        map.append_dense(i64::MAX as u64, 1, 18),
        Err(MapError::OutOfRange {
            side: Side::Source,
            ..
        })
    ));
    assert!(matches!(
        map.append_listed(&[200, u64::MAX], 18),
        Err(MapError::OutOfRange {
            side: Side::Source,
            ..
        })
    ));
    assert!(matches!(
        map.advance(121, 18),
        Err(MapError::Regression { .. })
    ));
    assert!(matches!(
        map.set_target_log_start(u64::MAX),
        Err(MapError::OutOfRange {
            side: Side::Target,
            ..
        })
    ));
    assert_eq!(map, before);
    assert_eq!(map.pending_updates(), pending);
}

#[test]
fn coarsening_rounds_down_and_reports_where_exactness_starts() {
    let mut map = OffsetMap::with_budget(8);
    // Records at source 0..=8 then a marker, repeated: 20 runs of 9 records.
    for i in 0..20u64 {
        map.append_dense(i * 10, 9, i * 9).unwrap();
    }
    let stats = map.stats();
    assert!(stats.runs + stats.coarse_segments <= 8);
    assert!(stats.coarse_segments > 0);
    let exact_from = map.exact_from(Side::Source);
    assert!(exact_from > 0 && exact_from < 200);
    assert_eq!(stats.exact_from_source, exact_from);
    for c in 0..200u64 {
        let truth = if c % 10 == 9 {
            (c / 10 + 1) * 9
        } else {
            c / 10 * 9 + c % 10
        };
        match map.translate(c) {
            Translation::Mapped {
                offset,
                precision: Precision::Exact,
            } => assert_eq!(offset, truth, "position {c}"),
            Translation::Mapped {
                offset,
                precision: Precision::RoundedDown { at_most },
            } => {
                assert!(c < exact_from);
                assert!(offset < truth || at_most > 0);
                assert!(offset <= truth && truth - offset <= at_most, "position {c}");
            }
            other => panic!("position {c}: {other:?}"),
        }
    }
    // A coarse segment of k runs with one-offset gaps is off by fewer than k records.
    let worst = map
        .coarse_segments()
        .iter()
        .map(|s| s.gaps(Side::Source))
        .max()
        .unwrap();
    assert!(worst < 20);
}

#[test]
fn the_offset_is_given_only_when_the_position_mapped() {
    let map = example();
    assert_eq!(map.translate(105).offset(), Some(5), "inside a run");
    assert_eq!(
        map.translate(116).offset(),
        Some(15),
        "in a gap: the next run"
    );
    assert!(matches!(
        map.translate(200),
        Translation::NotYetReplicated { .. }
    ));
    assert_eq!(map.translate(200).offset(), None, "past the replicated end");
}

#[test]
fn only_an_exact_mapping_is_exact_never_a_rounded_down_or_unmapped_one() {
    let map = example();
    assert!(map.translate(105).is_exact());
    assert!(!map.translate(200).is_exact(), "not yet replicated");
    // Coarsened history (as in the test above) answers rounded down.
    let mut map = OffsetMap::with_budget(8);
    for i in 0..20u64 {
        map.append_dense(i * 10, 9, i * 9).unwrap();
    }
    let rounded = (0..map.exact_from(Side::Source))
        .map(|c| map.translate(c))
        .find(|t| {
            matches!(
                t,
                Translation::Mapped {
                    precision: Precision::RoundedDown { .. },
                    ..
                }
            )
        })
        .expect("a position in coarsened history");
    assert!(!rounded.is_exact());
    assert!(rounded.offset().is_some(), "rounded down still maps");
}

#[test]
fn journal_coalesces_dense_flows_and_implied_advances() {
    let mut map = OffsetMap::new();
    for i in 0..1000u64 {
        map.append_dense(i * 10, 10, i * 10).unwrap();
    }
    assert_eq!(map.pending_updates(), 1, "a dense flow journals one update");
    let checkpoint = map.take_checkpoint().unwrap();
    assert_eq!(checkpoint.kind, CheckpointKind::Delta);
    assert_eq!(checkpoint.seq, 1);
    assert!(map.take_checkpoint().is_none());

    // A transactional flow: batch, marker, batch, marker, ...
    for i in 0..100u64 {
        let s = 10_000 + i * 11;
        map.append_dense(s, 10, 10_000 + i * 10).unwrap();
        map.advance_source(s + 11).unwrap();
    }
    // The advance before each batch is implied by the batch; the last one is kept.
    assert_eq!(map.pending_updates(), 101);
    let delta = strait_offsets::Delta::decode(&map.take_checkpoint().unwrap().bytes).unwrap();
    assert_eq!(delta.seq(), 2);
    assert!(matches!(
        delta.updates()[100],
        Update::Advance {
            source_next: 11_100,
            ..
        }
    ));
}

#[test]
fn journal_overflow_asks_for_a_snapshot() {
    let mut map = OffsetMap::with_budget(1_000);
    for i in 0..(strait_offsets::MAX_PENDING_UPDATES as u64 + 10) {
        map.append_dense(i * 2, 1, i).unwrap();
    }
    assert_eq!(map.pending_updates(), 0);
    let checkpoint = map.take_checkpoint().unwrap();
    assert_eq!(checkpoint.kind, CheckpointKind::Snapshot);
    assert_eq!(checkpoint.seq, 1);
    let restored = OffsetMap::from_snapshot(&checkpoint.bytes, 1_000).unwrap();
    assert_eq!(restored, map);
    assert!(map.take_checkpoint().is_none());
}
