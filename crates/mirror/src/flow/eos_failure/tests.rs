use super::{AfterFailure, after_failure};

#[test]
fn a_stop_wins() {
    assert_eq!(after_failure(true, true), AfterFailure::Abandon);
    assert_eq!(after_failure(false, true), AfterFailure::Abandon);
}

#[test]
fn stopping_for_good_aborts_now() {
    assert_eq!(after_failure(true, false), AfterFailure::AbortAndStop);
}

#[test]
fn otherwise_the_owner_decides() {
    assert_eq!(after_failure(false, false), AfterFailure::OwnerDecides);
}
