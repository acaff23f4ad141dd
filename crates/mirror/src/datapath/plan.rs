//! Batch planning: one partition's fetched record set → the steps the pipeline takes.
//! Pure (no I/O), so every rule is unit-tested.
//!
//! Per batch, in offset order: batches wholly before the fetch position are ignored (a
//! broker may return a batch that starts before the offset asked for); every batch goes
//! through the response's aborted-transaction filter so its state follows the log, then
//! through the partition's [`TxnResolver`], which holds transactional data until its
//! marker decides it (brokers such as Tansu return aborted data to `read_committed`
//! fetches with an empty aborted list) — unless the fetch's last stable offset is known to
//! be real (Apache Kafka: [`Planner::plan_stable`]), below which transactional data not in
//! the aborted list is committed and is released at once; released control batches and aborted data become
//! [`Step::Skip`]; a batch that starts before the position, has
//! gaps, is empty or exceeds the target's batch limit is re-encoded (the slow path);
//! everything else is forwarded as it is (the fast path; the producer patches the header).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use bytes::Bytes;
use strait_client::AbortedTxn;
use strait_records::{
    AbortedFilter, AbortedTransaction, Batch, BatchBuilder, Class, Compression, ControlRecordType,
    Limits, Record, ReencodeOptions, ReencodeReason, Resolved, SkipReason, TxnResolver, TxnVerdict,
    push_lean, split,
};

/// What to do with (part of) a source batch.
#[derive(Debug, Clone)]
pub enum Step {
    /// Produce the source batch unchanged (fast path).
    Forward {
        /// The batch.
        batch: Batch,
        /// Its first source offset.
        source_first: i64,
        /// Records in it (dense: offsets `source_first..source_first + count`).
        count: i64,
    },
    /// Produce a re-encoded batch holding the records at `source_offsets`.
    Reencoded {
        /// The new batch.
        batch: Batch,
        /// Source offset of each record, increasing.
        source_offsets: Vec<i64>,
    },
    /// Nothing to produce: the source position moves to `source_next`.
    Skip {
        /// The new source position.
        source_next: i64,
    },
}

impl Step {
    /// Records this step writes to the target.
    pub fn records(&self) -> i64 {
        match self {
            Step::Forward { count, .. } => *count,
            Step::Reencoded { source_offsets, .. } => source_offsets.len() as i64,
            Step::Skip { .. } => 0,
        }
    }

    /// The source position after this step.
    pub fn source_next(&self) -> i64 {
        match self {
            Step::Forward {
                source_first,
                count,
                ..
            } => source_first + count,
            Step::Reencoded { source_offsets, .. } => {
                source_offsets.last().map_or(0, |o| o.saturating_add(1))
            }
            Step::Skip { source_next } => *source_next,
        }
    }
}

/// Why a batch took the slow path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlowReason {
    /// Compaction left gaps in its offsets.
    Gapped,
    /// Compaction removed every record.
    Empty,
    /// Larger than the target accepts.
    TooLarge,
    /// It starts before the fetch position (after a log-start move): the records before
    /// the position are left out.
    Partial,
}

impl SlowReason {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowReason::Gapped => "gapped",
            SlowReason::Empty => "empty",
            SlowReason::TooLarge => "too_large",
            SlowReason::Partial => "partial",
        }
    }
}

/// The steps for one record set, and what was counted on the way.
#[derive(Debug)]
pub struct Plan<P = ()> {
    /// Released steps, in order, each with the pin of the record set its batch came from
    /// (see [`Planner`]). Every source offset from the released position to the last
    /// step's [`Step::source_next`] is accounted for by exactly one step (or lies in a gap).
    pub steps: Vec<(Step, P)>,
    /// Where the next fetch starts: after the last complete batch (past held batches).
    pub next_position: i64,
    /// Control batches dropped.
    pub dropped_control: u32,
    /// Aborted batches dropped.
    pub dropped_aborted: u32,
    /// Slow-path batches, by reason.
    pub slow: Vec<SlowReason>,
    /// Bytes of the partial batch trimmed at the end.
    pub trimmed: usize,
}

