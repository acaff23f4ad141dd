use super::*;

fn input(from_offset: i64, translation: Translation, to_offset: Option<i64>) -> PartitionInput {
    PartitionInput {
        from_topic: "orders".into(),
        to_topic: "primary.orders".into(),
        partition: 0,
        from_offset,
        translation: Some(translation),
        to_offset,
        to_log_start: None,
    }
}

fn exact(offset: u64) -> Translation {
    Translation::Mapped {
        offset,
        precision: Precision::Exact,
    }
}

fn rounded(offset: u64, at_most: u64) -> Translation {
    Translation::Mapped {
        offset,
        precision: Precision::RoundedDown { at_most },
    }
}

fn commit(offset: u64) -> Verdict {
    Verdict::Commit {
        offset,
        rounded_by: None,
        target_only: None,
        skips: None,
    }
}

const NONE: Options = Options {
    allow_rounded: false,
    allow_backwards: false,
    allow_target_only: false,
    force: false,
    accept_inexact: false,
};

#[test]
fn exact_or_nothing_an_exact_translation_is_committed() {
    for d in [Direction::Failover, Direction::Failback] {
        assert_eq!(decide(d, &input(10, exact(7), None), NONE), commit(7));
    }
}

#[test]
fn exact_or_nothing_rounded_positions_need_allow_rounded() {
    let i = input(10, rounded(5, 3), None);
    assert_eq!(
        decide(Direction::Failover, &i, NONE),
        Verdict::Refused {
            reason: Refusal::Rounded {
                offset: 5,
                at_most: 3
            }
        }
    );
    let allowed = Options {
        allow_rounded: true,
        ..NONE
    };
    assert_eq!(
        decide(Direction::Failover, &i, allowed),
        Verdict::Commit {
            offset: 5,
            rounded_by: Some(3),
            target_only: None,
            skips: None,
        }
    );
}

#[test]
fn no_map_no_commit() {
    let mut i = input(10, exact(7), None);
    i.translation = None;
    assert_eq!(
        decide(Direction::Failover, &i, NONE),
        Verdict::Refused {
            reason: Refusal::NoMap
        }
    );
    let i = input(-1, exact(7), None);
    assert_eq!(
        decide(Direction::Failover, &i, NONE),
        Verdict::Refused {
            reason: Refusal::NoPosition
        }
    );
}

#[test]
fn never_past_the_replicated_range_on_failover() {
    let t = Translation::NotYetReplicated {
        replicated_end: 8,
        counterpart_end: 6,
    };
    let all = Options {
        allow_rounded: true,
        allow_backwards: true,
        allow_target_only: true,
        force: true,
        accept_inexact: true,
    };
    assert_eq!(
        decide(Direction::Failover, &input(10, t, None), all),
        Verdict::Refused {
            reason: Refusal::NotYetReplicated { replicated_end: 8 }
        }
    );
}

#[test]
fn target_only_records_have_no_source_offset_on_failback() {
    // The group read target offsets up to 12; the map covers the target up to 9.
    let t = Translation::NotYetReplicated {
        replicated_end: 9,
        counterpart_end: 20,
    };
    assert_eq!(
        decide(Direction::Failback, &input(12, t, None), NONE),
        Verdict::Refused {
            reason: Refusal::TargetOnly {
                records: 3,
                source_position: 20
            }
        }
    );
    let allowed = Options {
        allow_target_only: true,
        ..NONE
    };
    assert_eq!(
        decide(Direction::Failback, &input(12, t, None), allowed),
        Verdict::Commit {
            offset: 20,
            rounded_by: None,
            target_only: Some(3),
            skips: None,
        }
    );
}

#[test]
fn records_gone_on_either_side_are_refused() {
    let t = Translation::Truncated {
        side: Side::Target,
        log_start: 4,
    };
    assert_eq!(
        decide(Direction::Failback, &input(2, t, None), NONE),
        Verdict::Refused {
            reason: Refusal::Truncated {
                side: Side::Target,
                log_start: 4
            }
        }
    );
}

#[test]
fn never_backwards_unless_allowed_and_equal_is_already_done() {
    let i = input(10, exact(7), Some(9));
    assert_eq!(
        decide(Direction::Failover, &i, NONE),
        Verdict::Refused {
            reason: Refusal::Backwards {
                current: 9,
                offset: 7
            }
        }
    );
    let back = Options {
        allow_backwards: true,
        ..NONE
    };
    assert_eq!(decide(Direction::Failover, &i, back), commit(7));
    assert_eq!(
        decide(Direction::Failover, &input(10, exact(7), Some(7)), NONE),
        Verdict::AlreadyThere { offset: 7 }
    );
    // Below or none: a plain commit.
    assert_eq!(
        decide(Direction::Failover, &input(10, exact(7), Some(3)), NONE),
        commit(7)
    );
    assert_eq!(
        decide(Direction::Failover, &input(10, exact(7), Some(-1)), NONE),
        commit(7)
    );
}

#[test]
fn both_groups_idle_force_only_covers_the_side_left() {
    let idle = GroupActivity::Idle;
    let active = GroupActivity::Active {
        detail: "Stable, 1 member".into(),
    };
    let force = Options {
        force: true,
        ..NONE
    };
    assert_eq!(blocker(&idle, &idle, NONE), None);
    assert!(blocker(&active, &idle, NONE).is_some());
    assert_eq!(blocker(&active, &idle, force), None);
    assert!(blocker(&idle, &active, force).is_some());
}

#[test]
fn never_replicated_a_position_before_the_replication_start_is_refused_with_what_it_skips() {
    // `latest` started replication at source 100 (target 40); the group is at 50.
    let t = Translation::BeforeReplication {
        replication_start: 100,
        counterpart: 40,
    };
    assert_eq!(
        decide(Direction::Failover, &input(50, t, None), NONE),
        Verdict::Refused {
            reason: Refusal::BeforeReplication {
                replication_start: 100,
                skips: 50
            }
        }
    );
    let accepted = Options {
        accept_inexact: true,
        ..NONE
    };
    assert_eq!(
        decide(Direction::Failover, &input(50, t, None), accepted),
        Verdict::Commit {
            offset: 40,
            rounded_by: None,
            target_only: None,
            skips: Some(50),
        }
    );
}

#[test]
fn records_gone_a_commit_below_the_log_start_the_side_has_now_is_refused() {
    let mut i = input(10, exact(7), None);
    i.to_log_start = Some(9);
    assert_eq!(
        decide(Direction::Failover, &i, NONE),
        Verdict::Refused {
            reason: Refusal::Truncated {
                side: Side::Target,
                log_start: 9
            }
        }
    );
    i.to_log_start = Some(7);
    assert_eq!(decide(Direction::Failover, &i, NONE), commit(7));
}

#[test]
fn both_groups_idle_a_source_declared_gone_is_not_asked_but_the_target_still_is() {
    let gone = GroupActivity::NotChecked;
    assert_eq!(blocker(&gone, &GroupActivity::Idle, NONE), None);
    let active = GroupActivity::Active {
        detail: "Stable, 1 member".into(),
    };
    assert!(blocker(&gone, &active, NONE).is_some());
}
