//! Scale-out in the flow's loop: this process is one member of the flow's group on the
//! target cluster (its membership: [`super::scale_out::Scale`]), and replicates only the
//! partitions its assignment holds. The decisions are [`crate::scale::reconcile`]'s; this
//! file carries them out:
//!
//! - a partition released is stopped like one of a deleted topic (in-flight batches
//!   acknowledged), its state written, then forgotten here; once nothing is being released
//!   the member rejoins, and the leader hands the partition on in a later generation;
//! - a partition acquired is started from the state topic read *again* (its previous owner
//!   wrote its state when it released it), through the start path: the target's tail past
//!   that state is checked by content, as after a crash, so a previous owner that died
//!   without writing costs duplicates within the documented bound, never loss;
//! - the control jobs (topic creation and config sync, group-offset sync, checkpoints,
//!   heartbeats, ACL sync) run while the assignment holds the control pseudo-partition;
//!   topic *discovery* runs on every member (topics missing on the target wait for the
//!   control owner to create them), and every member writes its own partitions' state;
//! - losing the assignment (expelled, or self-fenced: no heartbeat confirmed within the
//!   session timeout minus the fence margin) releases everything at once, before the
//!   coordinator could give it away.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;

use super::FlowRun;
use super::partitions::Key;
use super::scale_out::{Scale, id_of, key_of};
use super::signal::interruptible;
use crate::control::{Control, LeadJobs};
use crate::error::MirrorError;
use crate::scale::PartitionId;
use crate::scale::reconcile::reconcile;

impl FlowRun {
    /// The lead jobs, built afresh for each hand-over.
    pub(super) fn lead_jobs(&self) -> LeadJobs {
        LeadJobs::new(
            &self.flow,
            (&self.source, &self.target),
            Arc::clone(&self.registry),
            &self.metrics,
            self.role.scale().is_some(),
        )
    }

    /// The member's view changed: take the new assignment and act on it.
    pub(super) async fn on_membership(
        &mut self,
        stop: &mut watch::Receiver<bool>,
        control: &mut Option<&mut Control>,
    ) -> Result<(), MirrorError> {
        if let Some(s) = self.role.scale_mut() {
            s.take_view(&self.flow.name)?;
        }
        self.apply_membership(stop, control).await
    }

    /// Carries out what [`reconcile`] says for the current assignment.
    pub(super) async fn apply_membership(
        &mut self,
        stop: &mut watch::Receiver<bool>,
        control: &mut Option<&mut Control>,
    ) -> Result<(), MirrorError> {
        let Some(scale) = self.role.scale() else {
            return Ok(());
        };
        let running: BTreeSet<PartitionId> = self
            .partitions
            .running()
            .keys()
            .filter(|k| !self.partitions.is_deleting(k))
            .map(id_of)
            .collect();
        let releasing: BTreeSet<PartitionId> = scale.releasing().iter().map(id_of).collect();
        let changes = reconcile(scale.wanted(), &running, &releasing, scale.leading());
        let mut finish_now = Vec::new();
        for p in &changes.release {
            let key = key_of(p);
            tracing::info!(flow = %self.flow.name, topic = %key.0, partition = key.1,
                "scale-out: releasing the partition (flushing, then writing its state)");
            if let Some(s) = self.role.scale_mut() {
                s.release(key.clone());
            }
            if self.partitions.is_down(&key) {
                finish_now.push(key);
            } else if let Some(run) = self.partitions.running().get(&key) {
                run.feed.stop();
            }
        }
        // Without the control handle (a topic refresh), a hand-over waits for the next
        // change of the view.
        if let (Some(lead), Some(c)) = (changes.lead, control.as_deref_mut()) {
            if let Some(s) = self.role.scale_mut() {
                s.set_lead(lead);
            }
            let jobs = lead.then(|| self.lead_jobs());
            c.set_lead(jobs).await;
            tracing::info!(flow = %self.flow.name, lead,
                "scale-out: control jobs {}", if lead { "started here" } else { "stopped here" });
        }
        let mut rejoin = changes.rejoin;
        if !finish_now.is_empty() {
            for key in finish_now {
                self.finish_release(&key, stop).await;
            }
            // Released at once (they were down): rule 5 may hold now.
            rejoin = self.role.scale().is_some_and(Scale::rejoin_due);
        }
        if !changes.acquire.is_empty() {
            self.acquire(stop).await?;
        }
        let leading = self.role.scale().is_some_and(Scale::leading);
        let rejoin = rejoin && changes.lead.is_none_or(|l| l == leading);
        if let Some(scale) = self.role.scale_mut() {
            let running = self.partitions.running();
            scale.publish_claims(running, rejoin, leading, &self.metrics, &self.flow.name);
            let report = scale.report(&mut self.state_writer, self.stop_grace);
            let _ = interruptible(stop, report).await;
        }
        Ok(())
    }

