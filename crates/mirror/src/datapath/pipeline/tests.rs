//! The pipeline's rules, one test each (named after the rule), without sockets.

use bytes::Bytes;
use strait_offsets::{OffsetMap, Side};
use strait_records::{Batch, BatchBuilder, Compression, Limits, MergeOptions, Record, split};

use super::*;
use crate::config::model::IncidentPolicy;
use crate::error::{IncidentKind, MirrorError};

/// The source record at `offset` (its content names it).
pub(super) fn source_record(offset: i64) -> Record {
    Record {
        offset,
        timestamp: 1_700_000_000_000 + offset,
        key: Some(Bytes::from(format!("k{offset}"))),
        value: Some(Bytes::from(format!("v{offset}"))),
        headers: Vec::new(),
    }
}

/// A batch at `base` holding `records` (the base offset is outside the CRC, so it is
/// written into the built bytes).
pub(super) fn batch_of(base: i64, records: &[Record]) -> Batch {
    let mut b = BatchBuilder::new(Compression::None);
    for r in records {
        b.push_record(r).expect("push");
    }
    let mut raw = b.build().expect("build").as_bytes().to_vec();
    raw[..8].copy_from_slice(&base.to_be_bytes());
    split(Bytes::from(raw), &Limits::default())
        .expect("split")
        .batches
        .remove(0)
}

/// A source batch of `n` records at `base..base + n`.
pub(super) fn source_batch(base: i64, n: i64) -> Batch {
    let records: Vec<Record> = (base..base + n).map(source_record).collect();
    batch_of(base, &records)
}

/// One record set holding `batches` (base, count) back to back.
pub(super) fn record_set(batches: &[(i64, i64)]) -> Bytes {
    let mut out = Vec::new();
    for &(base, n) in batches {
        out.extend_from_slice(source_batch(base, n).as_bytes());
    }
    Bytes::from(out)
}

pub(super) fn settings(start: i64, until: Option<i64>, policies: Policies) -> Settings {
    Settings {
        start,
        max_batch_bytes: 1 << 20,
        until,
        policies,
        max_in_flight: 5,
        merge: MergeOptions::new(1 << 20),
        target_topic: "dst".into(),
        source_cluster: "src".into(),
        recovers_by_content: true,
    }
}

fn map_at(source: u64, target: u64) -> OffsetMap {
    let mut m = OffsetMap::new();
    m.advance(source, target).expect("advance");
    m
}

/// What a test pipeline did, with `Record` applied to the map as the driver would.
#[derive(Debug, Default)]
struct Done {
    produced: Vec<Batch>,
    recorded: Vec<Recorded>,
    other: Vec<String>,
}

struct Harness {
    p: Pipeline<()>,
    map: OffsetMap,
    /// The target partition's batches, answering [`Action::CheckTarget`] (None: the check
    /// is left unanswered).
    target: Option<Vec<Batch>>,
}

impl Harness {
    fn new(start: u64, until: Option<i64>, policy: IncidentPolicy) -> Self {
        Self::recovering(start, until, policy, Recovery::none(), 0)
    }

    fn recovering(
        start: u64,
        until: Option<i64>,
        policy: IncidentPolicy,
        recovery: Recovery,
        target: u64,
    ) -> Self {
        let map = map_at(start, target);
        let p = Pipeline::new(
            settings(start as i64, until, Policies::all(policy)),
            &map,
            recovery,
        );
        Harness {
            p,
            map,
            target: Some(Vec::new()),
        }
    }

    /// A pipeline at (0, 0) whose queue merges nothing: batches wait one by one for a slot
    /// of the window (5).
    fn unmerged(until: Option<i64>) -> Self {
        let mut h = Harness::new(0, until, IncidentPolicy::Fail);
        let mut s = settings(0, until, Policies::all(IncidentPolicy::Fail));
        s.merge = MergeOptions::new(1);
        h.p = Pipeline::new(s, &h.map, Recovery::none());
        h
    }

    fn fetch(&mut self, batches: &[(i64, i64)]) -> Result<Option<Planned>, MirrorError> {
        let position = batches.first().map_or(0, |b| b.0);
        self.p.fetched(Fetched {
            generation: self.p.generation(),
            position,
            records: record_set(batches),
            aborted: &[],
            stable: None,
            pin: (),
        })
    }

    fn run(&mut self) -> Result<Done, MirrorError> {
        let mut done = Done::default();
        while let Some(a) = self.p.next_action(|_, _| None) {
            match &a {
                Action::Produce { batch, .. } => done.produced.push(batch.clone()),
                Action::Record => done.recorded.extend(self.p.record(&mut self.map)?),
                &Action::CheckTarget { from, to, .. } => {
                    done.other.push(format!("{a:?}"));
                    if let Some(target) = &self.target {
                        let batches: Vec<Batch> = target
                            .iter()
                            .filter(|b| {
                                let h = b.header();
                                let next = h.base_offset + i64::from(h.last_offset_delta) + 1;
                                next > from as i64 && h.base_offset < to as i64
                            })
                            .cloned()
                            .collect();
                        self.p.target_read(from, &batches);
                    }
                }
                other => done.other.push(format!("{other:?}")),
            }
        }
        Ok(done)
    }

    fn next(&self) -> (u64, u64) {
        (self.map.next(Side::Source), self.map.next(Side::Target))
    }
}

