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
        text.contains("strait_partition_restarts_total{flow=\"f\",topic=\"t\",partition=\"2\"} 1"),
        "{text}"
    );
    assert!(text.contains("strait_partition_restarting{flow=\"f\",topic=\"t\",partition=\"2\"} 1"));
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
