//! Restart decisions for a flow's partitions. Pure: no I/O, no tasks, no clock (`now` is
//! given); the flow's loop (`flow.rs`) feeds it failures and starts and does what it says.
//!
//! Rules (the tests are named after them):
//!
//! - an error that [`MirrorError::stops_flow`] — an incident under policy `fail`, a refusal, or a
//!   configuration that cannot work — stops the flow; anything else restarts the partition
//!   in-process from its recovered state;
//! - restarts back off exponentially with jitter ([`strait_client::backoff::Backoff`]):
//!   the ceiling starts at [`RESTART_BACKOFF`]`.initial` (1 s) and doubles up to
//!   `.max` (30 s); each delay is uniform between half the ceiling and the ceiling;
//! - a failed restart attempt (the target still unreachable while its bounds are read)
//!   counts as a failure like the pipeline's own, and backs off further;
//! - a partition that ran [`HEALTHY_AFTER`] (60 s) since its last start before failing
//!   starts a new sequence: the first delay again;
//! - with a limit (`--once`: [`ONCE_RESTART_LIMIT`], so a batch run cannot retry forever),
//!   the failure after that many restarts in one sequence stops the flow;
//! - a partition is *failing repeatedly* from its sequence's first failure until it has
//!   run [`HEALTHY_AFTER`]; `/health` reports it once that lasted longer than
//!   `metrics.stalled_after` ([`crate::metrics::Metrics::health`]);
//! - a replicated topic that a successful topic refresh no longer finds on the source
//!   was deleted: its partitions stop ([`deleted_topics`]); a topic that is only missing
//!   from what can be replicated (its target could not be created) is not.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use strait_client::backoff::{Backoff, BackoffConfig};

use crate::error::MirrorError;

/// Restart timing: 1 s doubling to 30 s (before jitter).
pub const RESTART_BACKOFF: BackoffConfig = BackoffConfig {
    initial: Duration::from_secs(1),
    max: Duration::from_secs(30),
};

/// How long a partition must run after a (re)start for a later failure to start a new
/// backoff sequence.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// Restarts a partition gets in one sequence under `--once` (about 30 s of backoff)
/// before its failure stops the flow.
pub const ONCE_RESTART_LIMIT: u32 = 5;

/// The replicated topics (`replicated`, repeats allowed) that the source no longer lists.
pub fn deleted_topics<'a>(
    replicated: impl IntoIterator<Item = &'a str>,
    source_topics: &BTreeSet<String>,
) -> BTreeSet<String> {
    replicated
        .into_iter()
        .filter(|t| !source_topics.contains(*t))
        .map(str::to_owned)
        .collect()
}

/// What to do about a failed partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Start the partition again after `delay`; `attempt` counts the restarts of the
    /// current sequence (1 for the first).
    Restart {
        /// How long to wait first.
        delay: Duration,
        /// Restarts in this sequence, this one included.
        attempt: u32,
    },
    /// The error stops the flow.
    StopFlow,
}

/// One partition's restart sequence.
#[derive(Debug, Clone)]
pub struct Restarts {
    config: BackoffConfig,
    healthy_after: Duration,
    backoff: Backoff,
    attempts: u32,
    limit: Option<u32>,
    /// When the current sequence's first failure happened (`None`: no failure yet).
    failing_since: Option<Instant>,
    /// When the pipeline last started (`None` while it is down).
    running_since: Option<Instant>,
}

impl Restarts {
    /// A partition that starts now, with the default timing.
    pub fn new(now: Instant) -> Self {
        Self::with(RESTART_BACKOFF, HEALTHY_AFTER, now)
    }

    /// A partition that starts now, with the given timing.
    pub fn with(config: BackoffConfig, healthy_after: Duration, now: Instant) -> Self {
        Restarts {
            config,
            healthy_after,
            backoff: Backoff::new(config),
            attempts: 0,
            limit: None,
            failing_since: None,
            running_since: Some(now),
        }
    }

    /// At most `limit` restarts per sequence; the next failure stops the flow.
    pub fn with_limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The pipeline (re)started at `now`.
    pub fn started(&mut self, now: Instant) {
        self.running_since = Some(now);
    }

    /// The pipeline, or an attempt to start it, failed at `now` with `error`.
    pub fn failed(&mut self, now: Instant, error: &MirrorError) -> Verdict {
        if error.stops_flow() {
            return Verdict::StopFlow;
        }
        if self.ran_healthy(now) {
            self.backoff = Backoff::new(self.config);
            self.attempts = 0;
            self.failing_since = None;
        }
        self.running_since = None;
        self.failing_since.get_or_insert(now);
        if self.limit.is_some_and(|l| self.attempts >= l) {
            return Verdict::StopFlow;
        }
        self.attempts = self.attempts.saturating_add(1);
        Verdict::Restart {
            delay: self.backoff.next_delay(),
            attempt: self.attempts,
        }
    }

    /// When the partition began failing repeatedly, if it has not run healthy since.
    pub fn failing_since(&self, now: Instant) -> Option<Instant> {
        if self.ran_healthy(now) {
            None
        } else {
            self.failing_since
        }
    }

    fn ran_healthy(&self, now: Instant) -> bool {
        self.running_since
            .is_some_and(|t| now.saturating_duration_since(t) >= self.healthy_after)
    }
}

#[cfg(test)]
mod tests;
