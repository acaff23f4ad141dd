//! The pipeline against a model of the target: random interleavings of fetched record
//! sets, acknowledgements (some without an offset, some of a batch appended twice),
//! batches failing for good (with every later unresolved batch, a prefix of them possibly
//! written anyway), kills (from the last checkpoint) and restarts (from the map so far),
//! copies of recent batches of ours appended while running (between acknowledgements), and
//! the source deleting records (out of range, then the log start). A restart's recovery
//! reads the target in chunks of one or two appended batches, so chunk boundaries fall
//! inside steps and duplicate blocks; a state write also lets go of the chunks held (as
//! the driver does when the budget is short). Each case runs under the incident policy it
//! configures, kept for the whole case. Rules (each has a test named
//! after it):
//!
//! 1. **The map never claims a record the target does not hold**: after every event, each
//!    source offset the map claims is held by the target at the claimed offset, in order,
//!    and each source and target offset is claimed at most once. After the faults, a clean
//!    run copies every source record still in the source (unless an incident stopped the
//!    case under `fail`).
//! 2. **Live duplicates are recognised, counted, and the map stays exact**: without faults,
//!    every copy of a batch of ours appended before an acknowledgement is a duplicate under
//!    `fail` (never an incident) and is counted.
//! 3. **Under `fail` an incident stops the pipeline**: the incident is the error the
//!    pipeline returns (never a skipped incident), and it ends the case: the pipeline wants
//!    no more of the feed, drops a record set that arrives anyway, and hands the producer
//!    nothing more, also once the batches still in flight are answered and the window has
//!    room: no batch is forwarded after the incident. Under `skip` every incident is
//!    skipped ([`Action::Skipped`]), never an error.
//! 4. **Incidents happen only where a fault forces one**: the model counts the faults it
//!    injected that can force an incident, per kind, and there are never more incidents of
//!    a kind than such faults. A source-truncation incident needs a truncation past the
//!    last checkpoint's source position (the feed, or a run restarted from the checkpoint,
//!    can meet the deleted records) or a restart from below the log start; a target
//!    mismatch needs a restart (a kill, or a batch failing for good: its recovery and
//!    acknowledgements meet what the dead run left past the map) or a copy appended while
//!    the target past the copied records holds records that are not ours (no live
//!    duplicate check can tell it from a foreign record). Acknowledgements, batches
//!    appended twice, other live copies and state writes force none.
//!
//! The model's producer window is small ([`WINDOW`]), so that batches often queue behind
//! it (and are merged) when an incident comes.

use std::collections::{BTreeSet, VecDeque};

use proptest::prelude::*;
use strait_offsets::{OffsetMap, Side};
use strait_records::{Batch, Limits, Record};

use super::tests::{batch_of, record_set, settings, source_record};
use super::*;
use crate::config::model::IncidentPolicy;
use crate::error::{IncidentKind, MirrorError};

/// The producer's window in the model.
const WINDOW: usize = 2;

/// One thing that happens.
#[derive(Debug, Clone)]
enum Op {
    /// The fetcher delivers the next `n` source batches (one record set).
    Fetch(usize),
    /// The oldest batch in flight is written and acknowledged; `no_offset`: the answer
    /// carries −1 (the broker's duplicate detection: the batch is written once); `twice`:
    /// it was appended twice (a re-send under a new epoch landing after the original) and
    /// the answer names the second copy.
    Ack { no_offset: bool, twice: bool },
    /// The oldest batch in flight fails for good and every later one with it; the first
    /// `written` of them were written anyway (a deadline passed after the write).
    Fail { written: usize },
    /// The process is killed: the first `written` batches in flight were written, and
    /// with `twice` written again as a block (re-sent under a new epoch); the next run
    /// starts from the last checkpoint.
    Kill { written: usize, twice: bool },
    /// The state is written (the map as it is now).
    Checkpoint,
    /// The source log start moves to the start of batch `n` (retention): fetching below
    /// it is answered OFFSET_OUT_OF_RANGE.
    Truncate(usize),
    /// A copy of a recent batch of ours is appended while running: of one in flight (a
    /// request given up on, landing before its re-send) or of one of the last chunks the
    /// target holds (a request appended again after it was acknowledged).
    Dup(usize),
}

