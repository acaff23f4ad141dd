//! Live duplicates: an acknowledgement past where the map expects it is checked against
//! what the target holds before it is recorded (the rule is in the module docs of
//! [`super`]; the comparison is [`live_duplicates`], recovery's duplicate rule).

use strait_offsets::{OffsetMap, Side};
use strait_records::{Batch, Limits, push_lean};

use super::record::{AckBase, ack_base};
use super::{Action, Pending, Pipeline};
use crate::datapath::recovery::{LiveCheck, live_duplicates};
use crate::datapath::tail::LOOKBACK;
use crate::error::MirrorError;

/// A live acknowledgement past the map being checked ([`Action::CheckTarget`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Check {
    /// The target's batches from `from` are awaited.
    Asked {
        from: u64,
        expected: u64,
        acked: u64,
    },
    /// Read: `Ok(duplicates)` or why the records between are not ours.
    Decided {
        expected: u64,
        acked: u64,
        verdict: Result<u64, String>,
    },
}

impl<P: Clone> Pipeline<P> {
    /// Whether the oldest pending item is a batch acknowledged past where the map expects
    /// it and not checked yet: then the target is asked for ([`Action::CheckTarget`]).
    pub(super) fn asks_check(&mut self, map: &OffsetMap) -> bool {
        if self.check.is_some() {
            return false;
        }
        let Some(Pending::Sent { ack: Some(ack), .. }) = self.pending.front() else {
            return false;
        };
        let AckBase::Mismatch { acked, expected } = ack_base(*ack, map.next(Side::Target)) else {
            return false;
        };
        if acked < expected {
            return false;
        }
        let from = expected
            .saturating_sub(LOOKBACK as u64)
            .max(map.log_start(Side::Target));
        self.check = Some(Check::Asked {
            from,
            expected,
            acked,
        });
        push_lean(
            &mut self.outbox,
            Action::CheckTarget {
                from,
                expected,
                to: acked,
            },
        );
        true
    }

    /// The target's batches asked for by [`Action::CheckTarget`] (from its `from` to its
    /// `to`; `from`: where the read started, the target's log start when later): decides
    /// whether the records between are duplicates of ours. Returns why not, when they are
    /// not (the acknowledgement is then the target incident).
    pub fn target_read(&mut self, from: u64, batches: &[Batch]) -> Option<String> {
        let Some(Check::Asked {
            from: asked,
            expected,
            acked,
        }) = self.check
        else {
            return None;
        };
        let sent: Vec<Batch> = self
            .pending
            .iter()
            .filter_map(|p| match p {
                Pending::Sent { batch, .. } => Some(batch.clone()),
                Pending::Update(_) => None,
            })
            .collect();
        let check = LiveCheck {
            target: batches,
            ours_from: from.max(asked),
            expected,
            acked,
            sent: &sent,
        };
        let verdict = live_duplicates(&check, &Limits::default());
        let why_not = verdict.as_ref().err().cloned();
        self.check = Some(Check::Decided {
            expected,
            acked,
            verdict,
        });
        why_not
    }

    /// Whether the records between where the map expected the head batch and where it
    /// landed (`landed`, the acknowledged offset) were checked to be duplicates of ours
    /// (`check`, taken from the pipeline): then the map's target side moves past them and
    /// they are reported.
    pub(super) fn duplicates_before(
        &mut self,
        check: Option<Check>,
        landed: u64,
        map: &mut OffsetMap,
    ) -> Result<bool, MirrorError> {
        let Some(Check::Decided {
            expected,
            acked,
            verdict: Ok(records),
        }) = check
        else {
            return Ok(false);
        };
        if acked != landed || map.next(Side::Target) != expected {
            return Ok(false);
        }
        map.advance(map.next(Side::Source), acked)
            .map_err(MirrorError::offset_map)?;
        push_lean(
            &mut self.outbox,
            Action::Duplicates {
                records,
                from: expected,
                to: acked,
            },
        );
        Ok(true)
    }
}