    /// The last release of an assignment finished (`finish_release`): rejoin now, so the
    /// leader hands the partitions on without waiting for the next change or refresh.
    pub(super) async fn after_release(
        &mut self,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), MirrorError> {
        if self.role.scale().is_some_and(Scale::rejoin_due) {
            let mut none = None;
            self.apply_membership(stop, &mut none).await?;
        }
        Ok(())
    }

    /// Starts the assigned partitions not running yet, from the state topic read again.
    /// A failed read leaves them for the next topic refresh.
    async fn acquire(&mut self, stop: &mut watch::Receiver<bool>) -> Result<(), MirrorError> {
        let Some(scale) = self.role.scale() else {
            return Ok(());
        };
        let keys: Vec<Key> = scale
            .assigned()
            .filter(|k| {
                !self.partitions.running().contains_key(k) && !scale.releasing().contains(k)
            })
            // A topic not discovered here yet waits for the refresh that finds it.
            .filter(|k| self.topics.contains_key(&k.0))
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        let Some(scale) = self.role.scale_mut() else {
            return Ok(());
        };
        // Only what the state topic gained since the last takeover is read.
        let read = interruptible(stop, scale.read_state(&self.target, &self.flow)).await;
        let saved = match read {
            None => return Ok(()),
            Some(Ok((saved, _))) => saved,
            Some(Err(e)) => {
                tracing::warn!(flow = %self.flow.name, error = %e, partitions = keys.len(),
                    "scale-out: cannot read the state of acquired partitions; the next topic \
                     refresh tries again");
                return Ok(());
            }
        };
        for key in &keys {
            match saved.get(key) {
                Some(s) => self.saved.insert(key.clone(), s.clone()),
                None => self.saved.remove(key),
            };
            if let Some(s) = self.role.scale_mut() {
                s.set_stale(key, false);
            }
        }
        let topics: BTreeSet<&String> = keys.iter().map(|(t, _)| t).collect();
        let topics: Vec<_> = self
            .topics
            .values()
            .filter(|t| topics.contains(&t.source_topic))
            .cloned()
            .collect();
        match interruptible(stop, self.start_topics(&topics)).await {
            Some(Err(e)) if e.stops_flow() => Err(e),
            Some(Err(e)) => {
                tracing::warn!(flow = %self.flow.name, error = %e,
                    "scale-out: cannot start acquired partitions; the next topic refresh \
                     tries again");
                for key in keys {
                    if let Some(s) = self.role.scale_mut() {
                        s.set_stale(&key, true);
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A released partition stopped (or was down): its state is written and it is
    /// forgotten here.
    pub(super) async fn finish_release(&mut self, key: &Key, stop: &mut watch::Receiver<bool>) {
        if let Some(s) = self.role.scale_mut() {
            s.released(key);
        }
        if self.retire(key, stop).await {
            tracing::info!(flow = %self.flow.name, topic = %key.0, partition = key.1,
                "scale-out: released the partition");
        }
    }
}
