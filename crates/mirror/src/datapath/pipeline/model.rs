//! The pipeline against a model of the target: for any interleaving of fetched record
//! sets, acknowledgements (some without an offset), batches failing for good (with every
//! later unresolved batch, a prefix of them possibly written anyway), kills (from the last
//! checkpoint) and restarts (from the map so far), batches appended twice, copies of
//! recent batches of ours appended while running (between acknowledgements), and the
//! source deleting records (out of range, then the log start), the map never claims a
//! source record the target does not hold at that offset, in order, and claims each at
//! most once. After the faults, a clean run copies every source record still in the
//! source. Without faults, every live duplicate is recognised (never an incident) and
//! counted.

use std::collections::{BTreeSet, VecDeque};

use proptest::prelude::*;
use strait_offsets::{OffsetMap, Side};
use strait_records::{Batch, Limits, Record};

use super::tests::{batch_of, record_set, settings, source_record};
use super::*;
use crate::config::model::IncidentPolicy;

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
    prop_oneof![
        4 => (1usize..4).prop_map(Op::Fetch),
        6 => (any::<bool>(), prop::bool::weighted(0.1))
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

    /// A recovery over what the target holds from `from` (the run's map position).
    fn recovery(&self, from: u64) -> Recovery {
        let batches: Vec<Batch> = self
            .chunks
            .iter()
            .map(|(base, r)| batch_of(*base as i64, r))
            .collect();
        Recovery::from_target(&batches, from, self.end(), Limits::default()).expect("decode")
    }
}

/// One run of the process: a pipeline, the batches it handed to the producer and not yet
/// resolved, and where its feed is.
struct Run {
    p: Pipeline<()>,
    in_flight: VecDeque<Batch>,
    fetch_next: usize,
}

