//! One flow: connect, load state, sync topics, run the data path for every replicated
//! partition, and periodically refresh topics, sync groups, write state and emit
//! heartbeats (each its own task: `control.rs`). Stops gracefully (in-flight batches
//! acknowledged, state written) when told to, or after `--once` reached the ends seen at
//! start.
//!
//! The flow's loop supervises its partitions: a failed partition is restarted in-process
//! from its recovered state after a backoff ([`crate::restarts`]), a partition whose
//! source topic was deleted is stopped and forgotten, and only an error that
//! [`MirrorError::stops_flow`] stops the flow. In exactly-once mode a failed partition
//! abandons the open transaction and the whole flow restarts from its last commit instead.
//!
//! Rules:
//!
//! - **The mode is chosen once** (`mode::Mode::of`, in [`run_flow`]) and acted on in
//!   one place (`run_mode`); what only that mode keeps is the run's `mode::Role`.
//! - **Every run has the same parts** (`FlowRun`, built by `assemble.rs` only): the
//!   connections, the producer, the router, the state writer, and the table of its
//!   partitions (`partitions::Partitions`), which alone records where each partition
//!   stands.
//! - **A mode's code is its own state's**: the exactly-once commit is
//!   `exactly_once::Eos`'s, the member's claims and reports `scale_out::Scale`'s; they
//!   take the run's pieces as arguments and never reach back into `FlowRun`.
//! - **The flow is named once per layer**: an error leaving a run (`run::run`) or the
//!   flow's task ([`run_flow`]) gets the flow's name there; the code below attaches only
//!   what it alone knows (cluster, topic, partition). A line that names the flow itself
//!   (the flow's `/health` line, failed or restarting) shows the error without it
//!   ([`MirrorError::within_flow`]). The exceptions turn an error into text before it
//!   leaves (a partition's status) and say so where they attach it.
//!
//! The folder, from the top:
//!
//! | file | holds |
//! |---|---|
//! | this file | [`run_flow`]: the mode chosen once and run; the one-process modes' guard; `FlowRun` |
//! | `mode.rs` | the modes and what each keeps (`mode::Role`), the questions the loop asks of them |
//! | `sole_writer.rs` | the guard of the one-process modes |
//! | `slots.rs` | exactly-once scale-out: one run per slot this member owns |
//! | `owner.rs` | the check before an exactly-once run restarts that it still owns its flow or slot |
//! | `run.rs` | one run: assemble, replicate, finish |
//! | `assemble.rs` | a run's parts, built once, in the order that matters |
//! | `partitions.rs` | the table of the run's partitions: entries, tasks, restarts, deletions, ids |
//! | `supervise.rs` | the loop: ended and failed partitions, restarts, refreshes, commits, checkpoints |
//! | `start.rs` | starting partitions: bounds, start offsets, feeds and pipelines |
//! | `initial_map.rs` | the offset map a partition starts with, from its saved state and the bounds |
//! | `recreation.rs` | pure: what a report of a source topic's id means |
//! | `signal.rs` | waiting on the stop signal: until it turns, or a job unless it turns first |
//! | `stop.rs` | state writes (a checkpoint, a commit), the bounded shutdown, the summary |
//! | `exactly_once.rs` | the transactional producer, its commits and the committed maps |
//! | `eos_failure.rs` | a failed exactly-once run: its transaction, and the restart from the last commit |
//! | `scale_out.rs` | this process's membership in the flow's group (`scale_out::Scale`); joining it: `scale_out/join.rs` |
//! | `membership.rs` | what the run does when the assignment changes: release, acquire, hand over |

mod assemble;
mod eos_failure;
mod exactly_once;
mod initial_map;
mod membership;
mod mode;
mod owner;
mod partitions;
mod recreation;
mod run;
mod scale_out;
mod signal;
mod slots;
mod sole_writer;
mod start;
mod stop;
mod supervise;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use strait_client::{Client, ProducerConfig};
use strait_offsets::Registry;
use tokio::sync::{mpsc, watch};

use self::assemble::Start;
use self::mode::{Mode, Role};
use self::partitions::{Key, Partitions};
use self::signal::until_true;
use crate::config::{Config, Flow};
use crate::datapath::budget::Budget;
use crate::datapath::fetcher::{Recreation, Router};
use crate::datapath::sink::Sink;
use crate::error::MirrorError;
use crate::metrics::{FlowState, Metrics};
use crate::state::{self, SavedState, StateWriter};
use crate::topics::ReplicatedTopic;

/// Record sets a fetcher may queue per partition ahead of its pipeline.
const FEED_DEPTH: usize = 4;

/// A partition pipeline not yet spawned: it starts once the partition's birth state is
/// written.
type Pipeline = (
    Key,
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), MirrorError>> + Send>>,
);

/// What a flow did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowSummary {
    /// Flow name.
    pub flow: String,
    /// Source topics replicated.
    pub topics: usize,
    /// Partitions replicated.
    pub partitions: usize,
    /// Records acknowledged by the target.
    pub records: u64,
    /// Bytes acknowledged by the target.
    pub bytes: u64,
    /// Groups translated by the last group sync.
    pub groups_translated: usize,
    /// Produce requests the data path's producer sent.
    pub produce_requests: u64,
    /// Batch transmissions of the data path's producer (after coalescing; a retried
    /// batch counts once per attempt).
    pub produced_batches: u64,
    /// Heap bytes of the partitions' offset maps at the end
    /// ([`strait_offsets::MapWriter::heap_bytes`], summed).
    pub offset_map_bytes: u64,
}