#[test]
fn a_record_set_of_an_older_generation_is_dropped() {
    let mut h = Harness::new(0, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 0);
    h.run().expect("run");
    h.p.log_start(0).expect("skip");
    h.run().expect("run");
    assert_eq!(h.p.generation(), 1);
    let planned = h.p.fetched(Fetched {
        generation: 0,
        position: 0,
        records: record_set(&[(0, 3)]),
        aborted: &[],
        stable: None,
        pin: (),
    });
    assert_eq!(planned.expect("no error"), None);
    assert!(h.run().expect("run").produced.is_empty());
}

#[test]
fn an_out_of_range_answer_of_an_older_generation_is_dropped() {
    let mut h = Harness::new(0, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 0);
    h.run().expect("run");
    h.p.log_start(5).expect("skip");
    h.run().expect("run");
    assert_eq!(h.p.generation(), 1);
    // The answer to a fetch made before the feed moved to the log start.
    h.p.out_of_range(0, 0);
    assert!(h.p.wants_feed(), "the feed goes on from the log start");
    assert!(
        h.run().expect("run").other.is_empty(),
        "no log start asked for"
    );
}

#[test]
fn batches_are_produced_while_the_window_has_room_and_recorded_where_they_land() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    let batches: Vec<(i64, i64)> = (0..7).map(|i| (i * 2, 2)).collect();
    h.fetch(&batches).expect("plan");
    let d = h.run().expect("run");
    // Seven queued, five slots: the queue merges what the window cannot take at once.
    assert!(h.p.in_flight() <= 5);
    let produced: i64 = d
        .produced
        .iter()
        .map(|b| i64::from(b.header().records_count))
        .sum();
    assert!(d.produced.len() <= 5, "{}", d.produced.len());
    assert_eq!(produced, 14, "every record is in a produced batch");
    let mut target = 0;
    for b in &d.produced {
        h.p.acked(target).expect("ack");
        target += i64::from(b.header().records_count);
    }
    let d = h.run().expect("record");
    assert_eq!(d.recorded.iter().map(|r| r.records).sum::<u64>(), 14);
    assert_eq!(h.next(), (14, 14));
}

#[test]
fn the_window_holds_the_batches_handed_on_and_not_acknowledged() {
    let mut h = Harness::unmerged(None);
    let batches: Vec<(i64, i64)> = (0..8).map(|i| (i, 1)).collect();
    h.fetch(&batches).expect("plan");
    assert_eq!(h.run().expect("run").produced.len(), 5);
    assert_eq!(h.p.in_flight(), 5, "the window is full; three batches wait");
    h.p.acked(0).expect("ack");
    h.p.acked(1).expect("ack");
    assert_eq!(h.p.in_flight(), 3);
    assert_eq!(
        h.run().expect("run").produced.len(),
        2,
        "one batch a slot freed"
    );
    assert_eq!(h.p.in_flight(), 5);
    for target in 2..8 {
        h.p.acked(target).expect("ack");
        h.run().expect("run");
    }
    assert_eq!(h.p.in_flight(), 0);
    assert_eq!(h.next(), (8, 8));
}

#[test]
fn an_ack_without_an_offset_is_recorded_where_the_map_expects_it() {
    let mut h = Harness::new(100, None, IncidentPolicy::Fail);
    h.fetch(&[(100, 3)]).expect("plan");
    assert_eq!(h.run().expect("run").produced.len(), 1);
    h.p.acked(-1).expect("ack");
    h.run().expect("record");
    assert_eq!(h.next(), (103, 3));
}

#[test]
fn a_map_update_waits_for_the_acks_of_the_batches_before_it() {
    let mut h = Harness::new(0, Some(3), IncidentPolicy::Fail);
    h.fetch(&[(0, 3)]).expect("plan");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1);
    // "Reached the end" is queued behind the batch: not done before its ack.
    assert!(!d.other.iter().any(|a| a == "Done"), "{:?}", d.other);
    assert!(!h.p.is_done(), "not done before the batch is recorded");
    h.p.acked(0).expect("ack");
    let d = h.run().expect("record");
    assert_eq!(d.other, ["Done"]);
    assert!(h.p.is_done(), "done once the map is at until");
    assert_eq!(h.next(), (3, 3));
}

#[test]
fn once_a_record_set_at_or_past_until_pauses_the_feed_and_is_dropped() {
    let mut h = Harness::new(0, Some(5), IncidentPolicy::Fail);
    assert_eq!(h.fetch(&[(5, 2)]).expect("no error"), None);
    let d = h.run().expect("run");
    assert!(d.produced.is_empty());
    assert_eq!(d.other, ["PauseFeed"]);
}

#[test]
fn once_the_record_set_reaching_until_pauses_the_feed() {
    let mut h = Harness::new(0, Some(4), IncidentPolicy::Fail);
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    let d = h.run().expect("run");
    assert!(d.other.iter().any(|a| a == "PauseFeed"), "{:?}", d.other);
}

#[test]
fn once_done_at_start_when_the_map_is_at_until() {
    let mut h = Harness::new(10, Some(10), IncidentPolicy::Fail);
    assert_eq!(h.run().expect("run").other, ["Done"]);
}

