//! Partition restarts as `/health` sees them (pure: `now` is given).

use std::time::Duration;

/// A partition that failed and is being restarted (kept until it ran healthy or is gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failing {
    /// When its current restart sequence began (ms since the epoch).
    pub since_ms: i64,
    /// When its pipeline last started (`None` while it waits for a restart).
    pub up_since_ms: Option<i64>,
    /// Restarts in the sequence.
    pub restarts: u32,
    /// The last failure's message.
    pub cause: String,
}

/// The `/health` line for a partition failing repeatedly: its restart sequence began more
/// than `threshold` ago and it has not run `healthy_after` since its last start.
pub(super) fn restart_line(
    flow: &str,
    topic: &str,
    partition: i32,
    f: &Failing,
    now_ms: i64,
    threshold: Duration,
    healthy_after: Duration,
) -> Option<String> {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let healthy = f
        .up_since_ms
        .is_some_and(|t| now_ms.saturating_sub(t) >= ms(healthy_after));
    let failing = now_ms.saturating_sub(f.since_ms);
    (!healthy && failing > ms(threshold)).then(|| {
        format!(
            "flow {flow}: partition {topic}-{partition} {}: {} restart(s) in {}s, last error: {}",
            if f.up_since_ms.is_some() {
                "failing repeatedly"
            } else {
                "restarting"
            },
            f.restarts,
            failing / 1000,
            f.cause
        )
    })
}

#[cfg(test)]
mod tests;