impl<P> Plan<P> {
    fn empty(position: i64, trimmed: usize) -> Self {
        Plan {
            steps: Vec::new(),
            next_position: position,
            dropped_control: 0,
            dropped_aborted: 0,
            slow: Vec::new(),
            trimmed,
        }
    }

    /// The steps without their pins.
    pub fn into_steps(self) -> Vec<Step> {
        self.steps.into_iter().map(|(s, _)| s).collect()
    }
}

/// Why a record set could not be planned.
#[derive(Debug)]
pub struct PlanError {
    /// The source offset of the batch at fault.
    pub offset: i64,
    /// The records crate's error.
    pub source: strait_records::Error,
}

/// The oldest transaction a [`Planner`] is waiting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTxn {
    /// Its producer id.
    pub producer_id: i64,
    /// The source offset of its first held batch.
    pub first_offset: i64,
}

/// One partition's planner, persistent across fetch responses.
///
/// Each response gets a fresh [`AbortedFilter`] (the aborted list is per response); its
/// verdicts feed the partition's [`TxnResolver`], which holds transactional batches until
/// their COMMIT/ABORT marker is fetched — possibly several responses later — and releases
/// every batch strictly in offset order. Only released batches become steps, so the fetch
/// position ([`Plan::next_position`]) runs ahead of the position the steps reach
/// ([`Planner::released_next`]), which is what the offset map may record.
///
/// `P` pins what a held batch keeps alive (the fetch buffer's in-flight budget
/// reservation): each batch carries the pin of its record set until it is released, and
/// each step hands it on to whoever holds the step.
///
/// **Spilling** ([`Planner::spill`]): when the held batches grow past what the partition
/// may hold, the planner can drop them instead of failing (rules, tested by name):
/// 1. *Spilling drops every held batch* (their pins are let go) and keeps the position the
///    steps reached; it then reads ahead without holding anything, noting every COMMIT
///    and ABORT marker.
/// 2. *It rewinds once the transactions it waits for are decided*: those it held, and
///    those whose data it reads before the last of them is decided (later ones are left
///    to the re-read, so steady transactional traffic cannot keep it reading ahead
///    forever), at the end of a record set; [`Planner::take_rewind`] gives the position to
///    fetch again from.
/// 3. *Record sets fetched from anywhere else before the rewind is fetched are ignored.*
/// 4. *On the re-read, decided transactions are released at once* (committed data
///    forwarded, aborted data skipped) by the first marker of their producer after each
///    batch; nothing waits, so nothing is held. Aborted data is never forwarded.
#[derive(Debug)]
pub struct Planner<P> {
    resolver: TxnResolver,
    pins: VecDeque<P>,
    released_next: i64,
    open: BTreeMap<i64, i64>,
    max_batch_bytes: usize,
    limits: Limits,
    mode: Mode,
    /// Markers seen while reading ahead: per producer id, (marker offset, committed), in
    /// offset order. Consulted on the re-read. A `BTreeMap`: 24 bytes where a hash map
    /// takes 48, in every partition's planner.
    markers: BTreeMap<i64, Vec<(i64, bool)>>,
    rewind: Option<i64>,
}

/// What a [`Planner`] is doing about held batches it dropped (see [`Planner::spill`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Holding batches until their markers come.
    Normal,
    /// Reading ahead from `from` for the markers of `undecided` (producer id → first
    /// offset of its data since `from`); `held` are the producers it held at the spill,
    /// and while some of them are undecided, producers whose data is read join `undecided`.
    /// Boxed: rare, and inline it would take ~100 bytes in every partition's planner.
    Scanning(Box<Scan>),
    /// Waiting for the record set fetched from `from` (the rewind).
    Rewound { from: i64 },
}

/// [`Mode::Scanning`]'s state.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scan {
    from: i64,
    held: HashSet<i64>,
    undecided: HashMap<i64, i64>,
}

impl<P: Clone> Planner<P> {
    /// Gives back the capacity its queues do not use now (a partition that parks).
    pub fn shrink_to_fit(&mut self) {
        self.resolver.shrink_to_fit();
        self.pins.shrink_to_fit();
    }

