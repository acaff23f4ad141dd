//! Exactly-once after a failure: what a failed run does with its open transaction
//! ([`after_failed_run`], rules at [`AfterFailure`]), and the loop that starts the flow
//! (or a slot) again from its last commit ([`run_restarting`]), once its [`Owner`]
//! confirmed that this process still owns it (`owner.rs`): a restart's InitProducerId
//! would fence a successor that took over while this process was frozen or cut off.

use std::time::{Duration, Instant};

use strait_client::TransactionalProducer;
use tokio::sync::watch;

use super::owner::{Confirmed, SlotOwner};
use super::sole_writer::Guard;
use crate::config::Flow;
use crate::error::MirrorError;
use crate::metrics::{FlowState, Metrics};
use crate::restarts::Restarts;

/// An exactly-once run failed with `e`, its open transaction abandoned
/// ([`super::exactly_once::Eos::abandon`]: `producer` is its producer) and its partitions
/// stopped (`stopped`: how the stop went); what happens to the transaction follows
/// [`AfterFailure`]. The error the run ends with: the root cause (an error that stops the
/// flow, whichever partition saw it: the others fail only because the transaction did).
pub(super) async fn after_failed_run(
    e: MirrorError,
    stopped: Result<(), MirrorError>,
    producer: &TransactionalProducer,
    flow: &Flow,
    grace: Duration,
    stop: &mut watch::Receiver<bool>,
) -> MirrorError {
    let e = match stopped {
        Err(s) if s.stops_flow() && !e.stops_flow() => s,
        _ => e,
    };
    let stopping = *stop.borrow();
    match after_failure(e.stops_flow(), stopping) {
        AfterFailure::Abandon => e,
        AfterFailure::AbortAndStop => {
            abort_before_stopping(producer, flow, grace).await;
            e
        }
        AfterFailure::OwnerDecides => e,
    }
}

/// Runs an exactly-once flow, starting it again from its committed state after an error
/// that does not stop it for good (configuration errors and `fail` incidents do), once
/// its owner confirmed that this process still owns the run — also after a fenced
/// producer, which is either a successor that took the `transactional.id` (the owner
/// says so, and the run stops) or the coordinator's `transaction_timeout` (the run is
/// still ours, and starts again) — with the restart backoff (reset once a run stayed up [`crate::restarts::HEALTHY_AFTER`];
/// `--once` gives up after [`crate::restarts::ONCE_RESTART_LIMIT`] restarts). While it
/// waits, the flow's state names the error (`/health` answers 503).
pub(super) async fn run_restarting<F, Fut, T>(
    flow: &Flow,
    metrics: &Metrics,
    once: bool,
    mut stop: watch::Receiver<bool>,
    owner: Option<&Owner<'_>>,
    mut run: F,
) -> Result<T, MirrorError>
where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = Result<T, MirrorError>>,
{
    let mut restarts = Restarts::new(Instant::now());
    if once {
        restarts = restarts.with_limit(crate::restarts::ONCE_RESTART_LIMIT);
    }
    let failed = Failed { flow, metrics };
    loop {
        restarts.started(Instant::now());
        let e = match run(stop.clone()).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if e.stops_flow() || *stop.borrow() {
            return Err(e);
        }
        failed
            .until_confirmed(owner, &mut restarts, &mut stop, e)
            .await?;
    }
}

/// Where a failed exactly-once run reports while it waits to restart: the flow's log
/// lines and its state.
struct Failed<'a> {
    flow: &'a Flow,
    metrics: &'a Metrics,
}

impl Failed<'_> {
    /// After a run failed with `e`: backs off, then confirms with the group that this
    /// process still owns the run (`owner.rs`; without an owner, none is asked): the
    /// restart's InitProducerId fences whoever holds the transactional id. No answer
    /// counts as another failed attempt. `Ok` once the run may start again, otherwise
    /// the error the run ends with.
    async fn until_confirmed(
        &self,
        owner: Option<&Owner<'_>>,
        restarts: &mut Restarts,
        stop: &mut watch::Receiver<bool>,
        mut e: MirrorError,
    ) -> Result<(), MirrorError> {
        let flow = self.flow;
        loop {
            if !self.back_off(restarts, stop, &e).await {
                return Err(e);
            }
            let Some(owner) = owner else { return Ok(()) };
            let confirmed = tokio::select! {
                c = owner.confirm() => c,
                _ = stop.wait_for(|v| *v) => return Err(e),
            };
            match confirmed {
                Confirmed::Held => {
                    tracing::info!(flow = %flow.name,
                        "the group confirmed in a new generation that this process still owns \
                         the run; restarting it");
                    return Ok(());
                }
                Confirmed::Taken(why) => {
                    tracing::error!(flow = %flow.name, cause = %e, "{why}");
                    return Err(owner.taken(why));
                }
                // The flow's task names the flow if this is the error it stops with.
                Confirmed::Unknown(why) => e = MirrorError::other(why),
            }
        }
    }

    /// One more failed attempt, `e`: logged, shown in the flow's state, and waited out
    /// with the restart backoff. False when the flow stops instead: the restarts are
    /// spent (`--once`), or `stop` turned true.
    async fn back_off(
        &self,
        restarts: &mut Restarts,
        stop: &mut watch::Receiver<bool>,
        e: &MirrorError,
    ) -> bool {
        let (delay, attempt) = match restarts.failed(Instant::now(), e) {
            crate::restarts::Verdict::Restart { delay, attempt } => (delay, attempt),
            crate::restarts::Verdict::StopFlow => return false,
        };
        tracing::warn!(flow = %self.flow.name, error = %e, attempt,
            "the flow's transaction failed; restarting the flow from its last commit in \
             {delay:?}");
        self.metrics.set_flow_state(
            &self.flow.name,
            FlowState::Failed(format!(
                "restarting from the last commit (attempt {attempt}): {}",
                e.within_flow()
            )),
        );
        tokio::select! {
            () = tokio::time::sleep(delay.max(Duration::from_millis(100))) => true,
            _ = stop.wait_for(|v| *v) => false,
        }
    }
}