/// One run of the flow (or of one exactly-once slot): what every mode has, its mode's
/// own state ([`FlowRun::role`]) and its partitions ([`FlowRun::partitions`]). Built by
/// `assemble.rs`; driven by `supervise.rs`.
struct FlowRun {
    flow: Flow,
    source: Client,
    target: Client,
    metrics: Metrics,
    registry: Arc<Registry>,
    producer: Sink,
    /// The target producer's settings (the state writers' too).
    producer_config: ProducerConfig,
    /// What the run's delivery mode keeps: the transactional parts, the scale-out
    /// membership, the slot.
    role: Role,
    router: Arc<Router>,
    /// The router's reports of source topics found under a new id.
    recreations: mpsc::UnboundedReceiver<Recreation>,
    fetch_stop: watch::Sender<bool>,
    /// Every partition replicated, its pipeline and where it stands in the restart
    /// cycle.
    partitions: Partitions,
    /// The topics of the last refresh, by source name.
    topics: BTreeMap<String, ReplicatedTopic>,
    state_writer: StateWriter,
    saved: SavedState,
    once: bool,
    /// Per partition, bytes that may be held back for open transactions.
    max_held_bytes: usize,
    /// The in-flight budget (coalesced batches reserve from it).
    budget: Budget,
    /// Data-path settings handed to each partition pipeline.
    engine: crate::config::Engine,
    /// How long a stop waits for in-flight acknowledgements, and then for the final state
    /// write: the target's request timeout each.
    stop_grace: Duration,
}

/// Runs `flow` until `stop` turns true (or, with `once`, until caught up with the ends
/// seen at start). Returns what it did; an error stops the flow (health turns 503) and
/// names it.
pub async fn run_flow(
    flow: Flow,
    config: Config,
    metrics: Metrics,
    budget: Budget,
    once: bool,
    stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    metrics.set_flow_state(&flow.name, FlowState::Starting);
    let result = match Mode::of(&flow, once) {
        Ok(mode) => {
            let state = shared_state(&flow);
            let start = Start {
                flow: &flow,
                mode,
                config: &config,
                metrics: metrics.clone(),
                budget,
                once,
                slot: None,
                state: &state,
            };
            run_mode(start, stop).await
        }
        Err(e) => Err(e),
    };
    // The flow task's one attach: every error leaving it names the flow (its runs name it
    // too, where a restart logs it first: `run::run`).
    let result = result.map_err(|e| e.flow(&flow.name));
    match &result {
        Ok(_) => metrics.set_flow_state(&flow.name, FlowState::Stopped),
        // `/health` names the flow on its line: the reason leaves it out.
        Err(e) => metrics.set_flow_state(&flow.name, FlowState::Failed(e.within_flow())),
    }
    result
}

/// Runs the flow in its mode: the one place the mode is acted on.
async fn run_mode(
    start: Start<'_>,
    stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    match start.mode {
        Mode::AtLeastOnce | Mode::ExactlyOnce => run_sole_writer(start, stop).await,
        Mode::ScaleOut => run::run(start, stop).await,
        Mode::ExactlyOnceSlots => slots::run_slotted(start, stop).await,
    }
}

/// A flow without `[flows.scale_out]`: holds the flow's sole-writer guard
/// ([`sole_writer`]) while it runs, so that a second process of it is refused. An
/// exactly-once flow restarts from its last commit after a failure
/// ([`eos_failure::run_restarting`]), confirming first that it still holds the guard.
async fn run_sole_writer(
    start: Start<'_>,
    mut stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    let flow = start.flow;
    let target = start
        .config
        .cluster(&flow.target)
        .ok_or_else(|| MirrorError::other("unknown target cluster"))?;
    let (lost_tx, mut lost) = watch::channel(false);
    let Some(guard) = sole_writer::take(flow, target, &mut stop, lost_tx).await? else {
        return Ok(FlowSummary::default());
    };
    // The flow stops when asked, or when another process was given the flow.
    let (inner_tx, inner_stop) = watch::channel(false);
    let forward = tokio::spawn(async move {
        tokio::select! {
            () = until_true(&mut stop) => {}
            () = until_true(&mut lost) => {}
        }
        let _ = inner_tx.send(true);
    });
    let result = match start.mode {
        Mode::ExactlyOnce => {
            let (metrics, once) = (start.metrics.clone(), start.once);
            let owner = eos_failure::Owner::Flow(&guard);
            eos_failure::run_restarting(flow, &metrics, once, inner_stop, Some(&owner), |stop| {
                run::run(start.clone(), stop)
            })
            .await
        }
        _ => run::run(start, inner_stop).await,
    };
    forward.abort();
    let lost = guard.lost();
    guard.release().await;
    match lost {
        Some(why) if result.is_ok() => Err(MirrorError::other(why)),
        _ => result,
    }
}

/// The flow's state topic as its runs read it: each start of the flow (an exactly-once
/// restart, a slot taken over) reads on from where the previous one left off.
pub(super) type SharedState = Arc<tokio::sync::Mutex<state::StateTail>>;

fn shared_state(flow: &Flow) -> SharedState {
    Arc::new(tokio::sync::Mutex::new(state::StateTail::new(flow)))
}

/// Every partition of `topics`.
fn all_partitions(topics: &[ReplicatedTopic]) -> BTreeSet<Key> {
    topics
        .iter()
        .flat_map(|t| (0..t.partitions).map(|p| (t.source_topic.clone(), p)))
        .collect()
}

/// A pipeline task's partition and result; a task that panicked or was cancelled is an
/// error of the flow.
fn flatten(
    r: Result<(Key, Result<(), MirrorError>), tokio::task::JoinError>,
) -> Result<(Key, Result<(), MirrorError>), MirrorError> {
    r.map_err(|e| MirrorError::other(format!("partition task failed: {e}")))
}