#[test]
fn steps_the_target_already_holds_are_recorded_not_produced() {
    // The target holds source records 0..4 at target offsets 0..4, in other boundaries.
    let tail = [batch_of(0, &(0..4).map(source_record).collect::<Vec<_>>())];
    let recovery = Recovery::from_target(&tail, 0, 4, Limits::default()).expect("decode");
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, recovery, 0);
    h.fetch(&[(0, 2), (2, 2), (4, 1)]).expect("plan");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1, "only the record past the target's end");
    assert_eq!(d.produced[0].header().records_count, 1);
    assert!(
        d.other.iter().any(|a| a.starts_with("Recovered")),
        "{:?}",
        d.other
    );
    assert_eq!(
        h.next(),
        (4, 4),
        "the matched records are in the map, the new one is not yet"
    );
}

fn foreign_tail() -> Recovery {
    let foreign = Record {
        value: Some(Bytes::from_static(b"not ours")),
        ..source_record(0)
    };
    let tail = [batch_of(0, &[foreign])];
    Recovery::from_target(&tail, 0, 1, Limits::default()).expect("decode")
}

#[test]
fn a_recovery_mismatch_fails_under_policy_fail() {
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, foreign_tail(), 0);
    let e = h.fetch(&[(0, 2)]).expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
    assert!(e.to_string().contains("on_target_mismatch"), "{e}");
    assert!(h.run().expect("nothing more").produced.is_empty());
}

#[test]
fn a_recovery_mismatch_under_skip_resets_the_target_side_to_the_target_end() {
    let mut h = Harness::recovering(0, None, IncidentPolicy::Skip, foreign_tail(), 0);
    h.fetch(&[(0, 2)]).expect("skip");
    let d = h.run().expect("run");
    assert!(
        d.other.iter().any(|a| a.contains("TargetMismatch")),
        "{:?}",
        d.other
    );
    assert_eq!(
        d.produced.len(),
        1,
        "the step is produced after the foreign record"
    );
    assert_eq!(
        h.next(),
        (0, 1),
        "the map's target side restarts at the target end"
    );
    h.p.acked(1).expect("ack");
    h.run().expect("record");
    assert_eq!(h.next(), (2, 3));
}

#[test]
fn an_ack_below_the_map_under_skip_restarts_the_target_side_where_it_landed() {
    // (Past the map is not this incident: the target is read first, then the partition
    // restarts for recovery; see the live-duplicate tests.)
    let mut h = Harness::recovering(0, None, IncidentPolicy::Skip, Recovery::none(), 10);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(5).expect("ack");
    let d = h.run().expect("skip");
    assert!(
        d.other.iter().any(|a| a.contains("TargetMismatch")),
        "{:?}",
        d.other
    );
    assert_eq!(h.next(), (2, 7));
}

#[test]
fn a_failed_batch_fails_the_pipeline_and_nothing_after_it_is_recorded() {
    let mut h = Harness::new(0, None, IncidentPolicy::Skip);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    let e = h.p.produce_failed(strait_client::Error::new(
        strait_client::ErrorKind::ConnectionClosed,
    ));
    assert!(e.to_string().starts_with("produce"), "{e}");
    h.fetch(&[(2, 2)]).expect("dropped");
    let d = h.run().expect("run");
    assert!(d.produced.is_empty() && d.recorded.is_empty());
    assert_eq!(h.next(), (0, 0));
}

#[test]
fn nothing_is_fetched_while_the_log_start_is_awaited() {
    let mut h = Harness::new(10, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 10);
    assert!(!h.p.wants_feed());
    assert_eq!(h.run().expect("run").other, ["NeedLogStart"]);
    h.p.log_start(20).expect("skip");
    assert!(h.p.wants_feed());
}

#[test]
fn out_of_range_below_the_log_start_skips_to_it_under_skip() {
    let mut h = Harness::new(10, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 10);
    h.run().expect("run");
    h.p.log_start(20).expect("skip");
    let d = h.run().expect("run");
    assert!(d.other[0].contains("SourceTruncation"), "{:?}", d.other);
    assert!(
        d.other[1].contains("Reposition { position: 20, generation: 1, recreated: false }"),
        "{:?}",
        d.other
    );
    assert_eq!(h.next(), (20, 0));
}

#[test]
fn out_of_range_below_the_log_start_is_a_deletion_at_or_past_it_a_restart() {
    // Below the log start: records were deleted before we read them; the map keeps its
    // history and its source position moves to the log start.
    let mut h = Harness::new(10, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 10);
    h.run().expect("run");
    h.p.log_start(11).expect("skip");
    let d = h.run().expect("run");
    assert!(
        d.other[0].contains("were not replicated yet"),
        "{:?}",
        d.other
    );
    // At the log start and still out of range: the log ends before it (truncated or
    // re-created), so the map restarts there.
    let mut h = Harness::new(20, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 20);
    h.run().expect("run");
    h.p.log_start(20).expect("skip");
    let d = h.run().expect("run");
    assert!(
        d.other[0].contains("past the end of the source log"),
        "{:?}",
        d.other
    );
}

#[test]
fn a_trailing_duplicate_found_by_recovery_is_mapped_to_nothing() {
    // Source record 0 was appended twice (a re-send landing after the original) and the
    // state was written before either: the next batch lands after the duplicate, at 2,
    // and an answer without an offset must be recorded there, not at 1.
    let copy = || batch_of(0, &[source_record(0)]);
    let second = batch_of(1, &[source_record(0)]);
    let tail = [copy(), second];
    let recovery = Recovery::from_target(&tail, 0, 2, Limits::default()).expect("decode");
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, recovery, 0);
    h.fetch(&[(0, 1), (1, 1)]).expect("plan");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1);
    assert!(
        d.other.iter().any(|a| a == "Recovered { duplicates: 1 }"),
        "{:?}",
        d.other
    );
    assert_eq!(h.next(), (1, 2));
    h.p.acked(-1).expect("ack");
    h.run().expect("record");
    assert_eq!(h.next(), (2, 3));
}

