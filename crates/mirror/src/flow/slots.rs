//! Exactly-once scale-out: the flow's partitions are hashed into `scale_out.slots` slots
//! ([`crate::scale::slot_of`]), and slots, not partitions, are what the group assigns.
//! Each slot a member owns runs as an exactly-once flow of its own over its partitions,
//! with its own `transactional.id` (`<transactional_id>.slot-<n>`) and committer.
//!
//! - **Zombies are fenced at the broker.** A member that takes a slot over initialises
//!   its producer with the slot's id before it reads the slot's state, as one process
//!   does at start: the previous owner — dead, frozen, or cut off and not yet aware — is
//!   fenced, its open transaction aborted, and nothing it wrote after its last commit ever
//!   becomes visible. The self-fence of the membership stops it first in the usual case;
//!   the broker's fence is what makes it exact when it does not.
//! - **Hand-over**: a released slot's flow stops gracefully (its last transaction
//!   committed); the member rejoins once nothing is being released; the leader assigns the
//!   slot in a later generation (the two phases of [`crate::scale::reconcile`]).
//! - **Control jobs** (topic creation and config sync, group-offset sync with every
//!   partition's committed maps read from the state topic, heartbeats, ACL sync) run on
//!   the member holding the control pseudo-partition, outside the slots.
//! - A slot's flow that fails restarts from its last commit ([`eos_failure::run_restarting`])
//!   once the group confirmed in a new generation that this member still owns the slot
//!   (`owner.rs`); one fenced, or no longer this member's, simply ends here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strait_client::Client;
use strait_offsets::Registry;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};

use super::assemble::Start;
use super::eos_failure::Owner;
use super::mode::Slot;
use super::run;
use super::scale_out::Scale;
use super::{FlowSummary, eos_failure};
use crate::config::Flow;
use crate::control::{Control, Jobs, LeadJobs};
use crate::error::MirrorError;
use crate::metrics::{FlowState, Metrics};
use crate::scale::PartitionId;
use crate::scale::reconcile::{Wanted, control_job, reconcile};
use crate::state::StateWriter;
use crate::topics::TopicSync;

/// The flow of slot `n`: the flow with the slot's `transactional.id`.
fn slot_flow(flow: &Flow, n: u32) -> Flow {
    let mut f = flow.clone();
    f.delivery.transactional_id = format!("{}.slot-{n}", flow.delivery.transactional_id);
    f
}

/// Runs an exactly-once flow shared by several processes, slot by slot, until `stop`.
pub(super) async fn run_slotted(
    start: Start<'_>,
    mut stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    let Start {
        flow,
        config,
        ref metrics,
        ..
    } = start;
    let Some(so) = &flow.scale_out else {
        return Err(MirrorError::other(
            "exactly-once slots without [flows.scale_out]",
        ));
    };
    let count = so.slots.unwrap_or(crate::config::scale_out::SLOTS);
    let target_cluster = config
        .cluster(&flow.target)
        .ok_or_else(|| MirrorError::other("unknown target cluster"))?;
    let source_cluster = config
        .cluster(&flow.source)
        .ok_or_else(|| MirrorError::other("unknown source cluster"))?;
    let mut scale = Scale::join(flow, so, target_cluster).await?;
    let mut units: Vec<PartitionId> = (0..count).map(PartitionId::slot).collect();
    units.push(control_job());
    scale.set_units(units);
    if !scale.first_assignment(&flow.name, &mut stop).await? {
        scale.leave().await;
        return Ok(FlowSummary::default());
    }
    metrics.set_flow_state(&flow.name, FlowState::Running);
    let (source, target) = tokio::try_join!(
        crate::connect::connect(source_cluster),
        crate::connect::connect(target_cluster)
    )?;
    let mut reports = StateWriter::new(target.clone(), flow);
    let grace = target_cluster.request_timeout;
    let confirm_wait = so.session_timeout + so.rebalance_timeout;
    let mut slots = Slots::new(flow);
    let result = loop {
        slots
            .carry_out(&start, &mut scale, count, confirm_wait, (&source, &target))
            .await;
        scale.report(&mut reports, grace).await;
        report_member(metrics, flow, &slots, &scale);
        tokio::select! {
            _ = stop.wait_for(|v| *v) => break Ok(()),
            () = scale.changed() => {
                if let Err(e) = scale.take_view(&flow.name) {
                    break Err(e);
                }
            }
            Some(done) = slots.tasks.join_next() => {
                if let Err(e) = slots.ended(flow, done) {
                    break Err(e);
                }
            }
            // Drained: the slots discover their own partitions.
            Some(_) = Control::next_refresh(slots.control.as_mut()) => {}
        }
    };
    slots.stop().await;
    scale.retract(&mut reports, grace).await;
    scale.leave().await;
    result.map(|()| slots.summary)
}

