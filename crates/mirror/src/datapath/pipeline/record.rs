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
mod tests;
