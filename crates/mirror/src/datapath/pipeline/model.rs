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

mod rules;
mod world;

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