/// The owner of an exactly-once run, asked before it restarts.
pub(super) enum Owner<'a> {
    /// A one-process flow's sole-writer guard.
    Flow(&'a Guard),
    /// One slot of an exactly-once scale-out flow.
    Slot(SlotOwner),
}

impl Owner<'_> {
    /// Whether this process still owns the run (`owner.rs`, rules 1 to 4).
    pub(super) async fn confirm(&self) -> Confirmed {
        match self {
            Owner::Flow(guard) => guard.confirm().await,
            Owner::Slot(slot) => slot.confirm().await,
        }
    }

    /// The error a run ends with when it is taken (`owner.rs`, rule 3): a slot ends as a
    /// fenced run does, a one-process flow stops.
    pub(super) fn taken(&self, why: String) -> MirrorError {
        match self {
            Owner::Flow(_) => MirrorError::other(why),
            Owner::Slot(_) => MirrorError::fenced(why),
        }
    }
}

/// What a failed exactly-once run does with its open transaction (rules, unit-tested):
///
/// 1. **a stop wins**: when the process is stopping, the transaction is abandoned: a
///    stalled target must not hold the exit up, and the next start's InitProducerId
///    aborts it (as after kill -9);
/// 2. **stopping for good aborts now**: an error that stops the flow for good (a `fail`
///    incident, a configuration error) gets no next start from this process, and an open
///    transaction holds every `read_committed` consumer of its partitions at its first
///    offset until the coordinator's `transaction_timeout` (Kafka; Tansu never times it
///    out): it is aborted before the flow stops;
/// 3. **otherwise the owner decides**: the transaction is left open and
///    [`run_restarting`] asks the run's [`Owner`] (its group) whether this process still
///    owns the run; if it does, the next start's InitProducerId aborts the transaction,
///    and if not, the successor's already did. The coordinator is not asked: an
///    InitProducerId under this producer's id and epoch aborts whatever transaction the
///    id has open — a successor's too, since Kafka checks only the producer id while a
///    transaction is ongoing — so a process resumed from a freeze would fence the
///    process that replaced it. Only the group, which gave the run to one process, can
///    say whose the `transactional.id` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterFailure {
    /// Rule 1.
    Abandon,
    /// Rule 2.
    AbortAndStop,
    /// Rule 3.
    OwnerDecides,
}

/// [`AfterFailure`] for an error that does (`stops_flow`) or does not stop the flow for
/// good, while the process is (`stopping`) or is not stopping.
fn after_failure(stops_flow: bool, stopping: bool) -> AfterFailure {
    if stopping {
        AfterFailure::Abandon
    } else if stops_flow {
        AfterFailure::AbortAndStop
    } else {
        AfterFailure::OwnerDecides
    }
}

/// Rule 2 of [`AfterFailure`]: aborts the open transaction before the flow stops for good,
/// through InitProducerId with the producer's own id and epoch
/// ([`TransactionalProducer::probe_fenced`]: Kafka's coordinator aborts the ongoing
/// transaction and bumps the epoch), retried within `bound`. A failure is only logged:
/// the coordinator still aborts it after `transaction_timeout`. (Should a successor own
/// the id by then, this aborts the successor's open transaction too, as rule 3 explains;
/// it takes a frozen process that resumes into an error that stops it for good.)
async fn abort_before_stopping(producer: &TransactionalProducer, flow: &Flow, bound: Duration) {
    let deadline = Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline.into(), producer.probe_fenced(&flow.state_topic, 0))
            .await
        {
            Ok(Ok(false)) => {
                tracing::info!(flow = %flow.name,
                    "the flow stops for good: its open transaction is aborted, so \
                     read_committed consumers of the target are not held at it");
                return;
            }
            Ok(Ok(true)) => {
                tracing::info!(flow = %flow.name,
                    "the flow stops for good; another process took its transactional.id \
                     (and ended the open transaction)");
                return;
            }
            Ok(Err(e)) if e.is_retriable() && Instant::now() < deadline => {
                tracing::debug!(flow = %flow.name, error = %e,
                    "aborting the open transaction: asking again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => {
                tracing::warn!(flow = %flow.name, error = %e,
                    "the flow stops for good but its open transaction could not be aborted: \
                     the coordinator aborts it after delivery.transaction_timeout");
                return;
            }
            Err(_) => {
                tracing::warn!(flow = %flow.name, ?bound,
                    "the flow stops for good but its open transaction was not aborted within \
                     the bound: the coordinator aborts it after delivery.transaction_timeout");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
