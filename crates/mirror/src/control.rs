//! A flow's control-plane jobs, each in its own task: topic refresh (with topic config
//! sync), group sync, reverse group sync, topic ACL sync, heartbeats and state
//! checkpoints. A job waiting on a slow or
//! stalled cluster holds up nothing else: the flow's loop only receives their results,
//! so it answers a stop, a partition's failure or a restart at once, and a stop aborts
//! the jobs (none of them holds data-path state; the final state write is the flow's).
//!
//! A job's error names the cluster (and topic) it failed on; the flow is named by the
//! task that logs it (its `flow` field), or by the run when the first topic refresh
//! fails (`flow/run.rs`).
//!
//! The lead jobs' loops (group sync, reverse group sync, topic ACL sync, heartbeats) are
//! in `control/lead.rs`.

mod lead;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::acls::AclSync;
use crate::config::Flow;
use crate::datapath::partition::Progress;
use crate::groups::{GroupSync, ReverseSync};
use crate::heartbeat::Heartbeats;
use crate::metrics::Metrics;
use crate::state::{PartitionState, StateWriter};
use crate::topics::{ReplicatedTopic, TopicSync};

/// What a topic refresh found.
#[derive(Debug, Clone)]
pub(crate) struct Refreshed {
    /// The topics to replicate.
    pub topics: Vec<ReplicatedTopic>,
    /// Every topic the source listed (a replicated topic missing here was deleted).
    pub source_topics: BTreeSet<String>,
}

/// Partition states to write, each with the progress whose `dirty` flag is set again when
/// the write fails.
pub(crate) type Checkpoint = Vec<((String, i32), PartitionState, Arc<Progress>)>;

/// The running jobs of one flow.
pub(crate) struct Control {
    tasks: JoinSet<()>,
    /// The lead jobs ([`LeadJobs`]), empty while another process of the flow runs them.
    lead: JoinSet<()>,
    flow: Flow,
    /// Topic refresh results, in order.
    pub refreshed: mpsc::Receiver<Refreshed>,
    /// Where the flow hands checkpoints to the writer task (one at a time: a checkpoint
    /// the writer is not ready for is skipped and its partitions stay dirty).
    pub checkpoints: mpsc::Sender<Checkpoint>,
    /// Groups translated by the last group sync.
    pub translated: Arc<AtomicUsize>,
}

/// The jobs' moving parts.
pub(crate) struct Jobs {
    /// Topic discovery and config sync.
    pub topics: TopicSync,
    /// The checkpoint writer (the flow keeps its own for births and the final write).
    pub state: StateWriter,
    /// The jobs only one process of a flow runs (all of them without scale-out).
    pub lead: Option<LeadJobs>,
}

/// The control-plane jobs that run on one process of a flow only: with scale-out, on the
/// member assigned the control pseudo-partition ([`crate::scale::PartitionId::control`]).
pub(crate) struct LeadJobs {
    /// Group offset translation.
    pub groups: GroupSync,
    /// Target commits translated back onto the source (`sync.reverse_group_offsets`).
    pub reverse: ReverseSync,
    /// MM2 heartbeats.
    pub heartbeats: Heartbeats,
    /// Topic ACLs (`sync.topic_acls`; off by config, or once a side turns out not to
    /// support ACLs).
    pub acls: AclSync,
    /// Scale-out: the maps of every partition of the flow, not only this process's, are
    /// read from the state topic (target client, flow) before each group sync.
    pub maps_from_state: Option<(strait_client::Client, Flow)>,
}

impl LeadJobs {
    /// The lead jobs of `flow` translating with the maps of `registry`, or, with
    /// `maps_from_state` (scale-out), with every partition's maps read from the state
    /// topic before each round.
    pub fn new(
        flow: &Flow,
        (source, target): (&strait_client::Client, &strait_client::Client),
        registry: Arc<strait_offsets::Registry>,
        metrics: &Metrics,
        maps_from_state: bool,
    ) -> Self {
        let groups = GroupSync::new(
            flow,
            source.clone(),
            target.clone(),
            Arc::clone(&registry),
            metrics.clone(),
        );
        LeadJobs {
            reverse: ReverseSync::new(
                flow,
                source.clone(),
                target.clone(),
                Arc::clone(&registry),
                groups.provenance(),
            ),
            groups,
            heartbeats: Heartbeats::new(flow, target.clone()).with_metrics(metrics.clone()),
            acls: AclSync::new(flow, source.clone(), target.clone()),
            maps_from_state: maps_from_state.then(|| (target.clone(), flow.clone())),
        }
    }
}