#[test]
fn out_of_range_fails_under_policy_fail() {
    let mut h = Harness::new(10, None, IncidentPolicy::Fail);
    h.p.out_of_range(0, 10);
    h.run().expect("run");
    let e = h.p.log_start(20).expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::SourceTruncation));
    assert!(e.to_string().contains("on_source_truncation"), "{e}");
}

#[test]
fn out_of_range_past_the_end_restarts_the_map_at_the_log_start() {
    let mut h = Harness::new(50, None, IncidentPolicy::Skip);
    h.p.out_of_range(0, 50);
    h.run().expect("run");
    h.p.log_start(0).expect("skip");
    h.run().expect("run");
    assert_eq!(h.next(), (0, 0));
}

#[test]
fn a_source_recreation_restarts_the_map_at_the_new_log_start() {
    let mut h = Harness::new(50, None, IncidentPolicy::Fail);
    h.p.source_recreated();
    assert_eq!(h.run().expect("run").other, ["NeedLogStart"]);
    h.p.log_start(3).expect("decided by the flow");
    let d = h.run().expect("run");
    assert!(d.other[0].contains("recreated: true"), "{:?}", d.other);
    assert_eq!(h.next(), (3, 0));
}

#[test]
fn a_map_restart_for_a_recreation_is_counted_only_once_it_is_in_the_map() {
    // The flow saves a re-created topic's new id only with a map restarted for it.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.source_recreated();
    h.run().expect("run");
    h.p.log_start(0).expect("log start");
    h.run().expect("run");
    assert_eq!(h.p.recreations(), 0, "behind the batch in flight");
    h.p.acked(0).expect("ack");
    h.run().expect("record");
    assert_eq!(h.p.recreations(), 1, "applied to the map");
}

#[test]
fn stop_produces_nothing_more_but_records_acks_in_flight() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.stop();
    assert!(!h.p.wants_feed());
    assert!(!h.p.is_finished(), "a batch is in flight");
    h.p.acked(0).expect("ack");
    h.run().expect("record");
    assert!(h.p.is_finished());
    assert_eq!(h.next(), (2, 2));
}

#[test]
fn feed_end_hands_on_queued_work_then_finishes() {
    let mut h = Harness::unmerged(None);
    let batches: Vec<(i64, i64)> = (0..8).map(|i| (i, 1)).collect();
    h.fetch(&batches).expect("plan");
    h.p.feed_ended();
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 5, "the window");
    assert!(!h.p.is_finished());
    let mut acked = 0;
    while !h.p.is_finished() {
        h.p.acked(acked).expect("ack");
        acked += 1;
        h.run().expect("run");
    }
    assert_eq!(h.next(), (8, 8));
}

/// Target batches holding the source records `source` (base, count), laid out from target
/// offset `at` in this order (a batch appears twice when it was appended twice).
fn laid_out(at: u64, source: &[(i64, i64)]) -> Vec<Batch> {
    let mut off = at as i64;
    source
        .iter()
        .map(|&(base, n)| {
            let records: Vec<Record> = (base..base + n).map(source_record).collect();
            let b = batch_of(off, &records);
            off += n;
            b
        })
        .collect()
}

fn duplicates_reported(d: &Done) -> Vec<&String> {
    d.other
        .iter()
        .filter(|a| a.starts_with("Duplicates"))
        .collect()
}

#[test]
fn an_ack_past_the_map_waits_for_the_target_to_be_read() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = None;
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(2).expect("ack");
    let d = h.run().expect("asks");
    assert_eq!(
        d.other,
        vec!["CheckTarget { from: 0, expected: 0, to: 2 }".to_owned()]
    );
    assert_eq!(
        h.next(),
        (0, 0),
        "nothing recorded before the target is read"
    );
    assert!(h.run().expect("waits").other.is_empty(), "asked once");
    h.p.target_read(0, &laid_out(0, &[(0, 2), (0, 2)]));
    h.run().expect("record");
    assert_eq!(h.next(), (2, 4));
}

#[test]
fn a_repeat_of_records_recorded_before_is_a_duplicate_and_the_map_moves_past_it() {
    // A (source 0..2) recorded at 0; a request of A appended again at 2; B lands at 4.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(laid_out(0, &[(0, 2), (0, 2), (2, 2)]));
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(0).expect("ack A");
    h.run().expect("record A");
    assert_eq!(h.next(), (2, 2));
    h.p.acked(4).expect("ack B");
    let d = h.run().expect("a duplicate, not an incident");
    assert_eq!(
        duplicates_reported(&d),
        vec!["Duplicates { records: 2, from: 2, to: 4 }"]
    );
    assert_eq!(h.next(), (4, 6));
    let runs: Vec<(u64, u64, u64)> = h
        .map
        .runs()
        .map(|r| (r.source_start(), r.target_start(), r.len()))
        .collect();
    assert_eq!(
        runs,
        vec![(0, 0, 2), (2, 4, 2)],
        "the duplicate maps to nothing"
    );
}

