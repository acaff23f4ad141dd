//! The map update rules: what the pipeline writes into a partition's offset map, and where
//! an acknowledged batch landed. Pure; applied in log order by
//! [`super::Pipeline::record`].
//!
//! Rules:
//! - An acknowledged batch is appended at the offset it landed at, record `i` at
//!   `base + i` (dense, listed or in runs: [`Written::append_to`]).
//! - Acknowledgements arrive in order and Strait is the only writer of the target
//!   partition, so a batch lands at the map's `next(Target)`; an answer without an offset
//!   (−1: Tansu's DUPLICATE_SEQUENCE_NUMBER for a re-sent batch, some acks settings) means
//!   exactly there; any other offset is [`AckBase::Mismatch`], a target incident.
//! - A skip moves the source position forward, never back.
//! - Records found on the target by recovery are appended where the target holds them;
//!   when recovery is over, the target side moves to the end of what it read (a trailing
//!   duplicate is mapped to nothing, and the next batch lands after it).
//! - A source log start, a source re-creation and a target reset go to the map's own
//!   truncation updates; a target reset never moves the target side backwards.

use strait_offsets::{MapError, OffsetMap, Side};

use super::super::coalesce::Written;

/// A map update that is not an acknowledged batch, queued in log order with the batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Found on the target by recovery, its first record at this target offset.
    AlreadyWritten(Written, u64),
    /// Markers or aborted data skipped: the source position moves here.
    Advance(u64),
    /// `--once`: everything up to the end seen at start was fetched and every step released
    /// from it is queued before this (transactions still open stay unreplicated).
    ReachedEnd,
    /// The source log start moved past our position (policy skip).
    SourceLogStart(u64),
    /// The source partition restarts at this log start (re-created or truncated past our
    /// position).
    SourceRecreated(u64),
    /// Recovery is over: every target record below this offset is matched or a duplicate
    /// (mapped to nothing), so the next batch lands here: the map's target side moves here.
    RecoveredTo(u64),
    /// The target holds records past the map that are not the source's: restart the map's
    /// target side at the target's end, resuming the source at `resume_source`.
    TargetReset {
        /// Where the target ends.
        target_end: u64,
        /// The source offset replication resumes at.
        resume_source: u64,
    },
}

/// Applies `update` to `map`.
pub fn apply(map: &mut OffsetMap, update: &Update) -> Result<(), MapError> {
    match update {
        Update::AlreadyWritten(written, base) => written.append_to(map, *base),
        Update::Advance(next) if *next > map.next(Side::Source) => map.advance_source(*next),
        Update::Advance(_) | Update::ReachedEnd => Ok(()),
        Update::RecoveredTo(end) if *end > map.next(Side::Target) => {
            map.advance(map.next(Side::Source), *end)
        }
        Update::RecoveredTo(_) => Ok(()),
        Update::SourceLogStart(start) => map.set_source_log_start(*start),
        Update::SourceRecreated(start) => {
            let t = map.next(Side::Target);
            map.source_recreated(*start, t)
        }
        Update::TargetReset {
            target_end,
            resume_source,
        } => {
            let end = (*target_end).max(map.next(Side::Target));
            map.target_recreated(end, *resume_source)
        }
    }
}

/// Where an acknowledged batch landed on the target, given what the broker answered and
/// where the map expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckBase {
    /// Record the batch at this target offset.
    At(u64),
    /// The broker put it somewhere else: someone else wrote or reset the target partition.
    Mismatch {
        /// Where the broker says it landed.
        acked: u64,
        /// Where the map expected it (`next(Target)`).
        expected: u64,
    },
}

/// Decides where an acknowledged batch landed (see the module rules).
pub fn ack_base(acked: i64, expected: u64) -> AckBase {
    match u64::try_from(acked) {
        Err(_) => AckBase::At(expected),
        Ok(acked) if acked == expected => AckBase::At(acked),
        Ok(acked) => AckBase::Mismatch { acked, expected },
    }
}

#[cfg(test)]
mod tests {
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
}
