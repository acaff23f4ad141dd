//! A flow's state writes (at-least-once: [`FlowRun::write_state`]; exactly-once: a
//! transaction's commit, [`FlowRun::commit`], carried out by
//! [`super::exactly_once::Eos::commit`]) and its bounded graceful stop.

use std::collections::BTreeSet;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::{FlowRun, FlowSummary, flatten};
use crate::error::MirrorError;

impl FlowRun {
    /// Exactly-once: ends the open transaction with the states of the partitions that
    /// changed, and opens the next. Does nothing in at-least-once mode. An error fails
    /// the transaction (the flow stops).
    pub(super) async fn commit(&mut self) -> Result<(), MirrorError> {
        let Some(eos) = self.role.eos_mut() else {
            return Ok(());
        };
        // Every batch handed on resolves within the delivery timeout (a request past it);
        // past the transaction timeout the coordinator has aborted it anyway.
        let bound = (self.engine.delivery_timeout + self.stop_grace)
            .min(self.flow.delivery.transaction_timeout);
        eos.commit(
            &self.partitions,
            &mut self.state_writer,
            &self.metrics,
            &self.flow,
            bound,
        )
        .await
    }

    /// Writes the state of partitions that changed (or of all, when `all`).
    pub(super) async fn write_state(&mut self, all: bool) -> Result<(), MirrorError> {
        let mut states = Vec::new();
        let mut flagged = Vec::new();
        for (key, r) in self.partitions.running() {
            if !(all || r.progress.dirty.swap(false, Ordering::AcqRel)) {
                continue;
            }
            flagged.push(key.clone());
            states.push((key.clone(), r.state()));
        }
        let n = states.len() as u64;
        if let Err(e) = self.state_writer.write(&states).await {
            for key in flagged {
                if let Some(r) = self.partitions.running().get(&key) {
                    r.progress.dirty.store(true, Ordering::Release);
                }
            }
            return Err(e);
        }
        self.metrics.state_records_written(&self.flow.name, n);
        Ok(())
    }

    /// Stops fetching, lets every pipeline record its in-flight batches, writes the state.
    /// Bounded, whatever the target does: the acknowledgements get `stop_grace` (then the
    /// pipelines are cancelled; what was not recorded is found again by the next run's
    /// recovery, as after a crash), and so does the final state write.
    pub(super) async fn shutdown(&mut self) -> Result<(), MirrorError> {
        let _ = self.fetch_stop.send(true);
        self.partitions.stop_all();
        let grace = self.stop_grace;
        let mut first_error = None;
        let drained = tokio::time::timeout(grace, async {
            self.router.join().await;
            while let Some(done) = self.partitions.next_ended().await {
                match flatten(done).and_then(|(_, r)| r) {
                    Ok(()) => {}
                    // What it acknowledged is in its map; the rest is found by the next
                    // run's recovery.
                    Err(e) if !e.stops_flow() => tracing::warn!(flow = %self.flow.name,
                        error = %e, "a partition stopped with an error"),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(flow = %self.flow.name, partitions = self.partitions.tasks_left(),
                "in-flight batches not acknowledged within {grace:?} of the stop; stopping \
                 without them (the next run finds what reached the target)");
            self.producer.abort("stopping");
            self.partitions.abort_tasks().await;
        }
        if let Some(eos) = self.role.eos() {
            // Exactly-once: the last transaction commits what was recorded; after a
            // failure nothing more is written (the next run aborts the open transaction).
            if eos.gate().failed() || drained.is_err() {
                return first_error.map_or(Ok(()), Err);
            }
            return match tokio::time::timeout(grace, self.commit()).await {
                Ok(r) => r.and(first_error.map_or(Ok(()), Err)),
                Err(_) => Err(MirrorError::state(format!(
                    "the last transaction did not commit within {grace:?}; the next run \
                     resumes from the previous commit"
                ))),
            };
        }
        match tokio::time::timeout(grace, self.write_state(true)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(MirrorError::state(format!(
                    "the final state write was not acknowledged within {grace:?}; the next \
                     run resumes from the last checkpoint"
                )));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub(super) fn summary(&self, groups_translated: usize) -> FlowSummary {
        let topics: BTreeSet<&str> = self
            .partitions
            .running()
            .keys()
            .map(|(t, _)| t.as_str())
            .collect();
        FlowSummary {
            flow: self.flow.name.clone(),
            topics: topics.len(),
            partitions: self.partitions.running().len(),
            records: self
                .partitions
                .running()
                .values()
                .map(|r| r.metrics().records_total())
                .sum(),
            bytes: self
                .partitions
                .running()
                .values()
                .map(|r| r.metrics().bytes_total())
                .sum(),
            groups_translated,
            produce_requests: self.producer.stats().requests,
            produced_batches: self.producer.stats().batches,
            offset_map_bytes: self
                .partitions
                .running()
                .values()
                .map(|r| {
                    let writer = r.map.lock().unwrap_or_else(PoisonError::into_inner);
                    writer.heap_bytes() as u64
                })
                .sum(),
        }
    }
}