#[test]
fn a_copy_of_the_acked_batch_landing_before_it_is_a_duplicate() {
    // A request of A given up on (delivery timeout) landed after the restart read the
    // target's end, just before A's re-send.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(laid_out(0, &[(0, 2), (0, 2)]));
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(2).expect("ack");
    let d = h.run().expect("a duplicate");
    assert_eq!(duplicates_reported(&d).len(), 1);
    assert_eq!(h.next(), (2, 4));
}

#[test]
fn copies_of_batches_sent_after_the_acked_one_are_duplicates() {
    // Requests of A and B (given up on) landed before A's and B's re-sends.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(laid_out(0, &[(0, 2), (2, 1), (0, 2), (2, 1)]));
    h.fetch(&[(0, 2), (2, 1)]).expect("plan");
    h.run().expect("run");
    h.p.acked(3).expect("ack A");
    h.p.acked(5).expect("ack B");
    let d = h.run().expect("duplicates");
    assert_eq!(
        duplicates_reported(&d),
        vec!["Duplicates { records: 3, from: 0, to: 3 }"]
    );
    assert_eq!(h.next(), (3, 6));
}

#[test]
fn acks_behind_a_checked_one_wait_for_the_check() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = None;
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(2).expect("ack A");
    h.p.acked(4).expect("ack B");
    h.run().expect("asks");
    assert_eq!(h.next(), (0, 0), "B is not recorded before A");
    h.p.target_read(0, &laid_out(0, &[(0, 2), (0, 2), (2, 2)]));
    let d = h.run().expect("record");
    assert_eq!(d.recorded.len(), 2);
    assert_eq!(h.next(), (4, 6));
}

/// The error that restarts the partition for recovery: not an incident, so no policy
/// applies and the flow goes on.
fn assert_restarts_for_recovery(e: &MirrorError) {
    assert_eq!(e.incident_kind(), None, "{e}");
    assert!(!e.stops_flow(), "{e}");
    assert!(e.to_string().contains("recovery matches"), "{e}");
}

#[test]
fn records_between_that_are_not_ours_restart_the_partition_for_recovery() {
    let foreign: Vec<Record> = (0..2)
        .map(|i| Record {
            value: Some(Bytes::from_static(b"not ours")),
            ..source_record(i)
        })
        .collect();
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(vec![batch_of(0, &foreign)]);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(2).expect("ack");
    let e = h.run().expect_err("restart");
    assert_restarts_for_recovery(&e);
    assert_eq!(h.next(), (0, 0), "nothing recorded");
    // The restart's recovery finds them foreign: that is the incident.
    let tail = [
        batch_of(0, &foreign),
        batch_of(2, &[source_record(0), source_record(1)]),
    ];
    let recovery = Recovery::from_target(&tail, 0, 4, Limits::default()).expect("decode");
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, recovery, 0);
    let e = h.fetch(&[(0, 2)]).expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
}

#[test]
fn exactly_once_keeps_records_between_that_are_not_ours_the_incident() {
    // Its restart reads no tail: past the last commit it skips what it takes for its own
    // aborted data, so a foreign record must be the incident here.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.p = Pipeline::new(
        Settings {
            recovers_by_content: false,
            ..settings(0, None, Policies::all(IncidentPolicy::Fail))
        },
        &h.map,
        Recovery::none(),
    );
    h.target = Some(Vec::new());
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(2).expect("ack");
    let e = h.run().expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
}

#[test]
fn a_hole_between_is_not_a_duplicate() {
    // Only 2 of the 4 offsets before the ack hold (duplicate) records.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(laid_out(0, &[(0, 2)]));
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(4).expect("ack");
    let e = h.run().expect_err("restart");
    assert_restarts_for_recovery(&e);
}

#[test]
fn a_previous_writers_late_merged_batch_is_matched_by_content_after_the_restart() {
    // Scale-out hand-over: the previous owner's merged batch of source 0..6 landed at 0
    // after this member read the target's end; this member's A (source 0..2) landed
    // behind it, at 6. The pipeline holds only A: it cannot prove 2..6 ours.
    let late: Vec<Record> = (0..6).map(source_record).collect();
    let a: Vec<Record> = (0..2).map(source_record).collect();
    let tail = vec![batch_of(0, &late), batch_of(6, &a)];
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = Some(tail.clone());
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(6).expect("ack A");
    let e = h.run().expect_err("restart");
    assert_restarts_for_recovery(&e);
    assert_eq!(h.next(), (0, 0), "nothing recorded");
    // The restart: recovery over the target past the map, the source re-planned in
    // other boundaries. The late batch is the copy kept, A's records the duplicate.
    let recovery = Recovery::from_target(&tail, 0, 8, Limits::default()).expect("decode");
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, recovery, 0);
    h.fetch(&[(0, 3), (3, 3), (6, 2)]).expect("no incident");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1, "only what nobody wrote: {d:?}");
    assert_eq!(d.produced[0].header().records_count, 2);
    assert!(
        d.other
            .iter()
            .any(|a| a.starts_with("Recovered { duplicates: 2")),
        "{:?}",
        d.other
    );
    assert_eq!(
        h.next(),
        (6, 8),
        "source 0..6 where the late batch holds them"
    );
}

#[test]
fn an_ack_below_the_map_is_the_incident_without_reading_the_target() {
    let mut h = Harness::recovering(0, None, IncidentPolicy::Fail, Recovery::none(), 10);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(5).expect("ack");
    let e = h.run().expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
}

