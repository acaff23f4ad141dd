//! Handing batches to the producer: at once when it takes them, else awaited (boxed by the
//! caller), each joining the partition's acknowledgements with the target offsets known to
//! lie before it.

use std::collections::VecDeque;
use std::time::Instant;

use strait_client::TrySend;
use strait_records::{Batch, push_lean};

use super::{Driver, Held, InFlight};
use crate::datapath::commit::GateHandle;
use crate::error::MirrorError;

impl<'a> Driver<'a> {
    /// Hands a batch to the producer if it takes it without waiting; its acknowledgement
    /// joins `acks` ([`Driver::handed`]). Gives the batch back when the producer must wait
    /// (the window is full, or exactly-once: the partition's first batch of a
    /// transaction): the caller awaits [`Driver::hand_on_waiting`] boxed, as that is rare
    /// and its future is ~900 bytes, which inline would size every partition's task
    /// (10,000 partitions, one task each).
    pub(super) fn hand_on(
        &self,
        batch: Batch,
        fetched: Instant,
        acks: &mut VecDeque<InFlight>,
        held: &mut Held,
    ) -> Result<Option<Batch>, MirrorError> {
        let spec = self.spec;
        let generation = held.gate.as_deref().map(GateHandle::generation);
        match self
            .producer
            .try_send(&spec.shared.target_topic, spec.partition, batch)
        {
            Ok(TrySend::Queued(ack)) => {
                self.handed(ack, generation, fetched, acks, held);
                Ok(None)
            }
            Ok(TrySend::Later(batch)) => Ok(Some(batch)),
            Err(e) => Err(MirrorError::kafka("produce", e)),
        }
    }

    /// [`Driver::hand_on`] for a batch the producer could not take at once: waits until
    /// it can.
    pub(super) async fn hand_on_waiting(
        &self,
        batch: Batch,
        fetched: Instant,
        acks: &mut VecDeque<InFlight>,
        held: &mut Held,
    ) -> Result<(), MirrorError> {
        let spec = self.spec;
        let generation = held.gate.as_deref().map(GateHandle::generation);
        let ack = self
            .producer
            .send(&spec.shared.target_topic, spec.partition, batch)
            .await
            .map_err(|e| MirrorError::kafka("produce", e))?;
        self.handed(ack, generation, fetched, acks, held);
        Ok(())
    }

    /// A batch handed on under transaction `generation` (exactly-once) joins `acks` with
    /// the target offsets known to lie before it and when its oldest input was `fetched`.
    /// Exactly-once: the first batch of the run follows the start gap (`spec.start_gap`); a
    /// batch in a later transaction than the partition's previous batch follows that
    /// transaction's commit marker (one offset); nothing else writes to the partition (a
    /// broker that writes an earlier transaction's marker late adds one more, which the
    /// live check passes over: [`crate::datapath::pipeline::Action::Duplicates`] with no records).
    fn handed(
        &self,
        ack: strait_client::AckFuture,
        generation: Option<u64>,
        fetched: Instant,
        acks: &mut VecDeque<InFlight>,
        held: &mut Held,
    ) {
        let gap = match (held.last_sent, generation) {
            (None, Some(_)) => self.spec.start_gap,
            (Some(last), Some(now)) if now > last => 1,
            _ => 0,
        };
        held.last_sent = generation;
        push_lean(
            acks,
            InFlight {
                ack,
                gap,
                fetched,
                handed: Instant::now(),
            },
        );
    }
}