    /// A planner whose steps start at `position`, re-encoding batches larger than
    /// `max_batch_bytes`.
    pub fn new(position: i64, max_batch_bytes: usize, limits: Limits) -> Self {
        Planner {
            resolver: TxnResolver::new(limits),
            pins: VecDeque::new(),
            released_next: position,
            open: BTreeMap::new(),
            max_batch_bytes,
            limits,
            mode: Mode::Normal,
            markers: BTreeMap::new(),
            rewind: None,
        }
    }

    /// Rule 1: drops every held batch and reads ahead for the markers of their
    /// transactions instead of holding. False (nothing done) when nothing is held or a
    /// spill is already under way (the caller then fails as before).
    pub fn spill(&mut self) -> bool {
        if self.mode != Mode::Normal || self.resolver.held_batches() == 0 {
            return false;
        }
        let undecided: HashMap<i64, i64> = self.open.iter().map(|(&p, &o)| (p, o)).collect();
        let held = undecided.keys().copied().collect();
        self.resolver.clear();
        self.pins.clear();
        self.open.clear();
        self.markers.clear();
        self.mode = Mode::Scanning(Box::new(Scan {
            from: self.released_next,
            held,
            undecided,
        }));
        true
    }

    /// Rule 2: the position to fetch again from, once (after a [`Planner::spill`] found
    /// every transaction's marker).
    pub fn take_rewind(&mut self) -> Option<i64> {
        self.rewind.take()
    }

    /// Whether the planner dropped held batches and is reading ahead or waiting for the
    /// re-read.
    pub fn is_spilling(&self) -> bool {
        self.mode != Mode::Normal
    }

    /// Reads a record set ahead for markers (rule 1); rewinds when every transaction seen
    /// is decided (rule 2).
    fn scan(&mut self, records: Bytes, position: i64) -> Result<Plan<P>, PlanError> {
        let split = split(records, &self.limits).map_err(|source| PlanError {
            offset: position,
            source,
        })?;
        let mut plan = Plan::empty(position, split.trimmed);
        let Mode::Scanning(scan) = &mut self.mode else {
            return Ok(plan);
        };
        let Scan {
            from,
            held,
            undecided,
        } = &mut **scan;
        for batch in split.batches {
            let h = *batch.header();
            let next = h.next_offset();
            if next <= plan.next_position {
                continue;
            }
            plan.next_position = next;
            if !h.attributes.is_transactional() || h.producer_id < 0 {
                continue;
            }
            if h.attributes.is_control() {
                let kind = batch
                    .control_type(&self.limits)
                    .map_err(|source| PlanError {
                        offset: h.base_offset,
                        source,
                    })?;
                let committed = match kind {
                    Some(ControlRecordType::Commit) => true,
                    Some(ControlRecordType::Abort) => false,
                    _ => continue,
                };
                self.markers
                    .entry(h.producer_id)
                    .or_default()
                    .push((h.base_offset, committed));
                undecided.remove(&h.producer_id);
                held.remove(&h.producer_id);
            } else if !held.is_empty() {
                undecided.entry(h.producer_id).or_insert(h.base_offset);
            }
        }
        if held.is_empty() && undecided.is_empty() {
            let from = *from;
            self.rewind = Some(from);
            self.mode = Mode::Rewound { from };
        }
        Ok(plan)
    }

    /// Rule 4: the outcome of the transaction `batch` of `producer_id` at `offset` belongs
    /// to, if a marker after it was seen while reading ahead.
    fn known_outcome(&self, producer_id: i64, offset: i64) -> Option<bool> {
        self.markers
            .get(&producer_id)?
            .iter()
            .find(|(at, _)| *at > offset)
            .map(|(_, committed)| *committed)
    }

    /// Forgets every held batch and restarts at `position` (after any reposition:
    /// truncation, re-creation, recovery).
    pub fn reposition(&mut self, position: i64) {
        self.resolver.clear();
        self.pins.clear();
        self.open.clear();
        self.markers.clear();
        self.mode = Mode::Normal;
        self.rewind = None;
        self.released_next = position;
    }

    /// The source position through the released steps.
    pub fn released_next(&self) -> i64 {
        self.released_next
    }

    /// Bytes of batches fetched but not released yet.
    pub fn held_bytes(&self) -> usize {
        self.resolver.held_bytes()
    }