#[test]
fn known_gaps_move_the_map_past_our_markers_before_the_batch_is_recorded() {
    // Exactly-once: A lands at 0..2, our commit marker takes 2, B lands at 3.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = None;
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(0).expect("ack A");
    h.p.acked_after(3, 1).expect("ack B after the marker");
    let d = h.run().expect("no incident, no target read");
    assert!(d.other.is_empty(), "{:?}", d.other);
    assert_eq!(h.next(), (4, 5));
    let runs: Vec<(u64, u64, u64)> = h
        .map
        .runs()
        .map(|r| (r.source_start(), r.target_start(), r.len()))
        .collect();
    assert_eq!(runs, vec![(0, 0, 2), (2, 3, 2)], "the marker is a gap");
}

#[test]
fn an_ack_without_an_offset_after_a_known_gap_lands_past_the_gap() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = None;
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(0).expect("ack A");
    h.p.acked_after(-1, 1).expect("B re-sent, already held");
    h.run().expect("record");
    assert_eq!(h.next(), (4, 5));
}

#[test]
fn an_ack_past_the_known_gap_is_still_checked_against_the_target() {
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.target = None;
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(0).expect("ack A");
    h.p.acked_after(5, 1).expect("B lands 2 past the marker");
    let d = h.run().expect("asks");
    assert_eq!(
        d.other,
        vec!["CheckTarget { from: 0, expected: 3, to: 5 }".to_owned()]
    );
}

/// A transaction marker (a control batch of one record) at `base`.
fn marker_at(base: i64) -> Batch {
    let mut b = BatchBuilder::new(Compression::None);
    b.push(
        0,
        Some(&[0, 0, 0, 0][..]),
        Some(&[0, 0, 0, 0, 0, 0][..]),
        &[],
    )
    .expect("push");
    let mut raw = b.build().expect("build").as_bytes().to_vec();
    raw[..8].copy_from_slice(&base.to_be_bytes());
    // Attributes (bytes 21..23): control | transactional; the CRC covers them.
    raw[21..23].copy_from_slice(&0x30i16.to_be_bytes());
    let crc = crc32c::crc32c(&raw[21..]);
    raw[17..21].copy_from_slice(&crc.to_be_bytes());
    split(Bytes::from(raw), &Limits::default())
        .expect("split")
        .batches
        .remove(0)
}

#[test]
fn a_transaction_marker_between_holds_no_records_and_is_skipped() {
    // A (source 0..2) recorded at 0; an older transaction's marker landed at 2 after the
    // bounds were read; B (source 2..4) lands at 3.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    let mut target = laid_out(0, &[(0, 2)]);
    target.push(marker_at(2));
    target.extend(laid_out(3, &[(2, 2)]));
    h.target = Some(target);
    h.fetch(&[(0, 2), (2, 2)]).expect("plan");
    h.run().expect("run");
    h.p.acked(0).expect("ack A");
    h.run().expect("record A");
    h.p.acked(3).expect("ack B");
    let d = h.run().expect("a marker, not an incident");
    assert_eq!(
        duplicates_reported(&d),
        vec!["Duplicates { records: 0, from: 2, to: 3 }"]
    );
    assert_eq!(h.next(), (4, 5));
}

#[test]
fn a_pipeline_that_gave_its_queues_back_decides_as_one_that_kept_them() {
    // A parked partition shrinks its queues (`Pipeline::shrink_to_fit`); that must change
    // no decision. Twins get the same events, one shrinking before each.
    let mut kept = Harness::new(0, Some(40), IncidentPolicy::Fail);
    let mut shrunk = Harness::new(0, Some(40), IncidentPolicy::Fail);
    let mut acked = [0i64; 2];
    for round in 0..4i64 {
        let batches: Vec<(i64, i64)> = (0..5).map(|i| (round * 10 + i * 2, 2)).collect();
        let mut outcomes = Vec::new();
        for (n, h) in [&mut kept, &mut shrunk].into_iter().enumerate() {
            if n == 1 {
                h.p.shrink_to_fit();
            }
            h.fetch(&batches).expect("plan");
            if n == 1 {
                h.p.shrink_to_fit();
            }
            let d = h.run().expect("run");
            for b in &d.produced {
                h.p.acked(acked[n]).expect("ack");
                acked[n] += i64::from(b.header().records_count);
            }
            if n == 1 {
                h.p.shrink_to_fit();
            }
            let r = h.run().expect("record");
            let produced: Vec<Vec<u8>> = d.produced.iter().map(|b| b.as_bytes().to_vec()).collect();
            outcomes.push((produced, r.recorded.len(), r.other, h.next(), h.p.is_done()));
        }
        assert_eq!(outcomes[0], outcomes[1], "round {round}");
    }
    assert!(kept.p.is_done() && shrunk.p.is_done());
    assert_eq!(shrunk.next(), (40, 40));
}

#[test]
fn a_parked_pipeline_gives_back_the_room_of_its_queues() {
    // At 10,000 partitions, one that parks keeps no room for batches it may never get.
    let mut h = Harness::unmerged(Some(5));
    let batches: Vec<(i64, i64)> = (0..5).map(|i| (i, 1)).collect();
    h.fetch(&batches).expect("plan");
    h.run().expect("run");
    for target in 0..5 {
        h.p.acked(target).expect("ack");
    }
    assert_eq!(h.run().expect("record").other, ["Done"]);
    assert!(h.p.pending.is_empty() && h.p.outbox.is_empty());
    assert!(h.p.pending.capacity() >= 5 && h.p.outbox.capacity() >= 1);
    h.p.shrink_to_fit();
    assert_eq!(
        (h.p.pending.capacity(), h.p.outbox.capacity()),
        (0, 0),
        "no room kept for batches or actions"
    );
}

