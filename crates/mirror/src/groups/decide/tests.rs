use super::*;
use strait_offsets::Precision;

fn mapped(offset: u64) -> Option<Translation> {
    Some(Translation::Mapped {
        offset,
        precision: Precision::Exact,
    })
}

fn input(
    partition: i32,
    source: i64,
    t: Option<Translation>,
    target: Option<i64>,
) -> PartitionInput {
    PartitionInput {
        source_topic: "orders".into(),
        target_topic: "src.orders".into(),
        partition,
        source_offset: source,
        metadata: "meta".into(),
        translation: t,
        target_offset: target,
        target_is_ours: false,
    }
}

#[test]
fn inactive_group_gets_forward_commits_and_checkpoints() {
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[
            input(0, 10, mapped(7), None),
            input(1, 20, mapped(15), Some(3)),
        ],
        true,
        true,
        &HashMap::new(),
    );
    assert_eq!(
        d.commits,
        vec![
            Commit {
                topic: "src.orders".into(),
                partition: 0,
                offset: 7,
                metadata: "meta".into()
            },
            Commit {
                topic: "src.orders".into(),
                partition: 1,
                offset: 15,
                metadata: "meta".into()
            },
        ]
    );
    assert_eq!(d.checkpoints.len(), 2);
    assert_eq!(d.checkpoints[1].upstream_offset, 20);
    assert_eq!(d.checkpoints[1].downstream_offset, 15);
    assert_eq!(
        d.checkpoints[1].topic, "src.orders",
        "the target topic, as MM2 writes"
    );
    assert_eq!(d.translated, 2);
}

#[test]
fn never_backwards_and_equal_is_a_no_op() {
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[
            input(0, 10, mapped(7), Some(9)),
            input(1, 10, mapped(7), Some(7)),
        ],
        true,
        false,
        &HashMap::new(),
    );
    assert!(d.commits.is_empty());
    assert_eq!(d.behind, 1);
    assert!(d.checkpoints.is_empty(), "checkpoints off");
}

#[test]
fn active_group_is_not_touched_but_checkpointed() {
    let d = decide(
        "g",
        &TargetGroup::Active {
            state: "Stable".into(),
        },
        &[input(0, 10, mapped(7), None)],
        true,
        true,
        &HashMap::new(),
    );
    assert!(d.commits.is_empty());
    assert_eq!(d.skipped_active, 1);
    assert_eq!(d.checkpoints.len(), 1);
}

#[test]
fn past_the_replicated_end_is_pending_not_rounded() {
    let nyr = Some(Translation::NotYetReplicated {
        replicated_end: 5,
        counterpart_end: 4,
    });
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[input(0, 9, nyr, None)],
        true,
        true,
        &HashMap::new(),
    );
    assert!(d.commits.is_empty() && d.checkpoints.is_empty());
    assert_eq!(
        d.pending,
        vec![Pending {
            source_topic: "orders".into(),
            partition: 0,
            position: 9,
            replicated_end: 5
        }]
    );
}

#[test]
fn no_map_truncated_and_uncommitted_are_skipped() {
    let trunc = Some(Translation::Truncated {
        side: strait_offsets::Side::Source,
        log_start: 3,
    });
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[
            input(0, 9, None, None),
            input(1, 9, trunc, None),
            input(2, -1, mapped(1), None),
        ],
        true,
        true,
        &HashMap::new(),
    );
    assert_eq!(
        d,
        GroupDecision {
            untranslatable: 2,
            ..GroupDecision::default()
        }
    );
}

#[test]
fn unchanged_checkpoints_are_not_rewritten() {
    let last: HashMap<(String, i32), (i64, i64)> =
        [(("src.orders".to_string(), 0), (10, 7))].into();
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[input(0, 10, mapped(7), Some(7))],
        true,
        true,
        &last,
    );
    assert!(d.checkpoints.is_empty() && d.commits.is_empty());
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[input(0, 11, mapped(8), Some(7))],
        true,
        true,
        &last,
    );
    assert_eq!(d.checkpoints.len(), 1);
}

#[test]
fn rounded_down_translations_are_committed() {
    let t = Some(Translation::Mapped {
        offset: 4,
        precision: Precision::RoundedDown { at_most: 2 },
    });
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[input(0, 10, t, None)],
        true,
        false,
        &HashMap::new(),
    );
    assert_eq!(d.commits.len(), 1);
    assert_eq!(d.commits[0].offset, 4);
}

#[test]
fn a_source_reset_backwards_is_followed_only_over_this_sync_s_own_position() {
    let ours = PartitionInput {
        target_is_ours: true,
        ..input(0, 500, mapped(500), Some(1000))
    };
    let theirs = input(1, 500, mapped(500), Some(1000));
    let d = decide(
        "g",
        &TargetGroup::Inactive,
        &[ours, theirs],
        true,
        false,
        &HashMap::new(),
    );
    assert_eq!(d.commits.len(), 1, "{d:?}");
    assert_eq!((d.commits[0].partition, d.commits[0].offset), (0, 500));
    assert_eq!(d.behind, 1, "a position someone else committed stays");
}