    /// Batches fetched but not released yet.
    pub fn held_batches(&self) -> usize {
        self.resolver.held_batches()
    }

    /// The oldest transaction still waiting for its marker, if any.
    pub fn oldest_open(&self) -> Option<OpenTxn> {
        self.open
            .iter()
            .min_by_key(|(_, first)| **first)
            .map(|(&producer_id, &first_offset)| OpenTxn {
                producer_id,
                first_offset,
            })
    }

    /// Plans `records` (one partition of a Fetch response, with its aborted list) fetched
    /// from `position`; `pin` is kept alive by each of its batches until released. Only
    /// markers decide transactions (the rule for brokers whose LSO is not known to be
    /// real, such as Tansu).
    pub fn plan(
        &mut self,
        records: Bytes,
        aborted: &[AbortedTxn],
        position: i64,
        pin: P,
    ) -> Result<Plan<P>, PlanError> {
        self.plan_stable(records, aborted, None, position, pin)
    }

    /// [`Planner::plan`] with the response's last stable offset when the broker is known
    /// to compute a real one (`stable`; the fetcher decides, see its `Stability`). Rules:
    /// a transactional data batch that ends at or below `stable` and that the aborted list
    /// does not condemn is committed and released without waiting for its marker (with
    /// the held batches of its producer id, the same transaction); one past `stable`, or
    /// any batch when `stable` is `None`, waits for its marker as in [`Planner::plan`].
    /// Aborted data is dropped either way: listed, or by its ABORT marker.
    pub fn plan_stable(
        &mut self,
        records: Bytes,
        aborted: &[AbortedTxn],
        stable: Option<i64>,
        position: i64,
        pin: P,
    ) -> Result<Plan<P>, PlanError> {
        match &self.mode {
            Mode::Normal => {}
            Mode::Scanning(_) => return self.scan(records, position),
            // Rule 3: only the re-read counts.
            Mode::Rewound { from } if *from != position => return Ok(Plan::empty(position, 0)),
            Mode::Rewound { .. } => self.mode = Mode::Normal,
        }
        let split = split(records, &self.limits).map_err(|source| PlanError {
            offset: position,
            source,
        })?;
        let aborted: Vec<AbortedTransaction> = aborted
            .iter()
            .map(|a| AbortedTransaction {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
            })
            .collect();
        let mut filter = AbortedFilter::new(&aborted, self.limits);
        let mut plan = Plan::empty(position, split.trimmed);
        for batch in split.batches {
            let h = *batch.header();
            let err = |source| PlanError {
                offset: h.base_offset,
                source,
            };
            // Every batch goes through the filter so its state follows the log.
            let verdict = filter.check(&batch).map_err(err)?;
            let next = h.next_offset();
            if next <= plan.next_position {
                continue;
            }
            plan.next_position = next;
            let txn_data = verdict == TxnVerdict::Keep
                && h.attributes.is_transactional()
                && !h.attributes.is_control()
                && h.producer_id >= 0;
            let known = if txn_data {
                self.known_outcome(h.producer_id, h.base_offset)
            } else {
                None
            };
            if let Some(committed) = known {
                // Decided while reading ahead after a spill.
                if committed {
                    self.resolver.push_committed(batch);
                } else {
                    self.resolver
                        .push(batch, TxnVerdict::Aborted)
                        .map_err(err)?;
                }
            } else if txn_data && stable.is_some_and(|lso| next <= lso) {
                // Below a real LSO and not listed as aborted: committed.
                self.open.remove(&h.producer_id);
                self.resolver.push_committed(batch);
            } else {
                match verdict {
                    TxnVerdict::Control => {
                        self.open.remove(&h.producer_id);
                    }
                    _ if txn_data => {
                        self.open.entry(h.producer_id).or_insert(h.base_offset);
                    }
                    _ => {}
                }
                self.resolver.push(batch, verdict).map_err(err)?;
            }
            push_lean(&mut self.pins, pin.clone());
            while let Some(resolved) = self.resolver.pop() {
                // One pin per pushed batch, popped in the same order.
                let Some(pin) = self.pins.pop_front() else {
                    break;
                };
                let steps = self.release(resolved, &mut plan)?;
                plan.steps
                    .extend(steps.into_iter().map(|s| (s, pin.clone())));
            }
        }
        Ok(plan)
    }

