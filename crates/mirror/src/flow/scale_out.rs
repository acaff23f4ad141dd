//! Scale-out: this process's membership in the flow's group on the target cluster
//! ([`crate::scale`]), the state only an at-least-once scale-out run keeps ([`Scale`], in
//! [`super::mode::Role::Member`]) and the slots' runner uses. It joins (refusing a group
//! whose members run another topology), reads each assignment into what it asks, tells
//! the leader what this member owns and measured, writes the member's report for
//! `strait status`, and leaves. What the run does when the assignment changes is
//! `membership.rs`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Instant;

use strait_client::Client;
use strait_client::group::{GroupMember, GroupView, Phase, Rejoiner};
use tokio::sync::watch;

use super::owner::SlotOwner;
use super::partitions::Key;
use super::partitions::Running;
use super::signal::interruptible;
use crate::config::Flow;
use crate::error::MirrorError;
use crate::metrics::Metrics;
use crate::scale::protocol::Worker;
use crate::scale::reconcile::{Wanted, control_job};
use crate::scale::{PartitionId, PartitionLoad};
use crate::state::{DeltaSeqs, SavedState, StateTail, StateWriter};
use join::why_failed;

mod join;

/// This process's membership in its flow's group.
pub(super) struct Scale {
    member: Option<GroupMember>,
    worker: Worker,
    view: watch::Receiver<GroupView>,
    rejoiner: Rejoiner,
    group: String,
    /// Static member: leaving keeps the assignment for a restart (no LeaveGroup).
    is_static: bool,
    /// What the current assignment asks.
    wanted: Wanted,
    /// Running partitions being stopped for release.
    releasing: BTreeSet<Key>,
    /// Assigned partitions whose state must be read again before they start.
    stale: BTreeSet<Key>,
    /// Whether this process creates and re-configures target topics (the control owner).
    writes: Arc<AtomicBool>,
    /// The load meter's last reading per partition: (when, bytes acknowledged).
    meter: BTreeMap<Key, (Instant, u64)>,
    /// The generation of the last assignment held, stamped on state records
    /// ([`crate::state::stamp`]); -1 before the first.
    stamp: Arc<AtomicI32>,
    /// The member id and report last written to the state topic.
    reported: Option<(String, Vec<u8>)>,
    /// Whether the control jobs run here now.
    leading: bool,
    /// The flow's state as of the last takeover, read on from there by the next.
    state: StateTail,
}

pub(super) fn key_of(p: &PartitionId) -> Key {
    (p.topic.to_string(), p.partition)
}

pub(super) fn id_of(k: &Key) -> PartitionId {
    PartitionId::new(k.0.as_str(), k.1)
}

