//! The flow's loop: it answers a stop at once, restarts failed partitions (the decisions
//! are [`crate::restarts::Restarts`]'s), applies topic refreshes (new partitions, deleted
//! source topics) and hands state checkpoints to their writer task. Anything that waits on
//! a cluster here — a restart reading the target's bounds, a new partition's birth state —
//! is cut short by a stop.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::partitions::Event;
use super::partitions::Key;
use super::signal::{interruptible, until_true};
use super::{FlowRun, flatten};
use crate::clock::now_ms;
use uuid::Uuid;

use crate::control::{Control, Refreshed, interval};
use crate::datapath::fetcher::Recreation;
use crate::error::MirrorError;
use crate::restarts::{Verdict, deleted_topics};

/// How often `--once` checks whether every partition reached its end.
const ONCE_POLL: Duration = Duration::from_millis(20);

impl FlowRun {
    /// Runs until `stop` turns true (or, with `--once`, every partition reached the end
    /// seen at start); `Err` only for an error that stops the flow.
    pub(super) async fn supervise(
        &mut self,
        stop: &mut watch::Receiver<bool>,
        mut control: Option<&mut Control>,
    ) -> Result<(), MirrorError> {
        let mut checkpoint = interval(self.flow.intervals.checkpoint);
        let eos = self.role.transactional();
        // Exactly-once: the state is written only by the committer, in its transactions.
        let mut commit = interval(self.flow.delivery.transaction_interval);
        let mut stopping = stop.clone();
        let scaled = self.role.scale().is_some();
        if scaled {
            self.apply_membership(stop, &mut control).await?;
        }
        loop {
            if self.once && self.partitions.caught_up() {
                return Ok(());
            }
            tokio::select! {
                _ = until_true(&mut stopping) => return Ok(()),
                event = self.partitions.next() => match event {
                    Event::Ended(done) => {
                        let (key, result) = flatten(done)?;
                        self.on_done(key, result, stop).await?;
                    }
                    Event::Due(key) => self.restart_due(key, stop).await?,
                },
                () = membership_changed(self.role.scale_mut()), if scaled => {
                    self.on_membership(stop, &mut control).await?;
                }
                Some(r) = Control::next_refresh(control.as_deref_mut()) => self.on_refresh(r, stop).await?,
                Some(r) = self.recreations.recv() => {
                    // Telling the pipelines may wait for room in their feeds: a stop
                    // does not.
                    if let Some(done) = interruptible(stop, self.on_recreation(r)).await {
                        done?;
                    }
                }
                _ = commit.tick(), if eos => {
                    // A stop does not wait for a commit stuck on the target: the
                    // transaction is abandoned (aborted by the next run, as after kill -9).
                    match interruptible(stop, self.commit()).await {
                        Some(r) => r?,
                        None => {
                            if let Some(e) = self.role.eos() {
                                e.gate().fail();
                            }
                            return Ok(());
                        }
                    }
                }
                _ = checkpoint.tick(), if control.is_some() && !eos => {
                    if let Some(c) = control.as_deref() {
                        c.checkpoint(self.partitions.dirty_states());
                    }
                }
                _ = tokio::time::sleep(ONCE_POLL), if self.once => {}
            }
        }
    }

    async fn on_done(
        &mut self,
        key: Key,
        result: Result<(), MirrorError>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), MirrorError> {
        if self
            .role
            .scale()
            .is_some_and(|s| s.releasing().contains(&key))
        {
            if let Err(e) = &result {
                tracing::debug!(flow = %self.flow.name, error = %e,
                    "a released partition stopped with an error");
            }
            self.finish_release(&key, stop).await;
            return self.after_release(stop).await;
        }
        if self.partitions.is_deleting(&key) {
            if let Err(e) = &result {
                tracing::debug!(flow = %self.flow.name, error = %e,
                    "a partition of a deleted topic stopped with an error");
            }
            self.finish_deletion(&key, stop).await;
            return Ok(());
        }
        match result {
            Ok(()) => Ok(()),
            Err(e) => self.on_failed(key, e),
        }
    }