/// The member's gauges: slots run, generation, whether it leads, assignments received,
/// how long the group has been unstable.
fn report_member(metrics: &Metrics, flow: &Flow, slots: &Slots, scale: &Scale) {
    metrics.scale_member(
        &flow.name,
        slots.runs.len(),
        scale.wanted().generation,
        slots.control.is_some(),
        scale.view().assignments_received,
        scale.view().unstable_for.as_secs_f64(),
    );
}

/// A slot's run: it ends with its slot and what it did.
type SlotRun = (u32, Result<FlowSummary, MirrorError>);

/// The slots this member runs, and the control jobs while it leads.
struct Slots {
    /// Per slot run here, the switch that stops it.
    runs: BTreeMap<u32, watch::Sender<bool>>,
    /// Slots being released (stopping; each commits its last transaction).
    releasing: BTreeSet<u32>,
    /// The slots' runs.
    tasks: JoinSet<SlotRun>,
    /// The control jobs, while this member holds the control pseudo-partition.
    control: Option<Control>,
    /// What the slots that ended did.
    summary: FlowSummary,
}

impl Slots {
    /// What the assignment asks, carried out: slots released and started, the control
    /// jobs taken or given up, and this member's claims set for its next report.
    async fn carry_out(
        &mut self,
        start: &Start<'_>,
        scale: &mut Scale,
        count: u32,
        confirm_wait: std::time::Duration,
        clients: (&Client, &Client),
    ) {
        let flow = start.flow;
        let wanted: &Wanted = scale.wanted();
        let running: BTreeSet<PartitionId> =
            self.runs.keys().map(|n| PartitionId::slot(*n)).collect();
        let rel: BTreeSet<PartitionId> = self
            .releasing
            .iter()
            .map(|n| PartitionId::slot(*n))
            .collect();
        let changes = reconcile(wanted, &running, &rel, self.control.is_some());
        for p in &changes.release {
            self.release(flow, p.partition as u32);
        }
        for p in changes.acquire.iter().filter(|p| p.is_slot()) {
            let n = p.partition as u32;
            let owner = Owner::Slot(scale.slot_owner(n, confirm_wait));
            self.start(start, Slot { n, of: count }, owner);
        }
        self.set_lead(changes.lead, flow, clients, &start.metrics)
            .await;
        scale.claim(changes.claims.clone(), changes.rejoin);
    }

    fn new(flow: &Flow) -> Self {
        Slots {
            runs: BTreeMap::new(),
            releasing: BTreeSet::new(),
            tasks: JoinSet::new(),
            control: None,
            summary: FlowSummary {
                flow: flow.name.clone(),
                ..FlowSummary::default()
            },
        }
    }

    /// Slot `n` is released: its run stops gracefully.
    fn release(&mut self, flow: &Flow, n: u32) {
        tracing::info!(flow = %flow.name, slot = n,
            "scale-out: releasing the exactly-once slot (committing, then stopping)");
        if let Some(tx) = self.runs.get(&n) {
            let _ = tx.send(true);
        }
        self.releasing.insert(n);
    }

