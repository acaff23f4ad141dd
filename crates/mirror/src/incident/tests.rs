use super::*;

fn every_incident() -> Vec<Incident> {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    vec![
        Incident::source_deleted(5, 10),
        Incident::source_past_end(50, 0),
        Incident::topic_recreated(a, b, Noticed::WhileRunning),
        Incident::topic_recreated(a, b, Noticed::SinceLastRun { log_start: 0 }),
        Incident::target_shorter("t", 3, 10),
        Incident::acked_elsewhere("t", 50, 42),
        Incident::recovery_mismatch("t", 40, "differs", 61),
    ]
}

#[test]
fn each_kind_is_governed_by_its_own_key() {
    let keys: Vec<(IncidentKind, &str)> = every_incident()
        .iter()
        .map(|i| (i.kind(), i.key()))
        .collect();
    for (kind, key) in keys {
        let want = match kind {
            IncidentKind::SourceTruncation => "on_source_truncation",
            IncidentKind::TopicRecreation => "on_topic_recreation",
            IncidentKind::TargetMismatch => "on_target_mismatch",
            IncidentKind::PartitionGrowthUnsupported => "none",
        };
        assert_eq!(key, want, "{kind}");
    }
}

#[test]
fn anything_about_the_target_is_a_target_mismatch_never_a_topic_recreation() {
    for i in [
        Incident::target_shorter("t", 3, 10),
        Incident::acked_elsewhere("t", 50, 42),
        Incident::recovery_mismatch("t", 40, "differs", 61),
    ] {
        assert_eq!(i.kind(), IncidentKind::TargetMismatch);
        // Only on_target_mismatch decides: the other keys do not.
        let mut p = Policies::all(IncidentPolicy::Skip);
        p.target_mismatch = IncidentPolicy::Fail;
        assert!(matches!(i.clone().decide(&p), Verdict::Fail(_)));
        let mut p = Policies::all(IncidentPolicy::Fail);
        p.target_mismatch = IncidentPolicy::Skip;
        assert!(matches!(i.decide(&p), Verdict::Skip(_)));
    }
}

#[test]
fn policy_fail_is_an_incident_error_naming_the_key_and_what_skip_would_do() {
    let v = Incident::acked_elsewhere("dst", 50, 42).decide(&Policies::default());
    let Verdict::Fail(e) = v else {
        panic!("policy fail must fail");
    };
    assert_eq!(e.incident_kind(), Some(IncidentKind::TargetMismatch));
    let text = e.to_string();
    assert!(
        text.contains("acknowledged a batch at offset 50 of dst"),
        "{text}"
    );
    assert!(text.contains("expected 42"), "{text}");
    assert!(
        text.contains("on_target_mismatch = \"fail\" stops here"),
        "{text}"
    );
    assert!(
        text.contains("on_target_mismatch = \"skip\", the map's target side restarts at 50"),
        "{text}"
    );
    assert!(!text.contains("on_topic_recreation"), "{text}");
}

#[test]
fn policy_skip_says_what_happened_which_key_skipped_and_what_it_does() {
    let v = Incident::source_deleted(5, 10).decide(&Policies::all(IncidentPolicy::Skip));
    let Verdict::Skip(s) = v else {
        panic!("policy skip must skip");
    };
    assert_eq!(s.kind, IncidentKind::SourceTruncation);
    assert!(
        s.message.contains("offsets 5..10 were not replicated"),
        "{}",
        s.message
    );
    assert!(
        s.message
            .contains("on_source_truncation = \"skip\": replication continues from offset 10"),
        "{}",
        s.message
    );
}

#[test]
fn every_incident_decides_under_both_policies() {
    for i in every_incident() {
        let key = i.key();
        match i.clone().decide(&Policies::all(IncidentPolicy::Fail)) {
            Verdict::Fail(e) => {
                assert_eq!(e.incident_kind(), Some(i.kind()));
                assert!(e.to_string().contains(key));
            }
            Verdict::Skip(s) => panic!("fail skipped: {s}"),
        }
        match i.clone().decide(&Policies::all(IncidentPolicy::Skip)) {
            Verdict::Skip(s) => {
                assert_eq!(s.kind, i.kind());
                assert!(s.message.contains(key));
            }
            Verdict::Fail(e) => panic!("skip failed: {e}"),
        }
    }
}

#[test]
fn a_topic_recreation_says_when_it_was_noticed() {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let run = Incident::topic_recreated(a, b, Noticed::WhileRunning);
    let start = Incident::topic_recreated(a, b, Noticed::SinceLastRun { log_start: 7 });
    let text = |i: Incident| match i.decide(&Policies::all(IncidentPolicy::Skip)) {
        Verdict::Skip(s) => s.message,
        Verdict::Fail(e) => e.to_string(),
    };
    assert!(text(run).contains("while replicating"));
    let start = text(start);
    assert!(start.contains("since the last run"), "{start}");
    assert!(start.contains("from offset 7"), "{start}");
}