/// A target batch at `base` holding the source records `records` (in order).
fn target_batch(base: i64, records: &[i64]) -> Batch {
    let records: Vec<Record> = records.iter().map(|o| source_record(*o)).collect();
    batch_of(base, &records)
}

/// How many times the pipeline asked for a chunk of the target's tail.
fn tail_reads(d: &Done) -> usize {
    d.other
        .iter()
        .filter(|a| a.starts_with("ReadTargetTail"))
        .count()
}

/// A pipeline recovering a target tail of `end` offsets past a map at (0, 0), read chunk
/// by chunk (nothing read yet).
fn chunked(policy: IncidentPolicy, end: u64) -> Harness {
    let recovery = Recovery::tail(0, 0, end, Limits::default());
    Harness::recovering(0, None, policy, recovery, 0)
}

#[test]
fn a_step_recovery_cannot_decide_waits_for_the_next_chunk_and_nothing_after_it_is_produced() {
    // The target holds source records 0..4 at 0..4; the chunks end inside step (2, 2).
    let mut h = chunked(IncidentPolicy::Fail, 4);
    h.fetch(&[(0, 2), (2, 2), (4, 1)]).expect("plan");
    let d = h.run().expect("run");
    assert_eq!(d.other, ["ReadTargetTail { from: 0, to: 4 }"]);
    assert!(d.produced.is_empty());
    assert!(!h.p.wants_feed(), "no more of the feed while a step waits");
    h.p.target_tail_read(&[target_batch(0, &[0, 1, 2])], ())
        .expect("read");
    let d = h.run().expect("run");
    assert_eq!(d.other, ["ReadTargetTail { from: 3, to: 4 }"]);
    assert!(d.produced.is_empty(), "step (4, 1) waits behind (2, 2)");
    assert_eq!(h.next(), (2, 2), "the step decided before is recorded");
    h.p.target_tail_read(&[target_batch(3, &[3])], ())
        .expect("read");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1, "only the record past the target's end");
    assert_eq!(d.produced[0].header().records_count, 1);
    assert_eq!(d.other, ["Recovered { duplicates: 0 }"]);
    assert_eq!(h.next(), (4, 4));
    assert!(h.p.wants_feed());
}

#[test]
fn the_next_chunk_is_asked_for_only_when_recovery_cannot_decide() {
    let mut h = chunked(IncidentPolicy::Fail, 4);
    h.fetch(&[(0, 1)]).expect("plan");
    let first = h.run().expect("run");
    h.p.target_tail_read(&[target_batch(0, &[0, 1, 2, 3])], ())
        .expect("read");
    h.fetch(&[(1, 2)]).expect("plan");
    h.fetch(&[(3, 1), (4, 1)]).expect("plan");
    let rest = h.run().expect("run");
    assert_eq!(tail_reads(&first) + tail_reads(&rest), 1, "{rest:?}");
    assert_eq!(rest.produced.len(), 1);
    assert_eq!(h.next(), (4, 4));
}

/// The target holds source records 0 and 1, then a record that is not ours at 2.
fn mismatch_in_the_second_chunk(policy: IncidentPolicy) -> (Harness, Result<(), MirrorError>) {
    let mut h = chunked(policy, 3);
    h.fetch(&[(0, 2), (2, 1)]).expect("plan");
    h.run().expect("run");
    h.p.target_tail_read(&[target_batch(0, &[0, 1])], ())
        .expect("read");
    let d = h.run().expect("run");
    assert_eq!(d.other, ["ReadTargetTail { from: 2, to: 3 }"]);
    let foreign = Record {
        value: Some(Bytes::from_static(b"not ours")),
        ..source_record(2)
    };
    let r = h.p.target_tail_read(&[batch_of(2, &[foreign])], ());
    (h, r)
}

#[test]
fn a_mismatch_in_the_second_chunk_fails_under_policy_fail() {
    let (mut h, r) = mismatch_in_the_second_chunk(IncidentPolicy::Fail);
    let e = r.expect_err("incident");
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
    assert!(h.run().expect("nothing more").produced.is_empty());
    assert!(!h.p.wants_feed());
}

#[test]
fn a_mismatch_in_the_second_chunk_under_skip_resets_the_target_side_to_the_target_end() {
    let (mut h, r) = mismatch_in_the_second_chunk(IncidentPolicy::Skip);
    r.expect("skipped");
    let d = h.run().expect("run");
    assert!(
        d.other.iter().any(|a| a.contains("TargetMismatch")),
        "{:?}",
        d.other
    );
    assert_eq!(
        d.produced.len(),
        1,
        "the step is produced after the foreign record"
    );
    assert_eq!(
        h.next(),
        (2, 3),
        "the map's target side restarts at the target end"
    );
    h.p.acked(3).expect("ack");
    h.run().expect("record");
    assert_eq!(h.next(), (3, 4));
}

