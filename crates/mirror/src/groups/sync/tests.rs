use super::*;
use strait_client::protocol::messages::describe_groups_response::DescribedGroupMember;
use strait_client::protocol::protocol::StrBytes;

fn described(state: &str, members: usize, error: i16) -> DescribedGroup {
    DescribedGroup::default()
        .with_error_code(error)
        .with_group_state(StrBytes::from_string(state.to_owned()))
        .with_members(vec![DescribedGroupMember::default(); members])
}

#[test]
fn groups_no_longer_listed_are_forgotten_and_the_others_kept() {
    let mut checkpoints: HashMap<String, Checkpointed> = HashMap::new();
    let mut complete: HashMap<String, Instant> = HashMap::new();
    for g in ["a", "deleted", "unmatched"] {
        checkpoints.insert(g.into(), [(("t".to_owned(), 0), (1, 1))].into());
    }
    for g in ["a", "deleted", "only-seen"] {
        complete.insert(g.into(), Instant::now());
    }
    let live = vec!["a".to_owned(), "new".to_owned()];
    assert_eq!(
        forget_gone(&live, &mut checkpoints, &mut complete),
        vec!["deleted", "only-seen", "unmatched"]
    );
    assert_eq!(checkpoints.keys().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(complete.keys().collect::<Vec<_>>(), vec!["a"]);
    assert!(
        forget_gone(&live, &mut checkpoints, &mut complete).is_empty(),
        "nothing twice"
    );
}

fn consumer(error_code: i16, state: &str, members: usize) -> ConsumerProtocolGroup {
    ConsumerProtocolGroup::Described {
        error_code,
        state: state.to_owned(),
        members,
    }
}

#[test]
fn a_group_is_inactive_only_when_neither_protocol_shows_a_member() {
    // What Kafka 4 answers for a KIP-848 group with a live member: classic
    // DescribeGroups says Dead with no members, ConsumerGroupDescribe says Stable, 1.
    let dead = described("Dead", 0, 0);
    assert!(matches!(
        group_state(Some(&dead), &consumer(0, "Stable", 1)),
        TargetGroup::Active { .. }
    ));
    for (state, members) in [("Reconciling", 1), ("Assigning", 2), ("Stable", 0)] {
        assert!(
            matches!(
                group_state(Some(&dead), &consumer(0, state, members)),
                TargetGroup::Active { .. }
            ),
            "{state} {members}"
        );
    }
    // A KIP-848 group whose members left, a classic group, a group nobody knows, a
    // broker without the API.
    for (classic, c) in [
        (Some(&dead), consumer(0, "Empty", 0)),
        (Some(&dead), consumer(0, "Dead", 0)),
        (Some(&described("Empty", 0, 0)), consumer(69, "", 0)),
        (Some(&described("", 0, 69)), consumer(69, "", 0)),
        (None, consumer(69, "", 0)),
        (
            Some(&described("Empty", 0, 0)),
            ConsumerProtocolGroup::Unsupported,
        ),
    ] {
        assert_eq!(group_state(classic, &c), TargetGroup::Inactive, "{c:?}");
    }
    // A live classic group is active whatever ConsumerGroupDescribe says; an error of
    // either describe counts as active.
    let stable = described("Stable", 1, 0);
    for (classic, c) in [
        (Some(&stable), consumer(69, "", 0)),
        (Some(&stable), ConsumerProtocolGroup::Unsupported),
        (Some(&dead), consumer(30, "", 0)),
        (Some(&described("", 0, 15)), consumer(69, "", 0)),
    ] {
        assert!(
            matches!(group_state(classic, &c), TargetGroup::Active { .. }),
            "{classic:?} {c:?}"
        );
    }
}

#[test]
fn group_states() {
    assert_eq!(
        target_group_state(&described("Empty", 0, 0)),
        TargetGroup::Inactive
    );
    assert_eq!(
        target_group_state(&described("Dead", 0, 0)),
        TargetGroup::Inactive
    );
    assert_eq!(
        target_group_state(&described("", 0, 69)),
        TargetGroup::Inactive
    );
    for (s, m, e) in [
        ("Stable", 1, 0),
        ("PreparingRebalance", 0, 0),
        ("Empty", 1, 0),
        ("", 0, 15),
    ] {
        assert!(
            matches!(
                target_group_state(&described(s, m, e)),
                TargetGroup::Active { .. }
            ),
            "{s} {m} {e}"
        );
    }
}
