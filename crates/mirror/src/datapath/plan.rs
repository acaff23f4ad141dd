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
    AbortedFilter, AbortedTransaction, Batch, Limits, TxnResolver, TxnVerdict, push_lean, split,
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
            // Every batch goes through the filter so its state follows the log.
            let verdict = filter.check(&batch).map_err(|source| PlanError {
                offset: h.base_offset,
                source,
            })?;
            let next = h.next_offset();
            if next <= plan.next_position {
                continue;
            }
            plan.next_position = next;
            self.hold(batch, verdict, stable)?;
            push_lean(&mut self.pins, pin.clone());
            self.release_ready(&mut plan)?;
        }
        Ok(plan)
    }

    /// Hands one fetched batch to the resolver by [`Planner::plan_stable`]'s rules: decided
    /// while reading ahead (rule 4), committed below a real LSO, or as its verdict says
    /// (transactional data then waits for its marker, and its transaction is open).
    fn hold(
        &mut self,
        batch: Batch,
        verdict: TxnVerdict,
        stable: Option<i64>,
    ) -> Result<(), PlanError> {
        let h = *batch.header();
        let err = |source| PlanError {
            offset: h.base_offset,
            source,
        };
        let next = h.next_offset();
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
        Ok(())
    }

    /// Releases every batch the resolver lets go, in order, into `plan`'s steps, each
    /// step with its batch's pin.
    fn release_ready(&mut self, plan: &mut Plan<P>) -> Result<(), PlanError> {
        while let Some(resolved) = self.resolver.pop() {
            // One pin per pushed batch, popped in the same order.
            let Some(pin) = self.pins.pop_front() else {
                break;
            };
            let steps = self.release(resolved, plan)?;
            plan.steps
                .extend(steps.into_iter().map(|s| (s, pin.clone())));
        }
        Ok(())
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

mod release;
mod spill;
#[cfg(test)]
mod tests;
