//! Exponential backoff with full jitter, for retrying failed calls.
//!
//! Kept separate from broker throttling: a `throttle_time_ms` in a response is the broker
//! asking for quiet, and is honoured per broker in `crate::broker`, not by growing backoff.

use std::time::Duration;

use rand::Rng;

/// Retry timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffConfig {
    /// First delay (before jitter).
    pub initial: Duration,
    /// Largest delay (before jitter).
    pub max: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(2),
        }
    }
}

/// One retry sequence: each [`Backoff::next_delay`] doubles the ceiling, up to the max, and
/// returns a uniformly random delay between half the ceiling and the ceiling.
#[derive(Debug, Clone)]
pub struct Backoff {
    cfg: BackoffConfig,
    ceiling: Duration,
}

impl Backoff {
    /// Starts a new sequence.
    pub fn new(cfg: BackoffConfig) -> Self {
        Backoff {
            cfg,
            ceiling: cfg.initial,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.ceiling.min(self.cfg.max);
        self.ceiling = (self.ceiling * 2).min(self.cfg.max);
        let lo = ceiling / 2;
        let span = (ceiling - lo).as_micros() as u64;
        lo + Duration::from_micros(rand::rng().random_range(0..=span))
    }
}

#[cfg(test)]
mod tests;
