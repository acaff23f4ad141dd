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
mod tests {
    use super::*;

    #[test]
    fn a_partition_restarting_beyond_the_threshold_is_reported_until_it_ran_healthy() {
        let s = Duration::from_secs;
        let mut f = Failing {
            since_ms: 0,
            up_since_ms: None,
            restarts: 3,
            cause: "produce: delivery timeout".into(),
        };
        assert_eq!(restart_line("f", "t", 1, &f, 59_000, s(60), s(60)), None);
        assert_eq!(
            restart_line("f", "t", 1, &f, 61_000, s(60), s(60)).as_deref(),
            Some(
                "flow f: partition t-1 restarting: 3 restart(s) in 61s, last error: produce: \
                 delivery timeout"
            )
        );
        f.up_since_ms = Some(61_000);
        assert!(
            restart_line("f", "t", 1, &f, 70_000, s(60), s(60))
                .is_some_and(|l| l.contains("failing repeatedly"))
        );
        assert_eq!(
            restart_line("f", "t", 1, &f, 121_000, s(60), s(60)),
            None,
            "ran healthy"
        );
    }

    #[test]
    fn health_and_metrics_report_restarts_through_the_registry() {
        use crate::metrics::{FlowState, Metrics};
        let m = Metrics::new();
        m.set_flow_state("f", FlowState::Running);
        m.partition_failed(
            "f",
            "t",
            2,
            crate::clock::now_ms(),
            1,
            "produce: delivery timeout",
        );
        let text = m.render();
        assert!(
            text.contains(
                "strait_partition_restarts_total{flow=\"f\",topic=\"t\",partition=\"2\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("strait_partition_restarting{flow=\"f\",topic=\"t\",partition=\"2\"} 1")
        );
        assert!(m.health().is_ok(), "not beyond the threshold yet");
        m.set_stalled_after(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        let e = m.health().unwrap_err();
        assert!(e.contains("partition t-2 restarting: 1 restart(s)"), "{e}");
        m.partition_started("f", "t", 2);
        assert!(
            m.render()
                .contains("strait_partition_restarting{flow=\"f\",topic=\"t\",partition=\"2\"} 0")
        );
        assert!(m.health().unwrap_err().contains("failing repeatedly"));
        m.remove_partition("f", "t", 2);
        assert!(m.health().is_ok(), "a removed partition is forgotten");
        assert!(
            !m.render().contains("partition=\"2\""),
            "its series are gone"
        );
    }
}