    /// Starts `slot` as an exactly-once run of its own, restarted from its last commit
    /// after a failure once `owner` confirms the slot is still this member's.
    fn start(&mut self, start: &Start<'_>, slot: Slot, owner: Owner<'static>) {
        let n = slot.n;
        let (tx, rx) = watch::channel(false);
        self.runs.insert(n, tx);
        let f = slot_flow(start.flow, n);
        let (config, metrics, budget) = (
            start.config.clone(),
            start.metrics.clone(),
            start.budget.clone(),
        );
        let state = Arc::clone(start.state);
        tracing::info!(flow = %start.flow.name, slot = n, transactional_id = %f.delivery.transactional_id,
            "scale-out: starting the exactly-once slot (fencing its previous owner)");
        let mode = start.mode;
        self.tasks.spawn(async move {
            let start = Start {
                flow: &f,
                mode,
                config: &config,
                metrics: metrics.clone(),
                budget,
                once: false,
                slot: Some(slot),
                state: &state,
            };
            let r = eos_failure::run_restarting(&f, &metrics, false, rx, Some(&owner), |stop| {
                run::run(start.clone(), stop)
            })
            .await;
            (n, r)
        });
    }

    /// The control jobs start (`Some(true)`) or stop (`Some(false)`) here.
    async fn set_lead(
        &mut self,
        lead: Option<bool>,
        flow: &Flow,
        (source, target): (&Client, &Client),
        metrics: &Metrics,
    ) {
        match lead {
            Some(true) => {
                self.control = Some(Control::start(
                    flow,
                    lead_jobs(flow, source, target, metrics),
                    metrics.clone(),
                ));
                tracing::info!(flow = %flow.name, "scale-out: control jobs started here");
            }
            Some(false) => {
                if let Some(mut c) = self.control.take() {
                    c.stop().await;
                }
                tracing::info!(flow = %flow.name, "scale-out: control jobs stopped here");
            }
            None => {}
        }
    }

    /// A slot's run ended: what it did is added up; an error stops the flow unless the
    /// slot was taken over or released.
    fn ended(&mut self, flow: &Flow, done: Result<SlotRun, JoinError>) -> Result<(), MirrorError> {
        let Ok((n, r)) = done else {
            return Err(MirrorError::other("an exactly-once slot's task failed"));
        };
        self.runs.remove(&n);
        let released = self.releasing.remove(&n);
        match r {
            Ok(s) => add(&mut self.summary, &s),
            // Another member took the slot over (a hand-over we slept through).
            Err(e) if e.is_fenced() => tracing::warn!(flow = %flow.name, slot = n,
                error = %e, "scale-out: the slot was taken over; it stops here"),
            Err(e) if released => tracing::warn!(flow = %flow.name, slot = n,
                error = %e, "scale-out: a released slot stopped with an error"),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Stops every slot gracefully (each commits its last transaction), then the control
    /// jobs.
    async fn stop(&mut self) {
        for tx in self.runs.values() {
            let _ = tx.send(true);
        }
        while let Some(done) = self.tasks.join_next().await {
            if let Ok((_, Ok(s))) = done {
                add(&mut self.summary, &s);
            }
        }
        if let Some(mut c) = self.control.take() {
            c.stop().await;
        }
    }
}

fn add(total: &mut FlowSummary, s: &FlowSummary) {
    total.topics = total.topics.max(s.topics);
    total.partitions += s.partitions;
    total.records += s.records;
    total.bytes += s.bytes;
    total.produce_requests += s.produce_requests;
    total.produced_batches += s.produced_batches;
    total.offset_map_bytes += s.offset_map_bytes;
    total.groups_translated = total.groups_translated.max(s.groups_translated);
}

/// The control jobs of an exactly-once scale-out flow: topic creation and sync (its
/// refreshes are not otherwise used here), and the lead jobs with every partition's
/// committed maps read from the state topic.
fn lead_jobs(flow: &Flow, source: &Client, target: &Client, metrics: &Metrics) -> Jobs {
    Jobs {
        topics: TopicSync::new(flow, source.clone(), target.clone(), metrics.clone()),
        state: StateWriter::new(target.clone(), flow),
        lead: Some(LeadJobs::new(
            flow,
            (source, target),
            Arc::new(Registry::new()),
            metrics,
            true,
        )),
    }
}
