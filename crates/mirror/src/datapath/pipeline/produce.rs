//! The producer side of the pipeline: the next action (batches handed to the producer
//! while the window has room, in log order with the map updates), acknowledgements and
//! failures, and what is acknowledged recorded into the map (the rules are in the module
//! docs of [`super`]: order, acknowledgements, known gaps, failure).

use strait_offsets::{OffsetMap, Side};
use strait_records::push_lean;

use super::live::Check;
use super::record::{self, AckBase, Update, ack_base};
use super::{Action, Pending, Phase, Pipeline, Recorded};
use crate::datapath::coalesce::{Next, Written};
use crate::error::MirrorError;
use crate::incident::Incident;

impl<P: Clone> Pipeline<P> {
    /// The oldest unacknowledged batch was acknowledged at `base_offset` (−1: no offset).
    pub fn acked(&mut self, base_offset: i64) -> Result<(), MirrorError> {
        self.acked_after(base_offset, 0)
    }

    /// [`Pipeline::acked`], the driver knowing that `gap` target offsets before the batch
    /// hold none of our data (exactly-once: our commit marker after the partition's last
    /// transaction, or, for the first batch of a run, the markers and aborted batches of
    /// earlier runs past the committed map).
    pub fn acked_after(&mut self, base_offset: i64, known_gap: u64) -> Result<(), MirrorError> {
        let head = self.pending.iter_mut().find_map(|p| match p {
            Pending::Sent {
                ack: a @ None, gap, ..
            } => Some((a, gap)),
            _ => None,
        });
        let Some((slot, gap)) = head else {
            self.phase = Phase::Failed;
            return Err(MirrorError::other(
                "an acknowledgement arrived for no batch in flight",
            ));
        };
        *slot = Some(base_offset);
        *gap = known_gap;
        self.in_flight -= 1;
        Ok(())
    }

    /// The oldest unacknowledged batch failed for good (and every later one with it).
    pub fn produce_failed(&mut self, error: strait_client::Error) -> MirrorError {
        self.phase = Phase::Failed;
        MirrorError::kafka("produce", error)
    }

    /// The next thing to do; `repin(bytes, first input's pin)` gives a merged batch a
    /// budget reservation of its own when there is room (it then lets go of its inputs'
    /// fetch buffers). `None` when nothing is to be done until the next event.
    pub fn next_action(&mut self, mut repin: impl FnMut(usize, &P) -> Option<P>) -> Option<Action> {
        if let Some(a) = self.outbox.pop_front() {
            return Some(a);
        }
        if self.ready() {
            return Some(Action::Record);
        }
        let producing = matches!(
            self.phase,
            Phase::Running | Phase::OutOfRange { .. } | Phase::Recreated | Phase::Draining
        );
        if !producing {
            return None;
        }
        loop {
            match self.queue.next(self.in_flight)? {
                Next::Other(update) => {
                    push_lean(&mut self.pending, Pending::Update(update));
                    if self.ready() {
                        return Some(Action::Record);
                    }
                }
                Next::Send { mut out, coalesced } => {
                    let repinned = match (&coalesced, out.pins.first()) {
                        (Some(c), Some(first)) => repin(c.bytes, first),
                        _ => None,
                    };
                    if let Some(pin) = repinned {
                        out.pins = smallvec::smallvec![pin];
                    }
                    self.in_flight += 1;
                    push_lean(
                        &mut self.pending,
                        Pending::Sent {
                            written: out.written,
                            batch: out.batch.clone(),
                            bytes: out.batch.size() as u64,
                            max_timestamp: out.batch.header().max_timestamp,
                            pins: out.pins,
                            ack: None,
                            gap: 0,
                        },
                    );
                    return Some(Action::Produce {
                        batch: out.batch,
                        coalesced,
                    });
                }
            }
        }
    }

    /// The first pin of the newest batch handed on (the one the last [`Action::Produce`]
    /// named): its oldest input's, or the merged batch's own from `repin`, which keeps
    /// what the first input's carried. The driver reads what it carries (when the data
    /// was fetched).
    pub fn last_sent_pin(&self) -> Option<&P> {
        self.pending.iter().rev().find_map(|p| match p {
            Pending::Sent { pins, .. } => pins.first(),
            Pending::Update(_) => None,
        })
    }

