use super::*;

#[test]
fn rule_1_unstamped_records_count_and_the_last_wins() {
    let mut f = Fence::default();
    assert!(f.admit(&1, None, 100, false));
    assert!(f.admit(&1, None, 50, false));
    assert!(f.admit(&1, Some(3), 10, false));
    assert!(
        f.admit(&1, None, 5, false),
        "an unstamped record resets the key"
    );
    assert!(f.admit(&1, Some(1), 1, false));
}

#[test]
fn rule_2_a_lower_generation_written_earlier_is_a_stale_owners_late_write() {
    let mut f = Fence::default();
    assert!(f.admit(&"p", Some(7), 110, false));
    assert!(!f.admit(&"p", Some(5), 104, false));
    assert_eq!(f.ignored(), 1);
    assert!(
        f.admit(&"p", Some(7), 120, false),
        "the owner's next write counts"
    );
    assert!(f.admit(&"q", Some(5), 104, false), "other keys are apart");
}

#[test]
fn rule_3_a_lower_generation_written_later_is_a_new_group_life() {
    let mut f = Fence::default();
    assert!(f.admit(&"p", Some(57), 100, false));
    assert!(f.admit(&"p", Some(1), 5_000, false));
    assert!(f.admit(&"p", Some(2), 6_000, false));
}

#[test]
fn rule_4_tombstones_count_and_forget_the_stamp() {
    let mut f = Fence::default();
    assert!(f.admit(&"p", Some(9), 100, false));
    assert!(f.admit(&"p", Some(1), 50, true));
    assert!(f.admit(&"p", Some(1), 50, false));
}

#[test]
fn a_stamp_round_trips_and_a_malformed_one_is_none() {
    let v = encode(-1);
    let h = [(GENERATION_HEADER.as_bytes(), Some(&v[..]))];
    assert_eq!(generation_of(h.into_iter()), Some(-1));
    let bad = [(GENERATION_HEADER.as_bytes(), Some(&b"xyz"[..]))];
    assert_eq!(generation_of(bad.into_iter()), None);
    let other = [(&b"other"[..], Some(&v[..]))];
    assert_eq!(generation_of(other.into_iter()), None);
}
