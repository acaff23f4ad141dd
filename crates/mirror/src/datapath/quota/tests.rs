use super::*;

const MIB: u64 = 1 << 20;

fn input(used: u64, in_flight: u64, active: usize) -> QuotaInput {
    QuotaInput {
        total: 24 * MIB,
        used,
        in_flight,
        active,
        min_room: MIB,
    }
}

#[test]
fn rule1_the_fair_share_is_the_budget_split_over_active_partitions_never_below_one_fetch() {
    assert_eq!(fair_share(24 * MIB, 4, MIB), 6 * MIB);
    assert_eq!(fair_share(24 * MIB, 1000, MIB), MIB, "one fetch must fit");
    assert_eq!(
        fair_share(24 * MIB, 0, MIB),
        24 * MIB,
        "no division by zero"
    );
    assert_eq!(fair_share(0, 3, 0), 1);
}

#[test]
fn rule2_a_partition_under_its_fair_share_may_always_fetch() {
    // The budget is full (stuck partitions hold it): a drained partition still fetches.
    assert!(may_fetch(input(24 * MIB, 0, 4)));
    assert!(may_fetch(input(24 * MIB, 6 * MIB - 1, 4)));
}

#[test]
fn rule3_a_partition_over_its_share_may_fetch_while_at_most_half_the_budget_is_used() {
    // One busy partition alone may use far more than its share of many partitions.
    assert!(may_fetch(input(12 * MIB, 11 * MIB, 100)));
    assert!(!may_fetch(input(12 * MIB + 1, 11 * MIB, 100)));
}

#[test]
fn rule4_a_partition_over_its_share_is_left_out_when_the_budget_is_more_than_half_used() {
    assert!(!may_fetch(input(20 * MIB, 6 * MIB, 4)));
    // Its acknowledgements bring it back under its share: it is fetched again.
    assert!(may_fetch(input(20 * MIB, 5 * MIB, 4)));
}

#[test]
fn rule5_within_the_held_limit_nothing_happens() {
    assert_eq!(held_verdict(12, 12, 12, 0), HeldVerdict::Within);
    assert_eq!(held_verdict(0, 0, 0, 0), HeldVerdict::Within);
}

#[test]
fn rule6_over_the_held_limit_the_partition_holding_the_most_fails() {
    assert_eq!(held_verdict(13, 12, 8, 5), HeldVerdict::FailThis);
    assert_eq!(held_verdict(13, 12, 5, 8), HeldVerdict::FailLargest);
    assert_eq!(held_verdict(14, 12, 7, 7), HeldVerdict::FailThis, "ties");
}

#[test]
fn rule7_a_share_returned_while_its_response_is_still_pinned_stays_counted() {
    assert!(keep_as_residue(0, 64 * 1024, residue_limit(24 * MIB), true));
    assert!(
        !keep_as_residue(0, 0, residue_limit(24 * MIB), true),
        "nothing to keep"
    );
}

#[test]
fn rule8_residue_is_counted_only_up_to_seven_sixteenths_of_the_budget() {
    let limit = residue_limit(24 * MIB);
    assert_eq!(limit, 10 * MIB + 512 * 1024);
    assert!(
        keep_as_residue(limit - MIB, MIB, limit, true),
        "exactly at the limit"
    );
    assert!(!keep_as_residue(limit - MIB, MIB + 1, limit, true));
    assert!(!keep_as_residue(u64::MAX, 1, limit, true), "no overflow");
    // With held bytes at their limit (half), a fetch's minimum room is always left to
    // bytes in flight, which acknowledgements free.
    let total = 24 * MIB;
    assert!(total - total / 2 - limit >= total / 16);
    assert!(
        100 - 100 / 2 - residue_limit(100) >= 100 / 16,
        "small budgets too"
    );
}

#[test]
fn rule9_the_last_share_of_a_response_frees_it() {
    assert!(!keep_as_residue(0, MIB, residue_limit(24 * MIB), false));
}
