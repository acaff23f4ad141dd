use super::*;

#[test]
fn an_ack_without_an_offset_lands_where_the_map_expects_it() {
    // Tansu's DUPLICATE_SEQUENCE_NUMBER answer to a re-sent batch: base offset −1.
    assert_eq!(ack_base(-1, 42), AckBase::At(42));
    assert_eq!(ack_base(i64::MIN, 0), AckBase::At(0));
}

#[test]
fn an_ack_at_the_expected_offset_is_recorded_there() {
    assert_eq!(ack_base(0, 0), AckBase::At(0));
    assert_eq!(ack_base(42, 42), AckBase::At(42));
}

#[test]
fn an_ack_elsewhere_is_a_mismatch_never_offset_zero() {
    // Someone else wrote the partition: our batch landed further on.
    assert_eq!(
        ack_base(50, 42),
        AckBase::Mismatch {
            acked: 50,
            expected: 42
        }
    );
    // The partition was reset: our batch landed at its start.
    assert_eq!(
        ack_base(0, 42),
        AckBase::Mismatch {
            acked: 0,
            expected: 42
        }
    );
}

fn map_at(source: u64, target: u64) -> OffsetMap {
    let mut m = OffsetMap::new();
    m.advance(source, target).expect("advance");
    m
}

#[test]
fn a_skip_moves_the_source_position_forward_never_back() {
    let mut m = map_at(10, 5);
    apply(&mut m, &Update::Advance(7)).expect("no-op");
    assert_eq!(m.next(Side::Source), 10);
    apply(&mut m, &Update::Advance(12)).expect("advance");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (12, 5));
}

#[test]
fn records_found_by_recovery_are_appended_where_the_target_holds_them() {
    let mut m = map_at(10, 5);
    let w = Written::Dense {
        source_first: 10,
        count: 3,
    };
    apply(&mut m, &Update::AlreadyWritten(w, 8)).expect("append");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (13, 11));
}

#[test]
fn the_end_of_recovery_moves_the_target_side_past_trailing_duplicates() {
    let mut m = map_at(10, 5);
    apply(&mut m, &Update::RecoveredTo(8)).expect("advance");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (10, 8));
    apply(&mut m, &Update::RecoveredTo(6)).expect("never back");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (10, 8));
}

#[test]
fn a_target_reset_never_moves_the_target_side_backwards() {
    let mut m = map_at(10, 20);
    let reset = Update::TargetReset {
        target_end: 15,
        resume_source: 10,
    };
    apply(&mut m, &reset).expect("reset");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (10, 20));
    let reset = Update::TargetReset {
        target_end: 30,
        resume_source: 8,
    };
    apply(&mut m, &reset).expect("reset");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (8, 30));
}

#[test]
fn source_log_start_and_recreation_go_to_the_maps_truncation_updates() {
    let mut m = map_at(10, 20);
    apply(&mut m, &Update::SourceLogStart(15)).expect("log start");
    assert_eq!(m.next(Side::Source), 15);
    apply(&mut m, &Update::SourceRecreated(0)).expect("recreated");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (0, 20));
    apply(&mut m, &Update::ReachedEnd).expect("nothing to write");
    assert_eq!((m.next(Side::Source), m.next(Side::Target)), (0, 20));
}