    /// Plans one released batch, counting into `plan`; returns its steps.
    fn release(&mut self, resolved: Resolved, plan: &mut Plan<P>) -> Result<Vec<Step>, PlanError> {
        let from = self.released_next;
        let batch = match resolved {
            Resolved::Skip(batch, reason) => {
                match reason {
                    SkipReason::Control => plan.dropped_control += 1,
                    SkipReason::Aborted => plan.dropped_aborted += 1,
                }
                let next = batch.header().next_offset();
                if next <= from {
                    return Ok(Vec::new());
                }
                self.released_next = next;
                return Ok(vec![Step::Skip { source_next: next }]);
            }
            Resolved::Forward(batch) => batch,
        };
        let h = *batch.header();
        let next = h.next_offset();
        if next <= from {
            return Ok(Vec::new());
        }
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let limits = self.limits;
        let max = self.max_batch_bytes;
        let mut steps = Vec::new();
        if h.base_offset < from {
            plan.slow.push(SlowReason::Partial);
            batch.verify_crc().map_err(err)?;
            let mut kept = Vec::new();
            for r in batch.records(&limits).map_err(err)? {
                let r = r.map_err(err)?;
                if r.offset >= from {
                    kept.push(r);
                }
            }
            build_pieces(&kept, h.compression(), max, &mut steps).map_err(err)?;
            steps.push(Step::Skip { source_next: next });
        } else {
            match batch.classify(max) {
                Class::Forward => steps.push(Step::Forward {
                    source_first: h.base_offset,
                    count: i64::from(h.records_count),
                    batch,
                }),
                Class::Control => {
                    plan.dropped_control += 1;
                    steps.push(Step::Skip { source_next: next });
                }
                Class::NeedsReencode(ReencodeReason::Empty) => {
                    plan.slow.push(SlowReason::Empty);
                    steps.push(Step::Skip { source_next: next });
                }
                class => {
                    plan.slow.push(if matches!(class, Class::TooLarge { .. }) {
                        SlowReason::TooLarge
                    } else {
                        SlowReason::Gapped
                    });
                    batch.verify_crc().map_err(err)?;
                    let options = ReencodeOptions {
                        compression: None,
                        max_batch_bytes: Some(max),
                        limits,
                    };
                    for piece in batch.reencode(&options).map_err(err)? {
                        steps.push(Step::Reencoded {
                            batch: piece.batch,
                            source_offsets: piece.source_offsets,
                        });
                    }
                    // Trailing records removed by compaction still move the position.
                    steps.push(Step::Skip { source_next: next });
                }
            }
        }
        self.released_next = next;
        Ok(steps)
    }
}

/// Plans `records` fetched from `position` with a fresh [`Planner`]: what a single
/// response releases on its own (transactions whose marker it holds).
pub fn plan(
    records: Bytes,
    aborted: &[AbortedTxn],
    position: i64,
    max_batch_bytes: usize,
    limits: &Limits,
) -> Result<Plan, PlanError> {
    Planner::new(position, max_batch_bytes, *limits).plan(records, aborted, position, ())
}
/// Builds `records` into batches of at most `max` bytes (halving until each fits).
fn build_pieces(
    records: &[Record],
    codec: Compression,
    max: usize,
    out: &mut Vec<Step>,
) -> Result<(), strait_records::Error> {
    if records.is_empty() {
        return Ok(());
    }
    let mut builder = BatchBuilder::new(codec);
    for r in records {
        builder.push_record(r)?;
    }
    let batch = builder.build()?;
    if batch.size() > max && records.len() > 1 {
        let (left, right) = records.split_at(records.len() / 2);
        build_pieces(left, codec, max, out)?;
        return build_pieces(right, codec, max, out);
    }
    // A single record larger than `max` is produced anyway: the target's answer
    // (MESSAGE_TOO_LARGE) names the problem better than we could.
    out.push(Step::Reencoded {
        batch,
        source_offsets: records.iter().map(|r| r.offset).collect(),
    });
    Ok(())
}

#[cfg(test)]
mod tests;