impl Control {
    /// The next topic refresh result of `control`'s jobs (never resolves without jobs).
    pub async fn next_refresh(control: Option<&mut Control>) -> Option<Refreshed> {
        match control {
            Some(c) => c.refreshed.recv().await,
            None => std::future::pending().await,
        }
    }

    /// Starts every job of `flow` (the lead jobs when `jobs.lead` is there).
    pub fn start(flow: &Flow, jobs: Jobs, metrics: Metrics) -> Control {
        let mut tasks = JoinSet::new();
        let name = flow.name.clone();
        let (refreshed_tx, refreshed) = mpsc::channel(1);
        let (mut topics, n) = (jobs.topics, name.clone());
        let mut tick = interval(flow.intervals.topic_refresh);
        tasks.spawn(async move {
            loop {
                tick.tick().await;
                match topics.refresh().await {
                    Ok(found) => {
                        let r = Refreshed {
                            topics: found,
                            source_topics: topics.source_topics().clone(),
                        };
                        if refreshed_tx.send(r).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!(flow = %n, error = %e, "topic refresh failed"),
                }
            }
        });
        let (checkpoints, rx) = mpsc::channel(1);
        tasks.spawn(write_checkpoints(jobs.state, rx, name, metrics));
        let mut control = Control {
            tasks,
            lead: JoinSet::new(),
            flow: flow.clone(),
            refreshed,
            checkpoints,
            translated: Arc::new(AtomicUsize::new(0)),
        };
        if let Some(lead) = jobs.lead {
            control.spawn_lead(lead);
        }
        control
    }

    /// Stops the lead jobs (a job half-way through a call is cancelled), then starts
    /// `lead` when given: the hand-over of the control pseudo-partition.
    pub async fn set_lead(&mut self, lead: Option<LeadJobs>) {
        self.lead.abort_all();
        while self.lead.join_next().await.is_some() {}
        if let Some(lead) = lead {
            self.spawn_lead(lead);
        }
    }

    fn spawn_lead(&mut self, jobs: LeadJobs) {
        let flow = &self.flow;
        let tasks = &mut self.lead;
        let name = flow.name.clone();
        let from_state = jobs.maps_from_state;
        tasks.spawn(lead::sync_groups(
            jobs.groups,
            from_state.clone(),
            Arc::clone(&self.translated),
            interval(flow.intervals.group_sync),
            name.clone(),
        ));
        if jobs.reverse.enabled() {
            tasks.spawn(lead::sync_groups_back(
                jobs.reverse,
                from_state,
                interval(flow.intervals.group_sync),
                name.clone(),
            ));
        }
        if jobs.acls.off().is_none() {
            tasks.spawn(lead::sync_acls(
                jobs.acls,
                interval(flow.intervals.topic_acl_sync),
                name.clone(),
            ));
        }
        tasks.spawn(lead::emit_heartbeats(
            jobs.heartbeats,
            interval(flow.intervals.heartbeat),
            name,
        ));
    }

    /// Hands `states` to the checkpoint writer, unless it is still busy with the last
    /// one: then the partitions stay dirty for the next tick.
    pub fn checkpoint(&self, states: Checkpoint) {
        if let Err(e) = self.checkpoints.try_send(states) {
            let states = match e {
                mpsc::error::TrySendError::Full(s) | mpsc::error::TrySendError::Closed(s) => s,
            };
            tracing::debug!(
                partitions = states.len(),
                "the last state checkpoint is still being written; these wait for the next"
            );
            redirty(&states);
        }
    }

    /// Stops every job (a job half-way through a call is cancelled).
    pub async fn stop(&mut self) {
        self.tasks.abort_all();
        self.lead.abort_all();
        while self.tasks.join_next().await.is_some() {}
        while self.lead.join_next().await.is_some() {}
    }
}

/// A job's schedule: at once, then every `period` after the last run began (or at once
/// when it took longer).
pub(crate) fn interval(period: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

async fn write_checkpoints(
    mut writer: StateWriter,
    mut rx: mpsc::Receiver<Checkpoint>,
    flow: String,
    metrics: Metrics,
) {
    while let Some(states) = rx.recv().await {
        let records: Vec<_> = states
            .iter()
            .map(|(key, state, _)| (key.clone(), state.clone()))
            .collect();
        match writer.write(&records).await {
            Ok(()) => metrics.state_records_written(&flow, records.len() as u64),
            Err(e) => {
                tracing::warn!(flow = %flow, error = %e, "state checkpoint failed");
                redirty(&states);
            }
        }
    }
}

fn redirty(states: &Checkpoint) {
    for (_, _, progress) in states {
        progress.dirty.store(true, Ordering::Release);
    }
}