    /// Whether the oldest pending item can go into the map now.
    fn ready(&self) -> bool {
        if matches!(self.check, Some(Check::Asked { .. })) {
            return false;
        }
        match self.pending.front() {
            Some(Pending::Sent { ack, .. }) => ack.is_some(),
            Some(Pending::Update(_)) => true,
            None => false,
        }
    }

    /// Writes every acknowledged batch and every update behind it, in order, into `map`
    /// (the partition's map: this pipeline is its only writer). Returns the batches
    /// recorded.
    pub fn record(&mut self, map: &mut OffsetMap) -> Result<Vec<Recorded>, MirrorError> {
        let mut recorded = Vec::new();
        self.record_into(map, &mut recorded).map(|()| recorded)
    }

    /// [`Pipeline::record`] into the caller's buffer (cleared first), which the driver
    /// reuses: no allocation per acknowledgement. On an error, `recorded` holds the
    /// batches recorded before it.
    pub fn record_into(
        &mut self,
        map: &mut OffsetMap,
        recorded: &mut Vec<Recorded>,
    ) -> Result<(), MirrorError> {
        recorded.clear();
        while self.ready() {
            if let Some(Pending::Sent { gap, .. }) = self.pending.front_mut()
                && *gap > 0
            {
                let skip = std::mem::take(gap);
                let (s, t) = (map.next(Side::Source), map.next(Side::Target));
                map.advance(s, t + skip)
                    .map_err(MirrorError::offset_map)
                    .inspect_err(|_| self.phase = Phase::Failed)?;
            }
            if self.asks_check(map) {
                break;
            }
            let Some(item) = self.pending.pop_front() else {
                break;
            };
            let result = match item {
                Pending::Sent {
                    written,
                    bytes,
                    max_timestamp,
                    ack,
                    ..
                } => {
                    let r = self.land(map, &written, ack.unwrap_or(-1));
                    if r.is_ok() {
                        recorded.push(Recorded {
                            records: written.records(),
                            bytes,
                            max_timestamp,
                        });
                    }
                    r
                }
                Pending::Update(update) => {
                    if update == Update::ReachedEnd {
                        self.mark_done();
                    }
                    let r = record::apply(map, &update).map_err(MirrorError::offset_map);
                    if r.is_ok() && matches!(update, Update::SourceRecreated(_)) {
                        self.recreations += 1;
                    }
                    r
                }
            };
            result.inspect_err(|_| self.phase = Phase::Failed)?;
        }
        self.check_done(map);
        Ok(())
    }

    /// Records an acknowledged batch where it landed.
    fn land(&mut self, map: &mut OffsetMap, w: &Written, ack: i64) -> Result<(), MirrorError> {
        let check = self.check.take();
        let base = match ack_base(ack, map.next(Side::Target)) {
            AckBase::At(base) => base,
            AckBase::Mismatch { acked, .. } if self.duplicates_before(check, acked, map)? => acked,
            AckBase::Mismatch { acked, expected }
                if acked > expected && self.recovers_by_content =>
            {
                return Err(MirrorError::other(format!(
                    "a batch of {} landed at offset {acked}, past {expected} where the map \
                     expects it, and the records between are not copies of what this \
                     partition holds: the partition restarts, and its recovery matches the \
                     target past the map to the source by content (a previous writer's late \
                     batch is recognised whatever its merge boundaries; anything else is \
                     the target-mismatch incident)",
                    self.target_topic
                )));
            }
            AckBase::Mismatch { acked, expected } => {
                let skipped = Incident::acked_elsewhere(&self.target_topic, acked, expected)
                    .decide(&self.policies)
                    .into_result()?;
                push_lean(&mut self.outbox, Action::Skipped(skipped));
                map.target_recreated(acked, w.first_source())
                    .map_err(MirrorError::offset_map)?;
                acked
            }
        };
        w.append_to(map, base).map_err(MirrorError::offset_map)
    }

    pub(super) fn check_done(&mut self, map: &OffsetMap) {
        if let Some(until) = self.until
            && map.next(Side::Source) as i64 >= until
        {
            self.mark_done();
        }
    }

    fn mark_done(&mut self) {
        if !self.done {
            self.done = true;
            push_lean(&mut self.outbox, Action::Done);
        }
    }
}
