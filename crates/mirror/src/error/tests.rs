use super::*;

#[test]
fn message_names_every_context_field_in_order() {
    let e = MirrorError::incident(IncidentKind::SourceTruncation, "log start 10 > position 5")
        .partition(3)
        .topic("orders")
        .cluster("primary")
        .flow("primary-to-dr");
    assert_eq!(
        e.to_string(),
        "flow primary-to-dr, cluster primary, topic orders, partition 3: \
             source truncation: log start 10 > position 5"
    );
    assert_eq!(e.incident_kind(), Some(IncidentKind::SourceTruncation));
}

#[test]
fn inner_context_wins_and_empty_context_prints_nothing() {
    let e = MirrorError::other("boom").topic("inner").topic("outer");
    assert_eq!(e.to_string(), "topic inner: boom");
    assert_eq!(MirrorError::state("corrupt").to_string(), "state: corrupt");
}

#[test]
fn the_source_chain_skips_the_kind_and_names_the_cause_once() {
    let cause =
        strait_client::Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
    let e = MirrorError::kafka("fetch", cause).topic("orders");
    let source = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(
        source,
        Some(e.to_string().replacen("topic orders: fetch: ", "", 1))
    );
    assert!(matches!(e.kind(), ErrorKind::Kafka { .. }));
    assert_eq!(
        std::mem::size_of::<MirrorError>(),
        std::mem::size_of::<usize>()
    );
}

#[test]
fn only_fail_incidents_and_configuration_errors_stop_a_flow() {
    assert!(MirrorError::incident(IncidentKind::TargetMismatch, "x").stops_flow());
    assert!(MirrorError::config("raise engine.in_flight_memory").stops_flow());
    assert!(!MirrorError::other("the recorder stopped").stops_flow());
    assert!(!MirrorError::state("write timed out").stops_flow());
    assert_eq!(
        MirrorError::config("too small").topic("t").to_string(),
        "topic t: configuration: too small"
    );
}