fn op() -> impl Strategy<Value = Op> {
    op_acked(6)
}

/// [`op`] with acknowledgements weighted `acks` (against 4 for fetches): fewer, and
/// batches queue behind the window when an incident comes.
fn op_acked(acks: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1usize..4).prop_map(Op::Fetch),
        acks => (any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(no_offset, twice)| Op::Ack { no_offset, twice }),
        1 => (0usize..3).prop_map(|written| Op::Fail { written }),
        1 => (0usize..3, prop::bool::weighted(0.3))
            .prop_map(|(written, twice)| Op::Kill { written, twice }),
        2 => Just(Op::Checkpoint),
        1 => (0usize..10).prop_map(Op::Truncate),
        2 => (0usize..8).prop_map(Op::Dup),
    ]
}

/// Operations without faults: fetches, acknowledgements (a batch maybe appended twice),
/// live duplicates and state writes.
fn clean_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1usize..4).prop_map(Op::Fetch),
        6 => (any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(no_offset, twice)| Op::Ack { no_offset, twice }),
        2 => (0usize..8).prop_map(Op::Dup),
        1 => Just(Op::Checkpoint),
    ]
}

/// The source: `sizes[i]` records per batch, dense from offset 0.
fn source(sizes: &[i64]) -> Vec<(i64, i64)> {
    let mut base = 0;
    sizes
        .iter()
        .map(|&n| {
            let b = (base, n);
            base += n;
            b
        })
        .collect()
}

/// The target partition: the records appended, each chunk as it was appended.
#[derive(Default)]
struct Target {
    records: Vec<Record>,
    chunks: Vec<(u64, Vec<Record>)>,
}

impl Target {
    fn append(&mut self, batch: &Batch) -> u64 {
        let base = self.records.len() as u64;
        let records = batch.decode_records(&Limits::default()).expect("decode");
        self.records.extend(records.iter().cloned());
        self.chunks.push((base, records));
        base
    }

    fn end(&self) -> u64 {
        self.records.len() as u64
    }

    /// A recovery over what the target holds from `from` (the run's map position), read
    /// chunk by chunk from the target's start as the pipeline asks ([`Target::read`]).
    fn recovery(&self, from: u64) -> Recovery {
        Recovery::tail(0, from, self.end(), Limits::default())
    }

    /// The answer to [`Action::ReadTargetTail`]: one or two appended chunks (by where the
    /// read starts), so that chunk boundaries fall anywhere, inside steps and duplicate
    /// blocks too.
    fn read(&self, from: u64, to: u64) -> Vec<Batch> {
        self.chunks
            .iter()
            .filter(|(base, r)| base + r.len() as u64 > from && *base < to)
            .take(1 + (from % 2) as usize)
            .map(|(base, r)| batch_of(*base as i64, r))
            .collect()
    }
}

/// One run of the process: a pipeline, the batches it handed to the producer and not yet
/// resolved, and where its feed is.
struct Run {
    p: Pipeline<()>,
    in_flight: VecDeque<Batch>,
    fetch_next: usize,
}

/// Incidents seen, by kind, and the faults injected that can force one (rule 4).
#[derive(Debug, Default, Clone, Copy)]
struct Incidents {
    /// Source-truncation incidents.
    source: u32,
    /// Target-mismatch incidents.
    target: u32,
    /// Truncations past the last checkpoint's source position.
    truncations: u32,
    /// Restarts (kills and batches failing for good).
    restarts: u32,
    /// Of those, restarts from a source position below the log start.
    restarts_below: u32,
    /// Copies of target records appended while the target past them holds records that
    /// are not ours (left by a dead run, or skipped past): no live duplicate check can
    /// tell them from foreign records.
    foreign_copies: u32,
}

impl Incidents {
    fn total(&self) -> u32 {
        self.source + self.target
    }
}

