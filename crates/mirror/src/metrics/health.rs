//! Flow health for `/health` and `strait_flow_up`: each flow's [`FlowState`], the
//! partitions stalled (behind with nothing acknowledged for `stalled_after`) or
//! restarting for longer than that, and the alarm for bytes held for open transactions.
//! The stall rule is pure ([`stall_line`]); the restart rule is [`super::restart`].

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::{Metrics, family, restart};
use crate::clock::now_ms;

/// What a flow is doing, for `/health` and the `strait_flow_up` gauge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowState {
    /// Connecting, loading state, creating topics.
    Starting,
    /// Replicating.
    Running,
    /// Stopped after a graceful shutdown or a finished `--once` run.
    Stopped,
    /// Stopped by an error (the reason).
    Failed(String),
}

impl FlowState {
    fn describe(&self) -> String {
        match self {
            FlowState::Starting => "starting".to_owned(),
            FlowState::Running => "running".to_owned(),
            FlowState::Stopped => "stopped".to_owned(),
            FlowState::Failed(reason) => format!("failed: {reason}"),
        }
    }
}

/// A partition `/health` watches: its series key (flow, topic, partition), the partition
/// and its progress (gone when the partition stops).
pub(super) type Watched = (family::SeriesKey, i32, std::sync::Weak<Progress>);

/// Default of [`Metrics::set_stalled_after`]: five minutes.
pub const DEFAULT_STALLED_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// A partition's progress as `/health` sees it: its lag, and when it last moved (an
/// acknowledgement, or being caught up).
#[derive(Debug)]
pub(super) struct Progress {
    pub(super) lag: std::sync::atomic::AtomicI64,
    pub(super) moved_ms: std::sync::atomic::AtomicI64,
}

/// The `/health` line for a stalled partition, if it is one (pure: `now` is given).
pub(super) fn stall_line(
    flow: &str,
    topic: &str,
    partition: i32,
    lag: i64,
    moved_ms: i64,
    now_ms: i64,
    stalled_after_ms: u64,
) -> Option<String> {
    let idle = now_ms.saturating_sub(moved_ms);
    (lag > 0 && u64::try_from(idle).unwrap_or(0) > stalled_after_ms).then(|| {
        format!(
            "flow {flow}: partition {topic}-{partition} stalled: {lag} record(s) behind, \
             nothing acknowledged for {}s",
            idle / 1000
        )
    })
}

impl Metrics {
    /// How long a partition may be behind with nothing acknowledged before `/health`
    /// reports it stalled.
    pub fn set_stalled_after(&self, after: std::time::Duration) {
        self.inner.stalled_after_ms.store(
            u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// A partition's pipeline failed (`restarts` so far in its sequence, which began at
    /// `since_ms`) and waits for a restart.
    pub fn partition_failed(
        &self,
        flow: &str,
        topic: &str,
        partition: i32,
        since_ms: i64,
        restarts: u32,
        cause: &str,
    ) {
        Self::ftp(&self.inner.f.restarts, flow, topic, partition).inc();
        Self::ftp(&self.inner.f.restarting, flow, topic, partition).set(1);
        self.failing().insert(
            (flow.to_owned(), topic.to_owned(), partition),
            restart::Failing {
                since_ms,
                up_since_ms: None,
                restarts,
                cause: cause.to_owned(),
            },
        );
    }

    /// A partition's pipeline (re)started.
    pub fn partition_started(&self, flow: &str, topic: &str, partition: i32) {
        Self::ftp(&self.inner.f.restarting, flow, topic, partition).set(0);
        let key = (flow.to_owned(), topic.to_owned(), partition);
        if let Some(f) = self.failing().get_mut(&key) {
            f.up_since_ms = Some(now_ms());
        }
    }

    /// The partition ran healthy after its restarts: `/health` forgets them.
    pub fn partition_healthy(&self, flow: &str, topic: &str, partition: i32) {
        self.failing()
            .remove(&(flow.to_owned(), topic.to_owned(), partition));
    }

    fn failing(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<(String, String, i32), restart::Failing>> {
        self.inner
            .failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (or clears, with `None`) the `/health` line for bytes held for open
    /// transactions beyond the budget's limit.
    pub fn set_held_alarm(&self, line: Option<String>) {
        let on = &self.inner.held_alarm_on;
        if line.is_none() && !on.load(Ordering::Acquire) {
            return;
        }
        let mut alarm = self
            .inner
            .held_alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        on.store(line.is_some(), Ordering::Release);
        *alarm = line;
    }

    /// Records a flow's state (for `/health` and `strait_flow_up`).
    pub fn set_flow_state(&self, flow: &str, state: FlowState) {
        let up = i64::from(state == FlowState::Running);
        self.inner.f.flow_up.get(&[flow]).set(up);
        self.inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(flow.to_owned(), state);
    }

    /// The flow's state, if it was ever set.
    pub fn flow_state(&self, flow: &str) -> Option<FlowState> {
        self.inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(flow)
            .cloned()
    }

    /// A line for each partition stalled at `now`: behind, with nothing acknowledged for
    /// `after` ms ([`stall_line`]).
    fn stalled(&self, now: i64, after: u64) -> Vec<String> {
        let mut lines = Vec::new();
        for (key, partition, w) in self
            .inner
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            if let Some(p) = w.upgrade()
                && let Some(line) = stall_line(
                    key.value(0),
                    key.value(1),
                    *partition,
                    p.lag.load(Ordering::Relaxed),
                    p.moved_ms.load(Ordering::Relaxed),
                    now,
                    after,
                )
            {
                lines.push(line);
            }
        }
        lines
    }

    /// A line for each partition restarting for longer than `after` ms at `now`
    /// ([`restart::restart_line`]).
    fn restarting(&self, now: i64, after: u64) -> Vec<String> {
        let mut lines = Vec::new();
        for ((flow, topic, partition), f) in self.failing().iter() {
            if let Some(line) = restart::restart_line(
                flow,
                topic,
                *partition,
                f,
                now,
                std::time::Duration::from_millis(after),
                crate::restarts::HEALTHY_AFTER,
            ) {
                lines.push(line);
            }
        }
        lines
    }

    /// `Ok` with a summary when every flow is running, `Err` naming those that are not
    /// (also when no flow was registered yet), the partitions stalled, and those
    /// restarting for longer than `stalled_after`.
    pub fn health(&self) -> Result<String, String> {
        let flows = self
            .inner
            .flows
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if flows.is_empty() {
            return Err("no flow started yet".to_owned());
        }
        let mut bad: Vec<String> = flows
            .iter()
            .filter(|(_, s)| **s != FlowState::Running)
            .map(|(name, s)| format!("flow {name}: {}", s.describe()))
            .collect();
        let (now, after) = (
            now_ms(),
            self.inner.stalled_after_ms.load(Ordering::Relaxed),
        );
        bad.extend(self.stalled(now, after));
        bad.extend(self.restarting(now, after));
        if let Some(line) = self
            .inner
            .held_alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            bad.push(line);
        }
        if bad.is_empty() {
            Ok(format!("ok: {} flow(s) running", flows.len()))
        } else {
            Err(bad.join("\n"))
        }
    }
}