    /// A partition's pipeline, or an attempt to restart it, failed: schedule its restart,
    /// or stop the flow.
    fn on_failed(&mut self, key: Key, e: MirrorError) -> Result<(), MirrorError> {
        if self.role.transactional() {
            // Its batches in the open transaction may be written without being in its
            // map: the transaction must not commit, and the flow restarts from the last
            // commit (`eos_failure::run_restarting`).
            tracing::warn!(flow = %self.flow.name, topic = %key.0, partition = key.1,
                error = %e, "partition failed; exactly-once: the open transaction is \
                abandoned and the flow restarts from its last commit");
            return Err(e);
        }
        let now = Instant::now();
        let restarts = self.partitions.restarts_for(&key, now, self.once);
        let (delay, attempt) = match restarts.failed(now, &e) {
            Verdict::StopFlow if e.stops_flow() => {
                tracing::error!(flow = %self.flow.name, error = %e,
                    "partition failed; stopping the flow");
                return Err(e);
            }
            Verdict::StopFlow => {
                tracing::error!(flow = %self.flow.name, error = %e,
                    "partition failed again after {} restarts in a row; --once gives up: \
                     stopping the flow", crate::restarts::ONCE_RESTART_LIMIT);
                return Err(e);
            }
            Verdict::Restart { delay, attempt } => (delay, attempt),
        };
        let since = restarts.failing_since(now).unwrap_or(now);
        tracing::warn!(flow = %self.flow.name, topic = %key.0, partition = key.1, error = %e,
            attempt, "partition failed; restarting it in-process from its recovered state in \
            {delay:?} (the other partitions go on)");
        let since_ms = now_ms() - i64::try_from(now.duration_since(since).as_millis()).unwrap_or(0);
        self.metrics.partition_failed(
            &self.flow.name,
            &key.0,
            key.1,
            since_ms,
            attempt,
            &e.to_string(),
        );
        self.partitions.schedule_restart(key, delay);
        Ok(())
    }

    /// Restarts the partitions whose delay passed (those of one topic together: one
    /// bounds request per cluster).
    async fn restart_due(
        &mut self,
        key: Key,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), MirrorError> {
        for (topic, partitions) in self.partitions.due_by_topic(key) {
            let Some(result) = interruptible(stop, self.restart(&topic, &partitions)).await else {
                return Ok(());
            };
            let started = match result {
                Ok(started) => started,
                Err(e) if e.stops_flow() => return Err(e),
                Err(e) => {
                    // Text from here on (each partition's status): named here, as a
                    // pipeline's errors are.
                    let message = e.flow(&self.flow.name).to_string();
                    for p in partitions {
                        self.on_failed((topic.clone(), p), MirrorError::other(message.clone()))?;
                    }
                    continue;
                }
            };
            for p in partitions {
                let key = (topic.clone(), p);
                if !started.contains(&p) {
                    let e = MirrorError::other("the partition is missing from the topic's bounds")
                        .topic(&topic)
                        .partition(p);
                    self.on_failed(key, e)?;
                    continue;
                }
                self.partitions.restarted(&key);
                self.metrics.partition_started(&self.flow.name, &topic, p);
                tracing::info!(flow = %self.flow.name, topic = %topic, partition = p,
                    "partition restarted");
            }
        }
        Ok(())
    }