struct World {
    source: Vec<(i64, i64)>,
    target: Target,
    map: OffsetMap,
    checkpoint: OffsetMap,
    /// The configured policy, for the whole case.
    policy: IncidentPolicy,
    run: Run,
    incidents: Incidents,
    log_start: i64,
    /// Under `fail`: the incident that ended the case.
    stopped: Option<MirrorError>,
    /// Duplicate records appended (live copies and the first copy of a batch acked twice).
    dup_appended: u64,
    /// Of those, appended since the last acknowledgement (not checked yet).
    dup_since_ack: u64,
    /// Duplicate records the pipeline reported.
    dup_reported: u64,
}

impl World {
    fn new(sizes: &[i64], policy: IncidentPolicy) -> Self {
        let map = OffsetMap::new();
        let run = Self::start(&map, Recovery::none(), policy, 0);
        World {
            source: source(sizes),
            target: Target::default(),
            checkpoint: map.clone(),
            map,
            policy,
            run,
            incidents: Incidents::default(),
            log_start: 0,
            stopped: None,
            dup_appended: 0,
            dup_since_ack: 0,
            dup_reported: 0,
        }
    }

    fn start(map: &OffsetMap, recovery: Recovery, policy: IncidentPolicy, fetch: usize) -> Run {
        let start = map.next(Side::Source) as i64;
        Run {
            p: Pipeline::new(
                Settings {
                    // A small window: batches queue behind it (and are merged) often.
                    max_in_flight: WINDOW,
                    ..settings(start, None, Policies::all(policy))
                },
                map,
                recovery,
            ),
            in_flight: VecDeque::new(),
            fetch_next: fetch,
        }
    }

    /// A new run from `map` (the map so far, or the last checkpoint) with a recovery over
    /// the target past it, as the flow builds it.
    fn restart(&mut self, map: OffsetMap) {
        self.incidents.restarts += 1;
        if (map.next(Side::Source) as i64) < self.log_start {
            self.incidents.restarts_below += 1;
        }
        self.map = map;
        let from = self.map.next(Side::Target);
        let recovery = self.target.recovery(from);
        // The feed starts at the map's source position.
        let fetch = self.batch_at(self.map.next(Side::Source) as i64);
        self.run = Self::start(&self.map, recovery, self.policy, fetch);
    }

    /// The index of the first source batch at or past `offset`.
    fn batch_at(&self, offset: i64) -> usize {
        self.source.iter().take_while(|(b, _)| *b < offset).count()
    }

    /// One incident of `kind`, skipped (`Ok`) or failing the pipeline (`Err`): the policy
    /// decides which (rule 3), a fault must force it (rule 4).
    fn incident(&mut self, kind: IncidentKind, skipped: bool) -> Result<(), TestCaseError> {
        match kind {
            IncidentKind::SourceTruncation => self.incidents.source += 1,
            IncidentKind::TargetMismatch => self.incidents.target += 1,
            other => prop_assert!(false, "no {:?} incident can happen here", other),
        }
        prop_assert_eq!(
            skipped,
            self.policy == IncidentPolicy::Skip,
            "an incident under {:?} was {}",
            self.policy,
            if skipped { "skipped" } else { "an error" }
        );
        self.forced()
    }

    /// Rule 4: never more incidents than injected faults that can force one.
    fn forced(&self) -> Result<(), TestCaseError> {
        let i = &self.incidents;
        prop_assert!(
            i.source <= i.truncations + i.restarts_below,
            "a source-truncation incident no fault forced: {i:?}"
        );
        prop_assert!(
            i.target <= i.restarts + i.foreign_copies,
            "a target mismatch no fault forced: {i:?}"
        );
        Ok(())
    }

