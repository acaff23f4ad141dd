use super::*;

#[test]
fn the_generated_config_is_valid_and_selects_only_the_topic() {
    let cfg = build_config(
        "127.0.0.1:1",
        "127.0.0.1:2",
        "bench.t-1",
        Some(Duration::from_millis(20)),
        &[("coalesce_max_bytes".into(), "\"256KiB\"".into())],
        None,
    )
    .expect("valid");
    let flow = cfg.enabled_flows().next().expect("flow");
    assert!(matches!(
        flow.topic_decision("bench.t-1"),
        strait_mirror::config::TopicDecision::Replicate { .. }
    ));
    assert_eq!(
        flow.topic_decision("benchXt-1"),
        strait_mirror::config::TopicDecision::Filtered
    );
    assert_eq!(
        flow.topic_decision("bench.t-12"),
        strait_mirror::config::TopicDecision::Filtered
    );
    assert_eq!(
        target_topic(&cfg, "bench.t-1").expect("name"),
        "src.bench.t-1"
    );
    assert_eq!(cfg.engine.fetch_max_wait, Duration::from_millis(20));
    assert_eq!(cfg.engine.coalesce_max_bytes, 256 * 1024);
    let defaults = build_config("a:1", "b:2", "t", None, &[], None).expect("valid");
    assert_eq!(defaults.engine.fetch_max_wait, Duration::from_millis(500));
}
