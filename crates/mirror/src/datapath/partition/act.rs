//! What the partition's driver does for each action its pipeline asks for ([`Action`]):
//! hand a batch to the producer, record acknowledgements in the map, move the feed, read
//! the target (a batch that landed elsewhere, recovery's tail), or report.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use strait_client::{IsolationLevel, OffsetSpec};
use strait_records::{Batch, Limits};

use super::{BatchPin, Driver, Held, InFlight, LogStartWait, mark_done, source_log_start};
use crate::datapath::coalesce::Coalesced;
use crate::datapath::pipeline::{Action, Pipeline, Recorded};
use crate::error::MirrorError;

impl<'a> Driver<'a> {
    /// Does everything the machine asks for until it waits for an event; whether it
    /// planned a batch to produce. The table of the pipeline's actions, kept whole: one
    /// arm per [`Action`], each handing on to its own step (the rare, large ones boxed).
    pub(super) async fn act(
        &self,
        machine: &mut Pipeline<BatchPin>,
        acks: &mut VecDeque<InFlight>,
        log_start: &mut Option<LogStartWait<'a>>,
        held: &mut Held,
        recorded: &mut Vec<Recorded>,
    ) -> Result<bool, MirrorError> {
        let spec = self.spec;
        let repin = |bytes, like: &BatchPin| {
            let reservation = spec
                .shared
                .budget
                .try_reserve_like(bytes, &like.reservation)?;
            Some(BatchPin {
                reservation: Arc::new(reservation),
                fetched: like.fetched,
            })
        };
        let mut produced = false;
        // `let else`, not `while let`: the scrutinee's temporary would keep a second
        // action's bytes in the future across the awaits below.
        loop {
            let Some(action) = machine.next_action(repin) else {
                break;
            };
            match action {
                Action::Produce { batch, coalesced } => {
                    produced = true;
                    if let Some((batch, fetched)) =
                        self.produce(machine, batch, coalesced, acks, held)?
                    {
                        Box::pin(self.hand_on_waiting(batch, fetched, acks, held)).await?;
                    }
                }
                Action::Record => self.record(machine, recorded)?,
                Action::NeedLogStart => {
                    *log_start = Some(Box::pin(source_log_start(self.source, spec)));
                }
                Action::PauseFeed => self.feed.with_cursor(|c| c.paused = true),
                Action::Reposition {
                    position,
                    generation,
                    recreated,
                } => self.reposition(position, generation, recreated),
                Action::Skipped(s) => {
                    self.feed.metrics.incident(s.kind);
                    tracing::error!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
                        partition = spec.partition, "{s}");
                }
                Action::Recovered { duplicates } => self.recovered(duplicates),
                Action::CheckTarget { from, expected, to } => {
                    // Boxed, as rare: inline, the target reads' futures would size every
                    // partition's task by their kilobytes (10,000 partitions, one task each).
                    Box::pin(self.check_target(machine, from, expected, to)).await?;
                }
                Action::ReadTargetTail { from, to } => {
                    // Boxed, as rare (see `CheckTarget`).
                    let (batches, pin) = Box::pin(self.read_tail_chunk(from, to)).await?;
                    let r = machine.target_tail_read(&batches, pin);
                    self.counted(r)?;
                }
                Action::Duplicates { records, from, to } => self.duplicates(records, from, to),
                Action::Done => mark_done(self.progress),
            }
        }
        Ok(produced)
    }

    /// `Produce`: counts a merge, then hands the batch to the producer, or queues it
    /// while held data must wait. A batch the producer has no room for yet comes back, with
    /// its fetch time, for [`Driver::hand_on_waiting`] (awaited by the caller, so that this
    /// step adds no state to the partition's future).
    fn produce(
        &self,
        machine: &mut Pipeline<BatchPin>,
        batch: Batch,
        coalesced: Option<Coalesced>,
        acks: &mut VecDeque<InFlight>,
        held: &mut Held,
    ) -> Result<Option<(Batch, Instant)>, MirrorError> {
        if let Some(c) = coalesced {
            self.feed.metrics.coalesced(c.inputs as u64, c.bytes as u64);
            if c.recompressed {
                self.feed.metrics.recompressed(c.inputs as u64);
            }
        }
        // The batch just planned is the newest sent: its first pin is its oldest
        // input's (or its own, merged), whose fetch time it carries.
        let fetched = machine
            .last_sent_pin()
            .map_or_else(Instant::now, |p| p.fetched);
        if held.must_wait() {
            held.waiting.push_back((batch, fetched));
            return Ok(None);
        }
        Ok(self
            .hand_on(batch, fetched, acks, held)?
            .map(|batch| (batch, fetched)))
    }

    /// `Record`: applies the acknowledged batches to the offset map.
    fn record(
        &self,
        machine: &mut Pipeline<BatchPin>,
        recorded: &mut Vec<Recorded>,
    ) -> Result<(), MirrorError> {
        // The re-creation count is published under the map's lock: a
        // checkpoint sees a restarted map together with its count.
        let recreated = &self.progress.recreated;
        let r = self.lock().update(|m| {
            let r = machine.record_into(m, recorded);
            recreated.store(machine.recreations(), Ordering::Release);
            r
        });
        self.counted(r)?;
        self.recorded(recorded);
        Ok(())
    }

    /// `Reposition`: moves the feed's cursor (a new generation), saying so when the
    /// source topic was re-created.
    fn reposition(&self, position: i64, generation: u64, recreated: bool) {
        let spec = self.spec;
        if recreated {
            tracing::info!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
                partition = spec.partition,
                "topic re-creation: the map restarts and the new topic is \
                 replicated from offset {position}");
        }
        self.feed.with_cursor(|c| {
            c.position = position;
            c.generation = generation;
            c.paused = false;
        });
    }

    /// `Recovered`: recovery matched every record on the target past the last state write.
    fn recovered(&self, duplicates: u64) {
        let spec = self.spec;
        tracing::info!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition, duplicates,
            "recovery: every record found on the target past the last state \
             write was matched to the source by content");
        self.feed
            .metrics
            .dropped_n("duplicate_on_target", duplicates);
    }

    /// `CheckTarget`: reads the target between where the map expects a batch and where it
    /// landed, for the machine to judge whether the records between are ours.
    async fn check_target(
        &self,
        machine: &mut Pipeline<BatchPin>,
        from: u64,
        expected: u64,
        to: u64,
    ) -> Result<(), MirrorError> {
        let spec = self.spec;
        tracing::info!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition, expected, acked = to,
            "a batch landed past where the map expects it: reading the target \
             to check whether the records between are duplicates of ours");
        let from = self.target_log_start().await?.max(from);
        let batches = crate::datapath::tail::read_tail(
            self.target,
            &spec.shared.target_topic,
            spec.partition,
            from as i64,
            to as i64,
            &Limits::default(),
        )
        .await?;
        if let Some(why) = machine.target_read(from, &batches) {
            tracing::warn!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
                partition = spec.partition, expected, acked = to,
                "the records between are not copies of what this partition \
                 holds ({why}); it restarts to match them to the source by content");
        }
        Ok(())
    }

    /// `Duplicates`: the target offsets `from..to` hold `records` duplicates of ours, or
    /// (none) transaction markers only.
    fn duplicates(&self, records: u64, from: u64, to: u64) {
        let spec = self.spec;
        if records == 0 {
            // Exactly-once on a broker that ended an earlier transaction of ours
            // late (Tansu defers a commit overlapping another transactional id's,
            // docs/compatibility.md): its marker took the offsets between.
            tracing::info!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
                partition = spec.partition,
                "the target offsets {from}..{to} hold transaction markers only (an \
                 earlier transaction ended late); replication goes on past them");
            return;
        }
        tracing::warn!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition, duplicates = records,
            "the target holds a duplicate of records of ours at offsets \
             {from}..{to} (a request of ours appended again); they are mapped to \
             nothing and replication goes on past them");
        self.feed.metrics.dropped_n("duplicate_on_target", records);
    }

    /// The next chunk of the target's tail for recovery, from `from` (up to `to`, the
    /// target's end at start), and its pin: the chunk's bytes reserved in the budget (see
    /// the module docs).
    pub(super) async fn read_tail_chunk(
        &self,
        from: u64,
        to: u64,
    ) -> Result<(Vec<Batch>, BatchPin), MirrorError> {
        let spec = self.spec;
        let budget = &spec.shared.budget;
        let mut reservation = budget.reserve_free(spec.shared.tail_chunk_bytes.max(1));
        let batches = crate::datapath::tail::read_chunk(
            self.target,
            &spec.shared.target_topic,
            spec.partition,
            i64::try_from(from).unwrap_or(i64::MAX),
            i64::try_from(to).unwrap_or(i64::MAX),
            reservation.bytes().max(1),
            &Limits::default(),
        )
        .await?;
        let bytes: usize = batches.iter().map(Batch::size).sum();
        let total = usize::try_from(budget.total()).unwrap_or(usize::MAX);
        let extra = bytes.min(total).saturating_sub(reservation.bytes());
        if extra > 0 {
            // A batch larger than asked for (KIP-74): its extra bytes when the budget has
            // them, the whole capped at the budget.
            reservation.absorb(budget.reserve_free(extra));
        }
        tracing::debug!(flow = %spec.shared.flow, topic = %spec.shared.source_topic,
            partition = spec.partition, from, batches = batches.len(), bytes,
            "recovery: read a chunk of the target's tail");
        Ok((
            batches,
            BatchPin {
                reservation: Arc::new(reservation),
                fetched: Instant::now(),
            },
        ))
    }

    /// Lets go of the chunks of the target's tail the machine keeps, when the budget lacks
    /// a chunk's room: the partition is about to wait for the feed, and the fetch that
    /// feeds it needs that room (see the module docs).
    pub(super) fn release_tail_if_short(&self, machine: &mut Pipeline<BatchPin>) {
        if !machine.holds_tail() {
            return;
        }
        let budget = &self.spec.shared.budget;
        let free = budget.total().saturating_sub(budget.used());
        let room = u64::try_from(self.spec.shared.tail_chunk_bytes).unwrap_or(u64::MAX);
        if free < room {
            machine.release_tail();
        }
    }

    /// The target partition's log start (ListOffsets EARLIEST).
    pub(super) async fn target_log_start(&self) -> Result<u64, MirrorError> {
        let spec = self.spec;
        let offsets = self
            .target
            .list_offsets(
                &spec.shared.target_topic,
                &[(spec.partition, OffsetSpec::Earliest)],
                IsolationLevel::ReadUncommitted,
            )
            .await
            .map_err(|e| MirrorError::kafka("list offsets", e).topic(&*spec.shared.target_topic))?;
        Ok(offsets
            .first()
            .map_or(0, |o| u64::try_from(o.offset).unwrap_or(0)))
    }
}