    /// Does what the pipeline asks until it waits; an error restarts from the map so far,
    /// unless it is an incident under `fail`, which ends the case.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        while self.stopped.is_none() {
            let action = self.run.p.next_action(|_, _| None);
            let r = match action {
                None => return Ok(()),
                Some(Action::Produce { batch, .. }) => {
                    self.run.in_flight.push_back(batch);
                    Ok(())
                }
                Some(Action::Record) => self.run.p.record(&mut self.map).map(|_| ()),
                Some(Action::Skipped(s)) => {
                    self.incident(s.kind, true)?;
                    Ok(())
                }
                Some(Action::NeedLogStart) => self.run.p.log_start(self.log_start),
                Some(Action::Reposition { position, .. }) => {
                    self.run.fetch_next = self.batch_at(position);
                    Ok(())
                }
                Some(Action::CheckTarget { from, to, .. }) => {
                    let batches: Vec<Batch> = self
                        .target
                        .chunks
                        .iter()
                        .filter(|(base, r)| base + r.len() as u64 > from && *base < to)
                        .map(|(base, r)| batch_of(*base as i64, r))
                        .collect();
                    self.run.p.target_read(from, &batches);
                    Ok(())
                }
                Some(Action::ReadTargetTail { from, to }) => {
                    let batches = self.target.read(from, to);
                    self.run.p.target_tail_read(&batches, ())
                }
                Some(Action::Duplicates { records, .. }) => {
                    self.dup_reported += records;
                    Ok(())
                }
                Some(_) => Ok(()),
            };
            if let Err(e) = r {
                self.failed(e)?;
            }
        }
        Ok(())
    }

    /// The pipeline returned `e`: an incident under `fail` ends the case; anything else
    /// restarts from the map so far.
    fn failed(&mut self, e: MirrorError) -> Result<(), TestCaseError> {
        if let Some(kind) = e.incident_kind() {
            self.incident(kind, false)?;
            self.stopped = Some(e);
            return Ok(());
        }
        self.restart(self.map.clone());
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        match *op {
            Op::Fetch(n) => {
                let from = self.run.fetch_next;
                let to = (from + n).min(self.source.len());
                if from == to || !self.run.p.wants_feed() {
                    return Ok(());
                }
                let set = &self.source[from..to];
                if set[0].0 < self.log_start {
                    self.run.p.out_of_range(self.run.p.generation(), set[0].0);
                    return self.settle();
                }
                self.run.fetch_next = to;
                let r = self.run.p.fetched(Fetched {
                    generation: self.run.p.generation(),
                    position: set[0].0,
                    records: record_set(set),
                    aborted: &[],
                    stable: None,
                    pin: (),
                });
                if let Err(e) = r {
                    self.failed(e)?;
                }
            }
            Op::Ack { no_offset, twice } => {
                let Some(batch) = self.run.in_flight.pop_front() else {
                    return Ok(());
                };
                // Appended twice: the first copy is the duplicate (the answer names the
                // second).
                if twice {
                    self.target.append(&batch);
                    self.dup_appended += batch.header().records_count.max(0) as u64;
                }
                let base = self.target.append(&batch);
                // An answer without an offset means "where the map expects it": only when
                // nothing landed before it.
                let acked = if no_offset && !twice && self.dup_since_ack == 0 {
                    -1
                } else {
                    base as i64
                };
                self.dup_since_ack = 0;
                if let Err(e) = self.run.p.acked(acked) {
                    self.failed(e)?;
                }
            }
            Op::Fail { written } => {
                if self.run.in_flight.is_empty() {
                    return Ok(());
                }
                for b in std::mem::take(&mut self.run.in_flight).iter().take(written) {
                    self.target.append(b);
                }
                let e = self.run.p.produce_failed(strait_client::Error::new(
                    strait_client::ErrorKind::ConnectionClosed,
                ));
                self.failed(e)?;
            }
            Op::Kill { written, twice } => {
                let in_flight = std::mem::take(&mut self.run.in_flight);
                for b in in_flight.iter().take(written) {
                    self.target.append(b);
                }
                if twice {
                    for b in in_flight.iter().take(written) {
                        self.target.append(b);
                    }
                }
                self.restart(self.checkpoint.clone());
            }
            Op::Dup(i) => {
                let recent = self.target.chunks.len().min(3);
                let candidates = self.run.in_flight.len() + recent;
                if candidates == 0 {
                    return Ok(());
                }
                let pick = i % candidates;
                let copy = match self.run.in_flight.get(pick) {
                    Some(b) => b.clone(),
                    None => {
                        let (base, r) = &self.target.chunks
                            [self.target.chunks.len() - 1 - (pick - self.run.in_flight.len())];
                        // Recognisable as a repeat of ours only if every record from the
                        // copied ones, or from where the map expects the next batch if
                        // that is before them, to the target's end is ours.
                        let from = (*base).min(self.map.next(Side::Target));
                        if !(from..self.target.end()).all(|t| self.ours(t)) {
                            self.incidents.foreign_copies += 1;
                        }
                        batch_of(*base as i64, r)
                    }
                };
                self.target.append(&copy);
                let n = copy.header().records_count.max(0) as u64;
                self.dup_appended += n;
                self.dup_since_ack += n;
            }
            Op::Checkpoint => {
                self.checkpoint = self.map.clone();
                // The driver lets go of the tail's chunks when the budget is short: it
                // changes no decision (they are read again when needed).
                self.run.p.release_tail();
            }
            Op::Truncate(n) => {
                let start = self.source[n.min(self.source.len() - 1)].0;
                if start > self.log_start && start as u64 > self.checkpoint.next(Side::Source) {
                    self.incidents.truncations += 1;
                }
                self.log_start = self.log_start.max(start);
            }
        }
        self.settle()
    }

    /// Whether the map claims target offset `t`.
    fn claims(&self, t: u64) -> bool {
        self.map
            .runs()
            .any(|r| (r.target_start()..r.target_start() + r.len()).contains(&t))
    }

    /// Whether the record at target offset `t` is ours: the map claims it, or it repeats
    /// a record the map claims before it.
    fn ours(&self, t: u64) -> bool {
        let (records, r) = (&self.target.records, &self.target.records[t as usize]);
        self.claims(t)
            || (0..t).any(|u| {
                let c = &records[u as usize];
                self.claims(u) && (c.timestamp, &c.key, &c.value) == (r.timestamp, &r.key, &r.value)
            })
    }

    /// Rule 3: after an incident under `fail` the pipeline wants no feed, drops a record
    /// set that arrives anyway, and hands the producer nothing more, also when the batches
    /// still in flight are answered and free the window.
    fn check_stopped(&mut self) -> Result<(), TestCaseError> {
        let Some(e) = self.stopped.take() else {
            return Ok(());
        };
        prop_assert!(
            self.policy == IncidentPolicy::Fail,
            "stopped under skip: {e}"
        );
        prop_assert!(
            !self.run.p.wants_feed(),
            "the feed is still wanted after {e}"
        );
        if let Some(&set) = self.source.get(self.run.fetch_next) {
            let r = self.run.p.fetched(Fetched {
                generation: self.run.p.generation(),
                position: set.0,
                records: record_set(&[set]),
                aborted: &[],
                stable: None,
                pin: (),
            });
            prop_assert!(
                matches!(r, Ok(None)),
                "a record set after {e} was not dropped: {r:?}"
            );
        }
        for _ in 0..1000 {
            match self.run.p.next_action(|_, _| None) {
                Some(Action::Produce { batch, .. }) => prop_assert!(
                    false,
                    "a batch was forwarded after {e}: {:?}",
                    batch.header()
                ),
                // What was acknowledged before the incident may still be recorded (the
                // driver stops at the error and asks nothing more).
                Some(Action::Record) => {
                    if self.run.p.record(&mut self.map).is_err() {
                        break;
                    }
                    self.check()?;
                }
                Some(Action::CheckTarget { .. }) => break,
                Some(_) => {}
                // Waiting: the next batch in flight is answered, freeing the window.
                None => match self.run.in_flight.pop_front() {
                    Some(b) => {
                        let base = self.target.append(&b);
                        if self.run.p.acked(base as i64).is_err() {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
        self.stopped = Some(e);
        Ok(())
    }

    /// The map never claims a record the target does not hold there, in order, and claims
    /// each source and target offset at most once.
    fn check(&self) -> Result<(), TestCaseError> {
        let mut sources = BTreeSet::new();
        let mut targets = BTreeSet::new();
        prop_assert!(self.map.coarse_segments().is_empty());
        for run in self.map.runs() {
            for i in 0..run.len() {
                let (s, t) = (run.source_start() + i, run.target_start() + i);
                let held = self.target.records.get(t as usize);
                let want = source_record(s as i64);
                prop_assert!(
                    held.is_some_and(|r| r.value == want.value && r.timestamp == want.timestamp),
                    "the map claims source {s} at target {t}, the target holds {held:?}"
                );
                prop_assert!(sources.insert(s), "source {s} claimed twice");
                prop_assert!(targets.insert(t), "target {t} claimed twice");
            }
        }
        Ok(())
    }

    /// Runs without faults to the end of the source (or to an incident under `fail`).
    fn finish(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1000 {
            if self.stopped.is_some()
                || self.run.fetch_next == self.source.len() && self.run.in_flight.is_empty()
            {
                break;
            }
            self.apply(&Op::Fetch(3))?;
            self.apply(&Op::Ack {
                no_offset: false,
                twice: false,
            })?;
        }
        Ok(())
    }

    /// Applies `ops` and runs to the end, checking rule 1 after every event; checks rule 3
    /// when an incident stopped the case.
    fn play(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            self.apply(op)?;
            self.check()?;
        }
        self.finish()?;
        self.check()?;
        self.check_stopped()
    }

    /// Rule 1's end: unless an incident stopped the case, replication reached the source
    /// end and every record still in the source is on the target.
    fn check_complete(&self) -> Result<(), TestCaseError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        let end: i64 = self.source.iter().map(|(_, n)| n).sum();
        prop_assert_eq!(
            self.map.next(Side::Source),
            end as u64,
            "replication reaches the source end"
        );
        for s in self.log_start..end {
            let want = source_record(s);
            prop_assert!(
                self.target.records.iter().any(|r| r.value == want.value),
                "source record {} is on the target",
                s
            );
        }
        Ok(())
    }
}

fn policy(skip: bool) -> IncidentPolicy {
    if skip {
        IncidentPolicy::Skip
    } else {
        IncidentPolicy::Fail
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Rule 1.
    #[test]
    fn the_map_never_claims_a_record_the_target_does_not_hold(
        sizes in prop::collection::vec(1i64..4, 1..10),
        ops in prop::collection::vec(op(), 0..40),
        skip in any::<bool>(),
    ) {
        let mut w = World::new(&sizes, policy(skip));
        w.play(&ops)?;
        w.check_complete()?;
    }

    /// Rule 2.
    #[test]
    fn live_duplicates_are_recognised_counted_and_the_map_stays_exact(
        sizes in prop::collection::vec(1i64..4, 1..10),
        ops in prop::collection::vec(clean_op(), 0..40),
    ) {
        let mut w = World::new(&sizes, IncidentPolicy::Fail);
        w.play(&ops)?;
        w.check_complete()?;
        prop_assert_eq!(w.incidents.total(), 0, "a duplicate of ours is never an incident");
        prop_assert_eq!(
            w.dup_reported,
            w.dup_appended - w.dup_since_ack,
            "every duplicate before an acknowledgement is counted"
        );
    }

    /// Rule 4: under `skip`, where incidents do not end the case and can add up (rule 1's
    /// cases check it too, after every incident).
    #[test]
    fn incidents_happen_only_where_a_fault_forces_one(
        sizes in prop::collection::vec(1i64..4, 1..10),
        ops in prop::collection::vec(op(), 0..40),
    ) {
        let mut w = World::new(&sizes, IncidentPolicy::Skip);
        w.play(&ops)?;
        w.forced()?;
        w.check_complete()?;
    }
}

proptest! {
    // More cases: only an incident that comes with batches queued behind the window
    // shows a batch forwarded after it.
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Rule 3: every case under `fail`, faults included; an incident ends it. Fewer
    /// acknowledgements and a longer source than the others: batches are often queued
    /// behind the window when the incident comes.
    #[test]
    fn under_fail_an_incident_stops_the_pipeline_and_nothing_after_it_is_forwarded(
        sizes in prop::collection::vec(1i64..4, 1..20),
        ops in prop::collection::vec(op_acked(2), 0..60),
    ) {
        let mut w = World::new(&sizes, IncidentPolicy::Fail);
        w.play(&ops)?;
        prop_assert!(w.incidents.total() <= 1, "the case ended at the first incident");
        prop_assert_eq!(w.stopped.is_some(), w.incidents.total() == 1);
        w.check_complete()?;
    }
}
