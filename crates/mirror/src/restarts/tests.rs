use super::*;
use crate::error::IncidentKind;

fn transient() -> MirrorError {
    MirrorError::other("produce: delivery timeout")
}

fn delay(v: Verdict) -> (Duration, u32) {
    match v {
        Verdict::Restart { delay, attempt } => (delay, attempt),
        Verdict::StopFlow => panic!("restart expected"),
    }
}

#[test]
fn an_incident_under_fail_or_a_configuration_error_stops_the_flow() {
    let t = Instant::now();
    let mut r = Restarts::new(t);
    let incident = MirrorError::incident(IncidentKind::TargetMismatch, "policy fail");
    assert_eq!(r.failed(t, &incident), Verdict::StopFlow);
    assert_eq!(
        r.failed(t, &MirrorError::config("raise engine.in_flight_memory")),
        Verdict::StopFlow
    );
    // Anything else is a restart.
    assert!(matches!(r.failed(t, &transient()), Verdict::Restart { .. }));
}

#[test]
fn restarts_back_off_exponentially_with_jitter_up_to_the_max() {
    let t = Instant::now();
    let mut r = Restarts::new(t);
    let s = Duration::from_secs;
    let mut ceiling = s(1);
    for n in 1..=10 {
        let (d, attempt) = delay(r.failed(t, &transient()));
        assert_eq!(attempt, n);
        assert!(d >= ceiling / 2 && d <= ceiling, "attempt {n}: {d:?}");
        ceiling = (ceiling * 2).min(s(30));
    }
}

#[test]
fn a_failed_restart_attempt_backs_off_further() {
    let t = Instant::now();
    let mut r = Restarts::new(t);
    delay(r.failed(t, &transient()));
    // No `started` in between: the attempt itself failed, long after the first start.
    let later = t + Duration::from_secs(600);
    let (d, attempt) = delay(r.failed(later, &transient()));
    assert_eq!(attempt, 2);
    assert!(d >= Duration::from_secs(1), "{d:?}");
}

#[test]
fn a_partition_that_ran_healthy_starts_a_new_sequence() {
    let t = Instant::now();
    let mut r = Restarts::new(t);
    for _ in 0..5 {
        delay(r.failed(t, &transient()));
    }
    r.started(t);
    // Fails again before it ran healthy: the sequence goes on.
    let (_, attempt) = delay(r.failed(t + Duration::from_secs(5), &transient()));
    assert_eq!(attempt, 6);
    r.started(t + Duration::from_secs(10));
    let (d, attempt) = delay(r.failed(t + Duration::from_secs(10) + HEALTHY_AFTER, &transient()));
    assert_eq!(attempt, 1);
    assert!(d <= Duration::from_secs(1), "{d:?}");
}

#[test]
fn with_a_limit_the_failure_after_the_last_restart_stops_the_flow() {
    let t = Instant::now();
    let mut r = Restarts::new(t).with_limit(2);
    delay(r.failed(t, &transient()));
    delay(r.failed(t, &transient()));
    assert_eq!(r.failed(t, &transient()), Verdict::StopFlow);
}

#[test]
fn a_replicated_topic_the_source_no_longer_lists_was_deleted() {
    let source: BTreeSet<String> = ["a", "c", "not-replicated"].map(String::from).into();
    let gone = deleted_topics(["a", "a", "b", "b", "c"], &source);
    assert_eq!(gone, BTreeSet::from(["b".to_owned()]));
    assert!(deleted_topics([], &source).is_empty());
}

#[test]
fn a_partition_fails_repeatedly_until_it_ran_healthy() {
    let t = Instant::now();
    let mut r = Restarts::new(t);
    assert_eq!(r.failing_since(t), None, "never failed");
    delay(r.failed(t, &transient()));
    let s = Duration::from_secs;
    delay(r.failed(t + s(3), &transient()));
    assert_eq!(
        r.failing_since(t + s(4)),
        Some(t),
        "since the first failure"
    );
    r.started(t + s(5));
    assert_eq!(r.failing_since(t + s(30)), Some(t), "not healthy yet");
    assert_eq!(r.failing_since(t + s(5) + HEALTHY_AFTER), None);
}