struct World {
    source: Vec<(i64, i64)>,
    target: Target,
    map: OffsetMap,
    checkpoint: OffsetMap,
    policy: IncidentPolicy,
    run: Run,
    incidents: u32,
    log_start: i64,
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
            incidents: 0,
            log_start: 0,
            dup_appended: 0,
            dup_since_ack: 0,
            dup_reported: 0,
        }
    }

    fn start(map: &OffsetMap, recovery: Recovery, policy: IncidentPolicy, fetch: usize) -> Run {
        let start = map.next(Side::Source) as i64;
        Run {
            p: Pipeline::new(settings(start, None, Policies::all(policy)), map, recovery),
            in_flight: VecDeque::new(),
            fetch_next: fetch,
        }
    }

    /// A new run from `map` (the map so far, or the last checkpoint) with a recovery over
    /// the target past it, as the flow builds it.
    fn restart(&mut self, map: OffsetMap) {
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

    /// Does what the pipeline asks until it waits; an error restarts from the map so far
    /// (an incident under `fail`: the operator then chooses `skip`).
    fn settle(&mut self) {
        loop {
            let action = self.run.p.next_action(|_, _| None);
            let r = match action {
                None => return,
                Some(Action::Produce { batch, .. }) => {
                    self.run.in_flight.push_back(batch);
                    Ok(())
                }
                Some(Action::Record) => self.run.p.record(&mut self.map).map(|_| ()),
                Some(Action::Skipped(_)) => {
                    self.incidents += 1;
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
                Some(Action::Duplicates { records, .. }) => {
                    self.dup_reported += records;
                    Ok(())
                }
                Some(_) => Ok(()),
            };
            if let Err(e) = r {
                self.failed(e);
            }
        }
    }

    fn failed(&mut self, e: MirrorError) {
        if e.incident_kind().is_some() {
            self.incidents += 1;
            self.policy = IncidentPolicy::Skip;
        }
        self.restart(self.map.clone());
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Fetch(n) => {
                let from = self.run.fetch_next;
                let to = (from + n).min(self.source.len());
                if from == to || !self.run.p.wants_feed() {
                    return;
                }
                let set = &self.source[from..to];
                if set[0].0 < self.log_start {
                    self.run.p.out_of_range(self.run.p.generation(), set[0].0);
                    self.settle();
                    return;
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
                    self.failed(e);
                }
            }
            Op::Ack { no_offset, twice } => {
                let Some(batch) = self.run.in_flight.pop_front() else {
                    return;
                };
                let mut base = self.target.append(&batch);
                if twice {
                    base = self.target.append(&batch);
                    self.dup_appended += batch.header().records_count.max(0) as u64;
                }
                // An answer without an offset means "where the map expects it": only when
                // nothing landed before it.
                let acked = if no_offset && !twice && self.dup_since_ack == 0 {
                    -1
                } else {
                    base as i64
                };
                self.dup_since_ack = 0;
                if let Err(e) = self.run.p.acked(acked) {
                    self.failed(e);
                }
            }
            Op::Fail { written } => {
                if self.run.in_flight.is_empty() {
                    return;
                }
                for b in std::mem::take(&mut self.run.in_flight).iter().take(written) {
                    self.target.append(b);
                }
                let e = self.run.p.produce_failed(strait_client::Error::new(
                    strait_client::ErrorKind::ConnectionClosed,
                ));
                self.failed(e);
            }
            Op::Kill { written, twice } => {
                let in_flight = std::mem::take(&mut self.run.in_flight);
                for _ in 0..if twice { 2 } else { 1 } {
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
                    return;
                }
                let pick = i % candidates;
                let copy = match self.run.in_flight.get(pick) {
                    Some(b) => b.clone(),
                    None => {
                        let (base, r) = &self.target.chunks
                            [self.target.chunks.len() - 1 - (pick - self.run.in_flight.len())];
                        batch_of(*base as i64, r)
                    }
                };
                self.target.append(&copy);
                let n = copy.header().records_count.max(0) as u64;
                self.dup_appended += n;
                self.dup_since_ack += n;
            }
            Op::Checkpoint => self.checkpoint = self.map.clone(),
            Op::Truncate(n) => {
                let start = self.source[n.min(self.source.len() - 1)].0;
                self.log_start = self.log_start.max(start);
            }
        }
        self.settle();
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

    /// Runs without faults to the end of the source.
    fn finish(&mut self) {
        for _ in 0..1000 {
            if self.run.fetch_next == self.source.len() && self.run.in_flight.is_empty() {
                break;
            }
            self.apply(&Op::Fetch(3));
            self.apply(&Op::Ack {
                no_offset: false,
                twice: false,
            });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_map_never_claims_a_record_the_target_does_not_hold(
        sizes in prop::collection::vec(1i64..4, 1..10),
        ops in prop::collection::vec(op(), 0..40),
        skip in any::<bool>(),
    ) {
        let policy = if skip { IncidentPolicy::Skip } else { IncidentPolicy::Fail };
        let mut w = World::new(&sizes, policy);
        for op in &ops {
            w.apply(op);
            w.check()?;
        }
        w.finish();
        w.check()?;
        let end: i64 = sizes.iter().sum();
        prop_assert_eq!(w.map.next(Side::Source), end as u64, "replication reaches the source end");
        for s in w.log_start..end {
            let want = source_record(s);
            prop_assert!(
                w.target.records.iter().any(|r| r.value == want.value),
                "source record {} is on the target", s
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Without faults, copies of batches of ours appended while running are recognised as
    /// duplicates under `fail` (never an incident), counted, and the map stays exact.
    #[test]
    fn live_duplicates_are_recognised_counted_and_the_map_stays_exact(
        sizes in prop::collection::vec(1i64..4, 1..10),
        ops in prop::collection::vec(clean_op(), 0..40),
    ) {
        let mut w = World::new(&sizes, IncidentPolicy::Fail);
        for op in &ops {
            w.apply(op);
            w.check()?;
        }
        w.finish();
        w.check()?;
        let end: i64 = sizes.iter().sum();
        prop_assert_eq!(w.map.next(Side::Source), end as u64, "replication reaches the source end");
        prop_assert_eq!(w.incidents, 0, "a duplicate of ours is never an incident");
        prop_assert_eq!(
            w.dup_reported,
            w.dup_appended - w.dup_since_ack,
            "every duplicate before an acknowledgement is counted"
        );
    }
}