    /// Starts partitions of `topic` again from their in-memory maps, through the start
    /// path a process start takes: their producer sequences are reset (the failed
    /// batches' fate is unknown), the target's bounds are read again, and the records past
    /// each map's `next(Target)` are checked by content (recovery) before anything is
    /// produced. An attempt is cut off after the target's `request_timeout` (then it
    /// failed, and backs off). Returns the partitions started.
    async fn restart(&mut self, topic: &str, partitions: &[i32]) -> Result<Vec<i32>, MirrorError> {
        let Some(t) = self.topics.get(topic).cloned() else {
            return Err(MirrorError::other("the topic is no longer replicated").topic(topic));
        };
        let olds = self.partitions.entries(topic, partitions);
        for (key, old) in &olds {
            let state = self.partitions.restart_state(key, old);
            self.saved.insert(key.clone(), state);
            self.producer.reset_partition(&old.target_topic, key.1);
        }
        // Bounded: the loop waits for nothing else meanwhile.
        let grace = self.stop_grace;
        let timed_out = || {
            MirrorError::other(format!("restart attempt not done within {grace:?}")).topic(topic)
        };
        let started = tokio::time::timeout(grace, self.start_partitions(&t, partitions)).await;
        let (births, pipelines) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                self.partitions.roll_back(olds);
                return Err(e);
            }
            Err(_) => {
                self.partitions.roll_back(olds);
                return Err(timed_out());
            }
        };
        let written = tokio::time::timeout(grace, self.state_writer.write(&births)).await;
        if let Err(e) = written.unwrap_or_else(|_| Err(timed_out())) {
            // A map reset by an incident was not saved: nothing is produced with it.
            self.partitions.roll_back(olds);
            return Err(e);
        }
        self.metrics
            .state_records_written(&self.flow.name, births.len() as u64);
        let started = pipelines.iter().map(|((_, p), _)| *p).collect();
        self.partitions.spawn(pipelines);
        Ok(started)
    }

    async fn on_refresh(
        &mut self,
        r: Refreshed,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), MirrorError> {
        let gone = deleted_topics(
            self.partitions.running().keys().map(|(t, _)| t.as_str()),
            &r.source_topics,
        );
        for topic in gone {
            let keys = self.partitions.not_deleting(&topic);
            if keys.is_empty() {
                continue;
            }
            tracing::info!(flow = %self.flow.name, topic = %topic, partitions = keys.len(),
                "the source topic no longer exists: stopping its partitions (acknowledged \
                 batches are recorded and their state written)");
            self.topics.remove(&topic);
            for key in keys {
                if self.partitions.delete(&key) {
                    self.finish_deletion(&key, stop).await;
                }
            }
        }
        // A partition down when its topic's id changed keeps the id its map belongs to:
        // its restart applies the topic re-creation policy.
        for t in &r.topics {
            let id = self
                .partitions
                .refreshed_id(&self.flow.name, &t.source_topic, t.topic_id);
            self.partitions.keep_ids_of_down(&t.source_topic, id);
        }
        // A topic still being stopped is started again by a later refresh (as a new topic:
        // the topic-id check decides by policy).
        let topics: Vec<_> = r
            .topics
            .into_iter()
            .filter(|t| !self.partitions.topic_deleting(&t.source_topic))
            .collect();
        if let Some(scale) = self.role.scale() {
            scale.set_partitions(&super::all_partitions(&topics));
        }
        match interruptible(stop, self.start_topics(&topics)).await {
            Some(Err(e)) if e.stops_flow() => return Err(e),
            Some(Err(e)) => {
                tracing::warn!(flow = %self.flow.name, error = %e,
                    "cannot start new partitions; the next topic refresh tries again");
            }
            _ => {}
        }
        // Scale-out: acquired partitions whose topic was not known yet, or whose state
        // read failed, start now.
        if self.role.scale().is_some() {
            let mut none = None;
            self.apply_membership(stop, &mut none).await?;
        }
        Ok(())
    }

    /// A fetcher found `r.topic` under a new id (the feed is paused).
    async fn on_recreation(&mut self, r: Recreation) -> Result<(), MirrorError> {
        if !self.topics.contains_key(&r.topic) || self.partitions.topic_deleting(&r.topic) {
            return Ok(());
        }
        self.partitions.keep_ids_of_down(&r.topic, r.new);
        self.apply_topic_id(&r.topic, r.new)
    }

    /// `topic` has id `id`: when that is a re-creation, its partitions and the topic as
    /// last refreshed go on under it (`recreation.rs`).
    pub(super) fn apply_topic_id(&mut self, topic: &str, id: Uuid) -> Result<(), MirrorError> {
        let recreated = self
            .partitions
            .apply_topic_id(&self.flow, &self.metrics, topic, id)?;
        if recreated && let Some(t) = self.topics.get_mut(topic) {
            t.topic_id = id;
        }
        Ok(())
    }

    /// A partition of a deleted source topic stopped: its state is written, and its
    /// registry entry, metric series and restart state are dropped.
    async fn finish_deletion(&mut self, key: &Key, stop: &mut watch::Receiver<bool>) {
        self.partitions.deleted(key);
        if !self.retire(key, stop).await {
            return;
        }
        self.partitions.topic_deleted(&key.0);
        tracing::info!(flow = %self.flow.name, topic = %key.0, partition = key.1,
            "stopped the partition of a deleted source topic; its metrics are removed");
    }

    /// Forgets a stopped (or down) partition: its restart state goes, its feed stops, its
    /// state is written (bounded by the stop grace; a failure is logged: the next start
    /// checks the target by content), and its registry entry and metric series are
    /// dropped. False when it was not running. Shared by deleted topics and scale-out
    /// releases.
    pub(super) async fn retire(&mut self, key: &Key, stop: &mut watch::Receiver<bool>) -> bool {
        let Some(run) = self.partitions.retire(key) else {
            return false;
        };
        // A pipeline still running stops (it no longer has a flow to report to).
        run.feed.stop();
        run.feed.with_cursor(|c| c.stopped = true);
        let state = run.state();
        // If the partition comes back (a re-created topic, a re-assignment), its saved
        // state is this one.
        self.saved.insert(key.clone(), state.clone());
        let states = [(key.clone(), state)];
        let write = self.state_writer.write(&states);
        match interruptible(stop, tokio::time::timeout(self.stop_grace, write)).await {
            Some(Ok(Ok(()))) => {}
            Some(Ok(Err(e))) => tracing::warn!(flow = %self.flow.name, topic = %key.0,
                partition = key.1, error = %e, "a stopped partition's state could not be \
                written; its next start checks the target by content"),
            _ => tracing::warn!(flow = %self.flow.name, topic = %key.0, partition = key.1,
                "a stopped partition's state write did not finish; its next start checks \
                the target by content"),
        }
        self.registry.remove(&key.0, key.1);
        if let Some(eos) = self.role.eos_mut() {
            eos.forget(key);
        }
        self.metrics
            .remove_partition(&self.flow.name, &key.0, key.1);
        true
    }
}

async fn membership_changed(scale: Option<&mut super::scale_out::Scale>) {
    match scale {
        Some(s) => s.changed().await,
        None => std::future::pending().await,
    }
}