/// The host name: `$HOSTNAME`, else `/etc/hostname`.
pub(super) fn host_name() -> Option<String> {
    let from_env = std::env::var("HOSTNAME").ok();
    let from_file = || std::fs::read_to_string("/etc/hostname").ok();
    from_env
        .or_else(from_file)
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

impl Scale {
    /// Waits until the member holds an assignment (or failed), unless `stop` turns true
    /// first (then `Ok(false)`).
    pub(super) async fn first_assignment(
        &mut self,
        flow: &str,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<bool, MirrorError> {
        let mut view = self.view.clone();
        let wait = view.wait_for(|v| v.assignment.is_some() || v.phase == Phase::Failed);
        let waited = interruptible(stop, wait).await.map(|r| r.is_ok());
        match waited {
            None => Ok(false),
            Some(false) => Err(self.failed("the member's task ended")),
            Some(true) => {
                self.take_view(flow)?;
                Ok(true)
            }
        }
    }

    /// The switch of the topic sync's writes: on while this member holds the control
    /// jobs ([`Scale::set_lead`]), for the topic sync to share.
    pub(super) fn writes(&self) -> &Arc<AtomicBool> {
        &self.writes
    }

    /// The generation stamped on this member's state records, for its state writers to
    /// share.
    pub(super) fn stamp(&self) -> &Arc<AtomicI32> {
        &self.stamp
    }

    /// What the current assignment asks.
    pub(super) fn wanted(&self) -> &Wanted {
        &self.wanted
    }

    /// The member's latest view.
    pub(super) fn view(&self) -> GroupView {
        self.view.borrow().clone()
    }

    /// Tells the leader the units to assign (exactly-once: the slots and the control
    /// job).
    pub(super) fn set_units(&self, units: Vec<PartitionId>) {
        self.worker
            .set_partitions(units.into_iter().map(PartitionLoad::idle).collect());
    }

    /// Records what this member claims in its next JoinGroup and, with `rejoin`, asks for
    /// a new generation (exactly-once slots).
    pub(super) fn claim(&mut self, claims: Vec<PartitionId>, rejoin: bool) {
        self.worker.set_owned(self.wanted.generation, claims);
        if rejoin {
            self.wanted.revoked = false;
            self.rejoiner.rejoin();
        }
    }

    /// Reads the latest view into `wanted`; a failed member stops the flow.
    pub(super) fn take_view(&mut self, flow: &str) -> Result<(), MirrorError> {
        let view = self.view.borrow_and_update().clone();
        if view.phase == Phase::Failed {
            let ours = self.worker.protocol_name();
            let why = view
                .error
                .as_ref()
                .map_or("failed".into(), |e| why_failed(e, &ours));
            return Err(self.failed(&why));
        }
        let before = self.wanted.generation;
        self.wanted = match &view.assignment {
            None => Wanted::none(),
            Some(a) => Wanted::decode(a.generation, &a.data).unwrap_or_else(|e| {
                tracing::error!(flow, group = %self.group, error = %e,
                    "scale-out: the leader's assignment does not decode; owning nothing");
                Wanted::none()
            }),
        };
        if self.wanted.generation != before {
            tracing::info!(flow, group = %self.group, generation = self.wanted.generation,
                partitions = self.wanted.partitions.len(), control = self.wanted.control,
                revoked = self.wanted.revoked, lost = ?view.error.as_ref().map(ToString::to_string),
                "scale-out: assignment");
        }
        for p in &self.wanted.partitions {
            self.stale.insert(key_of(p));
        }
        // A member that lost its assignment still writes its releases' state: with the
        // generation it owned them in.
        if self.wanted.generation >= 0 {
            self.stamp.store(self.wanted.generation, Ordering::Release);
        }
        Ok(())
    }

    fn failed(&self, why: &str) -> MirrorError {
        MirrorError::other(format!("scale-out group {}: {why}", self.group))
    }

    /// Whether the assignment gives this process `key` and its state is fresh.
    pub(super) fn may_start(&self, key: &Key) -> bool {
        self.wanted.partitions.contains(&id_of(key)) && !self.stale.contains(key)
    }

    /// What slot `n`'s task asks before it restarts ([`super::owner`]): whether this
    /// member still owns the slot, waiting `wait` at most for a new generation.
    pub(super) fn slot_owner(&self, n: u32, wait: std::time::Duration) -> SlotOwner {
        SlotOwner {
            view: self.view.clone(),
            rejoiner: self.rejoiner.clone(),
            n,
            wait,
        }
    }

    /// Resolves when the member's view changed (never once the member is gone).
    pub(super) async fn changed(&mut self) {
        if self.view.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Writes this member's report ([`crate::state::members`]) when it changed (and
    /// tombstones the one of its previous member id). A failure is logged: the report is
    /// for `strait status`, not for replication.
    pub(super) async fn report(&mut self, writer: &mut StateWriter, grace: std::time::Duration) {
        use crate::state::members::encode_member_key;
        let id = self.view.borrow().member_id.clone();
        let value = match self.worker.metadata().encode() {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(group = %self.group, error = %e, "scale-out: member report");
                return;
            }
        };
        if id.is_empty() || self.reported.as_ref() == Some(&(id.clone(), value.clone())) {
            return;
        }
        let mut records = Vec::new();
        if let Some((old, _)) = &self.reported
            && *old != id
        {
            records.push((encode_member_key(old), None));
        }
        records.push((encode_member_key(&id), Some(value.clone())));
        match tokio::time::timeout(grace, writer.write_raw(records)).await {
            Ok(Ok(())) => self.reported = Some((id, value)),
            Ok(Err(e)) => tracing::warn!(group = %self.group, error = %e,
                "scale-out: cannot write this member's report (strait status shows it later)"),
            Err(_) => tracing::warn!(group = %self.group,
                "scale-out: this member's report was not written in time"),
        }
    }

    /// Tombstones this member's report (a graceful stop).
    pub(super) async fn retract(&mut self, writer: &mut StateWriter, grace: std::time::Duration) {
        if let Some((id, _)) = self.reported.take() {
            let key = crate::state::members::encode_member_key(&id);
            let _ = tokio::time::timeout(grace, writer.write_raw(vec![(key, None)])).await;
        }
    }

    /// Leaves the group: a static member only stops heartbeating (a restart within the
    /// session timeout keeps its partitions), a dynamic one sends LeaveGroup.
    pub(super) async fn leave(&mut self) {
        if let Some(m) = self.member.take() {
            if self.is_static {
                m.detach().await;
            } else {
                m.leave().await;
            }
        }
    }

    /// Tells the leader the flow's partitions (every member does; the leader's list is
    /// the one assigned), and, if this process leads and partitions appeared or vanished
    /// since its last plan, asks for a rebalance so they are assigned.
    pub(super) fn set_partitions(&self, all: &BTreeSet<Key>) {
        let mut ids: Vec<PartitionLoad> =
            all.iter().map(|k| PartitionLoad::idle(id_of(k))).collect();
        ids.push(PartitionLoad::idle(control_job()));
        let leads = self
            .view
            .borrow()
            .assignment
            .as_ref()
            .is_some_and(|a| a.is_leader());
        let planned: Option<BTreeSet<PartitionId>> = self
            .worker
            .last_plan()
            .map(|(_, plan)| plan.target.keys().cloned().collect());
        let now: BTreeSet<PartitionId> = ids.iter().map(|l| l.id.clone()).collect();
        self.worker.set_partitions(ids);
        if leads && planned.is_some_and(|p| p != now) {
            tracing::info!(group = %self.group, partitions = now.len(),
                "scale-out: the flow's partitions changed; rebalancing to assign them");
            self.rejoiner.rejoin();
        }
    }

    /// The partitions the assignment gives this process.
    pub(super) fn assigned(&self) -> impl Iterator<Item = Key> + '_ {
        self.wanted.partitions.iter().map(key_of)
    }

    /// The partitions being released.
    pub(super) fn releasing(&self) -> &BTreeSet<Key> {
        &self.releasing
    }

    /// `key` is being released (stopped, then its state written).
    pub(super) fn release(&mut self, key: Key) {
        self.releasing.insert(key);
    }

    /// `key`'s release finished: it is forgotten here.
    pub(super) fn released(&mut self, key: &Key) {
        self.releasing.remove(key);
        self.meter.remove(key);
    }

    /// Whether the control jobs run here now.
    pub(super) fn leading(&self) -> bool {
        self.leading
    }

    /// The control jobs start (`lead`) or stop here; only their owner creates and
    /// re-configures target topics.
    pub(super) fn set_lead(&mut self, lead: bool) {
        self.writes.store(lead, Ordering::Release);
        self.leading = lead;
    }

    /// Whether `key` must have its state read again before it starts (`stale`), or not.
    pub(super) fn set_stale(&mut self, key: &Key, stale: bool) {
        if stale {
            self.stale.insert(key.clone());
        } else {
            self.stale.remove(key);
        }
    }

    /// The flow's state as it stands now, read on from the last takeover (only what the
    /// state topic gained since).
    pub(super) async fn read_state(
        &mut self,
        target: &Client,
        flow: &Flow,
    ) -> Result<(SavedState, DeltaSeqs), MirrorError> {
        self.state.read(target, flow).await
    }

    /// Rule 5 of [`crate::scale::reconcile::reconcile`] now: the assignment revoked
    /// something and nothing is being released any more.
    pub(super) fn rejoin_due(&self) -> bool {
        self.wanted.revoked && self.releasing.is_empty()
    }

    /// Tells the leader what this process owns (`running`) and what it measured, and
    /// rejoins when asked; updates the member's metrics.
    pub(super) fn publish_claims(
        &mut self,
        running: &BTreeMap<Key, Running>,
        rejoin: bool,
        leading: bool,
        metrics: &Metrics,
        flow: &str,
    ) {
        let mut claims: Vec<PartitionId> = running.keys().map(id_of).collect();
        if leading {
            claims.push(control_job());
        }
        claims.sort();
        let now = Instant::now();
        let mut loads = Vec::new();
        for (key, r) in running {
            let (records, bytes, lag) = r.metrics().load();
            let avg = bytes.checked_div(records).unwrap_or(1024);
            let (then, before) = self.meter.get(key).copied().unwrap_or((now, bytes));
            let secs = now.duration_since(then).as_secs_f64();
            let bytes_per_sec = match secs > 0.0 {
                true => (bytes.saturating_sub(before) as f64 / secs) as u64,
                false => 0,
            };
            if secs == 0.0 || secs > 10.0 {
                self.meter.insert(key.clone(), (now, bytes));
            }
            loads.push(PartitionLoad {
                id: id_of(key),
                lag_bytes: u64::try_from(lag.max(0)).unwrap_or(0).saturating_mul(avg),
                bytes_per_sec,
            });
        }
        self.worker.set_loads(loads);
        self.worker.set_owned(self.wanted.generation, claims);
        if rejoin {
            self.wanted.revoked = false;
            self.rejoiner.rejoin();
        }
        let view = self.view.borrow();
        metrics.scale_member(
            flow,
            running.len(),
            self.wanted.generation,
            leading,
            view.assignments_received,
            view.unstable_for.as_secs_f64(),
        );
    }
}
