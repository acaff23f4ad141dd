use super::*;

/// After an empty first round: the process started with nothing on the target.
fn started() -> Provenance {
    let mut p = Provenance::default();
    assert!(p.begin_reverse_round());
    p
}

/// One later round's answer.
fn sends(p: &mut Provenance, group: &str, partition: i32, offset: i64) -> bool {
    let first = p.begin_reverse_round();
    p.may_send_back(first, group, "src.t", partition, offset)
}

#[test]
fn rule_2_a_position_forward_sync_wrote_is_never_sent_back() {
    let mut p = started();
    p.forward_committed("g", "src.t", 0, 1000, 1000);
    assert!(!sends(&mut p, "g", 0, 1000));
    // A consumer on the target moves on: that position is the group's own.
    assert!(sends(&mut p, "g", 0, 1200));
}

#[test]
fn rule_2_a_group_older_than_the_replication_start_is_not_moved_by_its_own_translation() {
    // start_position = latest: the source group at 50 translated to the target's start.
    let mut p = started();
    p.forward_committed("g", "src.t", 0, 0, 50);
    assert!(!sends(&mut p, "g", 0, 0));
}

#[test]
fn rule_3_positions_found_at_start_wait_until_they_move() {
    let mut p = Provenance::default();
    assert!(!sends(&mut p, "g", 0, 700), "first round");
    assert!(!sends(&mut p, "g", 0, 700), "unchanged");
    assert!(sends(&mut p, "g", 0, 750), "moved");
    assert!(sends(&mut p, "g", 0, 750), "known since");
    assert!(sends(&mut p, "h", 0, 5), "new after start");
}

#[test]
fn rule_4_only_forward_sync_s_own_position_may_be_moved_backwards() {
    let mut p = started();
    p.forward_committed("g", "src.t", 0, 1000, 1000);
    assert!(p.is_forward_written("g", "src.t", 0, 1000));
    assert!(!p.is_forward_written("g", "src.t", 0, 1200));
    assert!(!p.is_forward_written("g", "src.t", 1, 1000));
}
