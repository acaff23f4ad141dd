//! One run of a flow (or of one exactly-once slot): assemble its parts
//! ([`super::assemble`]), replicate until stopped ([`FlowRun::replicate`]: the first
//! refresh, the partitions started, then the supervisor with the control jobs beside it),
//! and finish ([`finish`]: an exactly-once run that failed abandons its transaction
//! ([`super::eos_failure::after_failed_run`]); otherwise a graceful stop that saves what was
//! acknowledged).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::watch;

use super::assemble::{Parts, Start};
use super::eos_failure::after_failed_run;
use super::mode::Role;
use super::signal::interruptible;
use super::{FlowRun, FlowSummary, all_partitions};
use crate::acls::AclSync;
use crate::control::{Control, Jobs, LeadJobs};
use crate::error::MirrorError;
use crate::groups::{GroupSync, ReverseSync};
use crate::heartbeat::Heartbeats;
use crate::metrics::FlowState;
use crate::state::StateWriter;
use crate::topics::TopicSync;

/// Runs the flow (or the slot) until `stop` turns true, or with `--once` until caught up.
/// An error names the flow: the run's one attach of it (a restart logs the error, and
/// shows it in the flow's state, before the flow's task returns it).
pub(super) async fn run(
    start: Start<'_>,
    stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    let name = start.flow.name.clone();
    run_to_end(start, stop).await.map_err(|e| e.flow(name))
}

/// [`run`]'s steps: assemble, replicate, finish.
async fn run_to_end(
    start: Start<'_>,
    mut stop: watch::Receiver<bool>,
) -> Result<FlowSummary, MirrorError> {
    let flow = start.flow;
    let (mut run, parts) = FlowRun::assemble(&start).await?;
    let started = Instant::now();
    let result = run.replicate(parts, &mut stop).await;
    let groups_translated = finish(&mut run, result, &mut stop).await?;
    let summary = run.summary(groups_translated);
    tracing::info!(flow = %flow.name, records = summary.records, bytes = summary.bytes,
        elapsed = ?started.elapsed(), "flow stopped");
    Ok(summary)
}

impl FlowRun {
    /// The first refresh, the partitions started, then supervision until stopped (with
    /// `--once`: until caught up, then one commit and one group sync). The groups the
    /// last group sync translated.
    async fn replicate(
        &mut self,
        parts: Parts,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<usize, MirrorError> {
        let Parts {
            mut topic_sync,
            writes,
            mut group_sync,
            heartbeats,
        } = parts;
        let flow = self.flow.clone();
        // A stop during the start is answered too (a cluster may be stalled).
        let Some(topics) = interruptible(stop, topic_sync.refresh()).await else {
            return Ok(0);
        };
        let topics = topics?;
        // Only the first refresh creates missing target topics (every member of a
        // scale-out flow does at start: one creation wins); later, the control owner.
        if let Some(w) = &writes {
            w.store(false, Ordering::Release);
        }
        if let Some(scale) = self.role.scale_mut() {
            scale.set_partitions(&all_partitions(&topics));
            if !scale.first_assignment(&flow.name, stop).await? {
                return Ok(0);
            }
        }
        let Some(started) = interruptible(stop, self.start_topics(&topics)).await else {
            return Ok(0);
        };
        started?;
        self.metrics.set_flow_state(&flow.name, FlowState::Running);
        tracing::info!(flow = %flow.name, topics = topics.len(), partitions = self.partitions.running().len(),
            "replicating");
        if self.once {
            self.supervise(stop, None).await?;
            // Exactly-once: the group sync below translates against committed maps.
            self.commit().await?;
            let report = group_sync.sync_once().await;
            return Ok(report.map(|r| r.groups_translated).unwrap_or_else(|e| {
                tracing::warn!(flow = %flow.name, error = %e, "group sync failed");
                0
            }));
        }
        let jobs = self.control_jobs(topic_sync, group_sync, heartbeats);
        let mut control = Control::start(&flow, jobs, self.metrics.clone());
        let supervised = self.supervise(stop, Some(&mut control)).await;
        control.stop().await;
        supervised.map(|()| control.translated.load(Ordering::Relaxed))
    }

    /// The jobs of the run's control tasks: topic refreshes, state checkpoints, and —
    /// except in a slot, whose lead jobs run on the slots' runner (`slots.rs`) — the
    /// group syncs, heartbeats and ACL sync.
    fn control_jobs(
        &self,
        topic_sync: TopicSync,
        group_sync: GroupSync,
        heartbeats: Heartbeats,
    ) -> Jobs {
        let flow = &self.flow;
        let (source, target) = (self.source.clone(), self.target.clone());
        let mut state =
            StateWriter::new(target.clone(), flow).with_producer_config(self.producer_config);
        if let Some(s) = self.role.scale() {
            state = state.with_generation(Arc::clone(s.stamp()));
        }
        // A slot's lead jobs run on the slots' runner (`slots`), outside the slots.
        let lead = (!matches!(self.role, Role::Slot(..))).then(|| {
            let provenance = group_sync.provenance();
            LeadJobs {
                groups: group_sync,
                reverse: ReverseSync::new(
                    flow,
                    source.clone(),
                    target.clone(),
                    Arc::clone(&self.registry),
                    provenance,
                ),
                heartbeats,
                acls: AclSync::new(flow, source.clone(), target.clone()),
                maps_from_state: None,
            }
        });
        Jobs {
            topics: topic_sync,
            lead,
            state,
        }
    }
}

/// Ends a run with `result`: nothing more is written after an error; an exactly-once run
/// that failed abandons its transaction and stops
/// ([`super::eos_failure::after_failed_run`]); any
/// other run stops gracefully (also after an error, to save what was acknowledged) and a
/// member leaves its group.
async fn finish(
    run: &mut FlowRun,
    result: Result<usize, MirrorError>,
    stop: &mut watch::Receiver<bool>,
) -> Result<usize, MirrorError> {
    let flow = run.flow.name.clone();
    if let Err(e) = &result {
        // A batch renumbered under a new epoch after a failed one could duplicate a
        // request whose fate is unknown.
        run.producer.abort(&e.to_string());
    }
    let result = match (result, run.role.eos()) {
        (Err(e), Some(eos)) => {
            let producer = eos.abandon();
            let stopped = run.shutdown().await;
            let grace = run.stop_grace;
            return Err(after_failed_run(e, stopped, &producer, &run.flow, grace, stop).await);
        }
        (r, _) => r,
    };
    let stopped = run.shutdown().await;
    let grace = run.stop_grace;
    if let Some(scale) = run.role.scale_mut() {
        scale.retract(&mut run.state_writer, grace).await;
        scale.leave().await;
    }
    if run.role.slot().is_some() {
        // An exactly-once slot leaving this process: its partitions' series go with it.
        for (topic, p) in run.partitions.running().keys() {
            run.metrics.remove_partition(&flow, topic, *p);
        }
    }
    let groups_translated = result?;
    stopped?;
    Ok(groups_translated)
}