#[test]
fn duplicates_across_chunks_are_reported_once_at_the_end_of_recovery() {
    // Source records 0 and 1 were appended again, one a batch (chunk), then 2.
    let mut h = chunked(IncidentPolicy::Fail, 5);
    h.fetch(&[(0, 2), (2, 1)]).expect("plan");
    let mut other = h.run().expect("run").other;
    let target = [
        target_batch(0, &[0, 1]),
        target_batch(2, &[0]),
        target_batch(3, &[1]),
        target_batch(4, &[2]),
    ];
    let mut reads = 0;
    while let Some(a) = other.iter().find(|a| a.starts_with("ReadTargetTail")) {
        let from: i64 = a
            .trim_start_matches("ReadTargetTail { from: ")
            .split(',')
            .next()
            .and_then(|f| f.parse().ok())
            .expect("from");
        let chunk: Vec<Batch> = target
            .iter()
            .filter(|b| b.header().base_offset >= from)
            .take(1)
            .cloned()
            .collect();
        h.p.target_tail_read(&chunk, ()).expect("read");
        reads += 1;
        other = h.run().expect("run").other;
        if other.iter().any(|a| a.starts_with("Recovered")) {
            assert_eq!(other, ["Recovered { duplicates: 2 }"]);
        }
    }
    assert_eq!(reads, 4, "one batch a chunk");
    assert_eq!(h.next(), (3, 5), "the map moved to the target's end");
}

#[test]
fn a_chunks_pin_is_kept_while_recovery_holds_its_records() {
    let mut p: Pipeline<std::sync::Arc<()>> = Pipeline::new(
        settings(0, None, Policies::all(IncidentPolicy::Fail)),
        &map_at(0, 0),
        Recovery::tail(0, 0, 4, Limits::default()),
    );
    let mut map = map_at(0, 0);
    let mut fetch = |p: &mut Pipeline<std::sync::Arc<()>>, at: i64, n: i64| {
        p.fetched(Fetched {
            generation: 0,
            position: at,
            records: record_set(&[(at, n)]),
            aborted: &[],
            stable: None,
            pin: std::sync::Arc::new(()),
        })
        .expect("plan");
        let mut reads = Vec::new();
        while let Some(a) = p.next_action(|_, _| None) {
            match a {
                Action::Record => {
                    p.record(&mut map).expect("record");
                }
                Action::ReadTargetTail { .. } => reads.push(format!("{a:?}")),
                _ => {}
            }
        }
        reads
    };
    let chunk = std::sync::Arc::new(());
    assert_eq!(fetch(&mut p, 0, 2), ["ReadTargetTail { from: 0, to: 4 }"]);
    p.target_tail_read(&[target_batch(0, &[0, 1, 2, 3])], chunk.clone())
        .expect("read");
    assert_eq!(std::sync::Arc::strong_count(&chunk), 2, "records 2, 3 held");
    assert!(p.holds_tail());
    p.release_tail();
    assert_eq!(std::sync::Arc::strong_count(&chunk), 1, "let go of");
    assert_eq!(
        fetch(&mut p, 2, 1),
        ["ReadTargetTail { from: 2, to: 4 }"],
        "read again when needed"
    );
    p.target_tail_read(&[target_batch(0, &[0, 1, 2, 3])], chunk.clone())
        .expect("read");
    assert_eq!(std::sync::Arc::strong_count(&chunk), 2, "record 3 held");
    assert!(fetch(&mut p, 3, 1).is_empty());
    assert_eq!(
        std::sync::Arc::strong_count(&chunk),
        1,
        "recovery over: nothing held"
    );
}

#[test]
fn once_the_end_is_queued_behind_the_steps_waiting_for_the_tail() {
    let recovery = Recovery::tail(0, 0, 2, Limits::default());
    let mut h = Harness::recovering(0, Some(3), IncidentPolicy::Fail, recovery, 0);
    h.fetch(&[(0, 2), (2, 1)]).expect("plan");
    let d = h.run().expect("run");
    assert!(!d.other.iter().any(|a| a == "Done"), "{:?}", d.other);
    h.p.target_tail_read(&[target_batch(0, &[0, 1])], ())
        .expect("read");
    let d = h.run().expect("run");
    assert_eq!(d.produced.len(), 1);
    assert!(
        !d.other.iter().any(|a| a == "Done"),
        "not before step (2, 1)"
    );
    h.p.acked(2).expect("ack");
    let d = h.run().expect("record");
    assert!(d.other.iter().any(|a| a == "Done"), "{:?}", d.other);
    assert_eq!(h.next(), (3, 3));
}

#[test]
fn a_stop_drops_the_steps_waiting_for_the_tail() {
    let mut h = chunked(IncidentPolicy::Fail, 4);
    h.fetch(&[(0, 2)]).expect("plan");
    h.run().expect("run");
    h.p.stop();
    h.p.target_tail_read(&[target_batch(0, &[0, 1, 2, 3])], ())
        .expect("ignored");
    assert!(h.run().expect("run").produced.is_empty());
    assert!(h.p.is_finished());
    assert_eq!(h.next(), (0, 0));
}

#[test]
fn a_skip_moves_the_source_position_and_is_neither_the_end_nor_a_restart() {
    // A marker on the source: planned as a skip, recorded as an advance of the source side.
    let mut h = Harness::new(0, None, IncidentPolicy::Fail);
    h.p.fetched(Fetched {
        generation: h.p.generation(),
        position: 0,
        records: Bytes::copy_from_slice(marker_at(0).as_bytes()),
        aborted: &[],
        stable: None,
        pin: (),
    })
    .expect("plan");
    let d = h.run().expect("run");
    assert!(d.produced.is_empty());
    assert!(d.other.is_empty(), "not done without --once: {:?}", d.other);
    assert_eq!(h.next(), (1, 0));
    assert_eq!(h.p.recreations(), 0);
}
