//! One partition's pipeline as a state machine. Pure: no I/O, no clock, no tasks; the
//! driver in [`super::partition`] feeds it events (record sets fetched, acknowledgements,
//! the source log start it asked for, chunks of the target's tail, stop) and does what it
//! says ([`Action`]: produce this batch, record what is ready in the map, find the source
//! log start, read the target, pause or move the feed, report an incident skipped, done).
//!
//! It composes the pure pieces: the [`Planner`] (record set → steps), [`Recovery`] (which
//! steps the target already holds), the [`Coalescer`] (the queue to the producer) and the
//! map update rules ([`record`]). Rules:
//!
//! - **Generations.** A record set or an out-of-range answer fetched under an older cursor
//!   generation is dropped: the pipeline moved the cursor since.
//! - **`--once`.** A record set fetched at or past `until` pauses the feed and is dropped;
//!   the one that takes the fetch position to `until` pauses the feed and queues "reached
//!   the end" behind its steps. The pipeline is done when that is recorded, or as soon as
//!   the map's source position is at `until` (also at start).
//! - **Recovery.** Every planned step goes through recovery, in order. A step the target
//!   already holds is recorded where it is, not produced; a mismatch is a target incident
//!   ([`Incident::recovery_mismatch`]): `fail` stops the pipeline, `skip` queues a reset of
//!   the map's target side to the target's end (resuming the source at the step), ends
//!   recovery and produces the step. When the last target record is matched (or skipped
//!   as a duplicate), the duplicates found are reported once and the map's target side
//!   moves to the target's end, behind the step's own records: a trailing duplicate is
//!   mapped to nothing and the next batch is expected after it, not on it.
//! - **Recovery reads the target in chunks.** A restart's [`Recovery`] may start with
//!   nothing read ([`Recovery::tail`]). When it cannot decide a step from the chunks read
//!   so far and the target's end (known from the start) is not reached
//!   ([`super::recovery::Decision::ReadMore`]), the pipeline holds that step and every
//!   step planned after it, asks for the next chunk ([`Action::ReadTargetTail`]), wants
//!   no more of the feed, and queues and produces nothing past the held step until
//!   [`Pipeline::target_tail_read`] hands the chunk over; then the held steps go through
//!   recovery in order, as if the chunk had been there all along (the decisions are the
//!   ones of the whole tail read at once, whatever the chunk boundaries). The chunk's pin
//!   (its budget reservation) is kept while recovery holds records of it, and dropped
//!   when they are matched or recovery ends. [`Pipeline::release_tail`] lets go of the
//!   chunks between record sets (they are read again when needed).
//! - **Order.** Batches and map updates are queued in log order. A batch is handed to the
//!   producer while the window (`max_in_flight` unacknowledged batches) has room; a map
//!   update waits for the acknowledgement of every batch handed on before it, so the map
//!   sees the log in order.
//! - **Acknowledgements** resolve the oldest unacknowledged batch. It is recorded where it
//!   landed ([`record::ack_base`]); below where the map expects it is a target incident
//!   ([`Incident::acked_elsewhere`]): `fail` stops the pipeline, `skip` restarts the map's
//!   target side at the acknowledged offset and records the batch there.
//! - **Live duplicates.** An acknowledgement past where the map expects it is not decided
//!   at once: the pipeline asks for the target's batches from before the expected offset
//!   up to the acknowledged one ([`Action::CheckTarget`]) and nothing more is recorded
//!   (the map keeps its order) until [`Pipeline::target_read`] hands them over. When every
//!   record between repeats records of ours ([`super::recovery::live_duplicates`]: a
//!   request of ours appended again, before or after its re-send), they are duplicates:
//!   the map's target side moves past them (mapped to nothing, exact), the batch is
//!   recorded where it landed and [`Action::Duplicates`] reports them. Otherwise the
//!   pipeline (at-least-once: [`Settings::recovers_by_content`]; exactly-once keeps the
//!   incident, as its restart reads no tail) fails with an error that restarts the
//!   partition, not an incident: the
//!   restart's [`Recovery`] compares the target past the map with the source re-planned,
//!   record by record. That recognises what the pipeline alone cannot: a previous
//!   writer's late batches (a scale-out member fenced with requests in flight) holding
//!   source records this pipeline has not sent yet, merged at other boundaries. A record
//!   recovery cannot match is its incident ([`Incident::recovery_mismatch`]).
//! - **Known gaps** (exactly-once): our commit markers and aborted batches take target
//!   offsets. The driver says how many lie before each batch ([`Pipeline::acked_after`]);
//!   the map's target side moves past them before the batch is recorded, and every rule
//!   above then applies unchanged (an acknowledgement elsewhere is still checked).
//! - **Failure.** A batch that fails for good fails the pipeline: the producer fails every
//!   later unresolved batch of the partition with it (the sequencer's rule), nothing after
//!   it is recorded, and nothing more is produced. A restart builds a new pipeline from
//!   the map and a [`Recovery`] over what the target holds past it.
//! - **Out of range.** Nothing more is fetched (the driver stops reading the feed) until
//!   the source log start is known; queued work is still handed on. A position below the
//!   log start is [`Incident::source_deleted`], otherwise [`Incident::source_past_end`]
//!   (both `on_source_truncation`); `skip` queues the map's log start (or restart) behind
//!   the queued work and repositions planning and the feed at the log start under a new
//!   generation.
//! - **Source re-created** (the flow applied `on_topic_recreation`): likewise, the map
//!   restarts at the new log start and recovery ends.
//! - **Stop.** Nothing more is produced or fetched; acknowledgements of batches in flight
//!   are still recorded; finished when none is left. **Feed end**: queued work is still
//!   produced; finished when everything is recorded.
//!
//! The held-bytes limit for open transactions is checked by the driver after each plan
//! (`partition::held_bytes::check_held`, on [`Pipeline::planner`]).
//!
//! [`Incident::recovery_mismatch`]: crate::incident::Incident::recovery_mismatch
//! [`Incident::acked_elsewhere`]: crate::incident::Incident::acked_elsewhere
//! [`Incident::source_deleted`]: crate::incident::Incident::source_deleted
//! [`Incident::source_past_end`]: crate::incident::Incident::source_past_end

mod feed;
mod live;
mod produce;
pub mod record;
mod tail;

#[cfg(test)]
mod model;
#[cfg(test)]
mod pin_tests;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use bytes::Bytes;
use strait_client::AbortedTxn;
use strait_offsets::OffsetMap;
use strait_records::{Batch, Limits, MergeOptions};

use self::live::Check;
use self::record::Update;
use self::tail::TailRead;
use super::coalesce::{Coalesced, Coalescer, Pins, Written};
use super::plan::{Planner, SlowReason};
use super::recovery::Recovery;
use crate::incident::{Policies, Skipped};

/// What a pipeline needs to know besides its events.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Source position the feed starts at (where planning starts).
    pub start: i64,
    /// Largest batch the target accepts.
    pub max_batch_bytes: usize,
    /// `--once`: stop at this source offset.
    pub until: Option<i64>,
    /// Incident policies.
    pub policies: Policies,
    /// The producer's window: unacknowledged batches per partition.
    pub max_in_flight: usize,
    /// How queued batches are merged when the window is full.
    pub merge: MergeOptions,
    /// Target topic (for messages).
    pub target_topic: std::sync::Arc<str>,
    /// Source cluster name (context for errors about fetched bytes).
    pub source_cluster: std::sync::Arc<str>,
    /// Whether a restart recovers the target past the map by content (at-least-once).
    /// An exactly-once restart reads no tail (past the last commit it skips aborted data
    /// and markers), so there an acknowledgement past the map that the live check cannot
    /// prove is the incident at once.
    pub recovers_by_content: bool,
}

/// One fetched record set.
#[derive(Debug)]
pub struct Fetched<'a, P> {
    /// Cursor generation it was fetched under.
    pub generation: u64,
    /// The offset it was fetched from.
    pub position: i64,
    /// The record batches.
    pub records: Bytes,
    /// Aborted transactions overlapping them.
    pub aborted: &'a [AbortedTxn],
    /// The response's last stable offset when the broker is known to compute a real one
    /// (the fetcher decides); transactional data below it that the aborted list does not
    /// name is committed.
    pub stable: Option<i64>,
    /// Kept alive by its batches until they are acknowledged (the budget reservation).
    pub pin: P,
}

/// What planning a record set dropped or slowed down (for metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Planned {
    /// Control batches (markers) dropped.
    pub dropped_control: u32,
    /// Batches of aborted transactions dropped.
    pub dropped_aborted: u32,
    /// Why batches took the slow (re-encoding) path.
    pub slow: Vec<SlowReason>,
}

/// What the driver must do next.
#[derive(Debug)]
pub enum Action {
    /// Hand this batch to the producer (its acknowledgement is the next one expected).
    Produce {
        /// The batch.
        batch: Batch,
        /// `Some` when it was merged from several queued batches.
        coalesced: Option<Coalesced>,
    },
    /// Map updates are ready: call [`Pipeline::record`] with the map.
    Record,
    /// Find the source partition's log start and hand it to [`Pipeline::log_start`].
    NeedLogStart,
    /// Pause the feed (`--once`: fetched to the end seen at start).
    PauseFeed,
    /// Move the feed's cursor here under this generation and resume fetching.
    Reposition {
        /// The source offset.
        position: i64,
        /// The new generation.
        generation: u64,
        /// Because the source topic was re-created (else: source truncation).
        recreated: bool,
    },
    /// An incident was skipped by policy: count it and log the message.
    Skipped(Skipped),
    /// Recovery cannot decide the next step from the target records read so far: read
    /// the target's batches from `from` on, a bounded chunk of them (at most up to `to`),
    /// and hand them to [`Pipeline::target_tail_read`]. Nothing is produced meanwhile.
    ReadTargetTail {
        /// First target offset not read yet.
        from: u64,
        /// Where the target ended at start (the tail ends here).
        to: u64,
    },
    /// Recovery matched every record found past the map; these were duplicates.
    Recovered {
        /// Duplicate records skipped.
        duplicates: u64,
    },
    /// An acknowledgement landed past where the map expects it: read the target's batches
    /// holding offsets `from..to` and hand them to [`Pipeline::target_read`].
    CheckTarget {
        /// First offset to read (before the expected one, to know our records there).
        from: u64,
        /// Where the map expected the batch.
        expected: u64,
        /// Where it landed (read up to here).
        to: u64,
    },
    /// Records on the target between where the map expected a batch and where it landed
    /// repeat records of ours: duplicates, mapped to nothing (count them, warn).
    Duplicates {
        /// Duplicate records.
        records: u64,
        /// First duplicate's target offset.
        from: u64,
        /// Where the acknowledged batch landed (past the duplicates).
        to: u64,
    },
    /// `--once`: the partition reached the end seen at start.
    Done,
}

/// A batch acknowledged and recorded (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// Records in it.
    pub records: u64,
    /// Its size.
    pub bytes: u64,
    /// Its largest record timestamp.
    pub max_timestamp: i64,
}

/// Work handed on, in log order, until it is in the map.
#[derive(Debug)]
enum Pending<P> {
    /// A batch handed to the producer; `ack` is its base offset once acknowledged.
    Sent {
        written: Written,
        /// Kept until recorded: what a live duplicate check compares with.
        batch: Batch,
        bytes: u64,
        max_timestamp: i64,
        pins: Pins<P>,
        ack: Option<i64>,
        /// Target offsets known to lie before the batch that hold none of our data
        /// ([`Pipeline::acked_after`]); the map's target side moves past them first.
        gap: u64,
    },
    Update(Update),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Waiting for the source log start after an out-of-range answer at `position`.
    OutOfRange {
        position: i64,
    },
    /// Waiting for the source log start after a source re-creation.
    Recreated,
    /// Told to stop: only acknowledgements are awaited.
    Stopping,
    /// The feed ended: queued work is handed on, then finished.
    Draining,
    /// Failed for good.
    Failed,
}

/// One partition's pipeline (see the module docs).
#[derive(Debug)]
pub struct Pipeline<P> {
    planner: Planner<P>,
    recovery: Recovery,
    queue: Coalescer<P, Update>,
    pending: VecDeque<Pending<P>>,
    in_flight: usize,
    generation: u64,
    phase: Phase,
    until: Option<i64>,
    done: bool,
    policies: Policies,
    target_topic: std::sync::Arc<str>,
    /// [`Settings::recovers_by_content`].
    recovers_by_content: bool,
    source_cluster: std::sync::Arc<str>,
    outbox: VecDeque<Action>,
    check: Option<Check>,
    /// Steps waiting for a chunk of the target's tail (boxed: only while recovering).
    tail: Option<Box<TailRead<P>>>,
    /// Map restarts for a re-created source topic applied so far.
    recreations: u64,
}

impl<P: Clone> Pipeline<P> {
    /// A pipeline for a partition whose map is `map` (its state at start) and whose target
    /// holds what `recovery` was built from past it.
    pub fn new(settings: Settings, map: &OffsetMap, recovery: Recovery) -> Self {
        let limits = Limits::default();
        let mut p = Pipeline {
            planner: Planner::new(settings.start, settings.max_batch_bytes, limits),
            recovery,
            queue: Coalescer::new(settings.max_in_flight, settings.merge),
            pending: VecDeque::new(),
            in_flight: 0,
            generation: 0,
            phase: Phase::Running,
            recreations: 0,
            until: settings.until,
            done: false,
            policies: settings.policies,
            target_topic: settings.target_topic,
            recovers_by_content: settings.recovers_by_content,
            source_cluster: settings.source_cluster,
            outbox: VecDeque::new(),
            check: None,
            tail: None,
        };
        p.check_done(map);
        p
    }

    /// The planner (for the held-bytes check).
    pub fn planner_mut(&mut self) -> &mut Planner<P> {
        &mut self.planner
    }

    /// The planner (held bytes, open transactions).
    pub fn planner(&self) -> &Planner<P> {
        &self.planner
    }

    /// The cursor generation fetched data must carry.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Batches handed to the producer and not acknowledged yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// `--once`: whether the map reached the end it stops at ([`Action::Done`] was
    /// emitted).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Gives back the capacity its queues do not use now: a partition that parks keeps
    /// no room for batches it may never get (10,000 partitions). Changes no decision.
    pub fn shrink_to_fit(&mut self) {
        self.planner.shrink_to_fit();
        self.queue.shrink_to_fit();
        self.pending.shrink_to_fit();
        self.outbox.shrink_to_fit();
    }

    /// Whether the driver should read the feed now (not while steps wait for a chunk of
    /// the target's tail).
    pub fn wants_feed(&self) -> bool {
        self.phase == Phase::Running && !self.waits_for_tail()
    }

    /// Whether the pipeline is over: stopped (or the feed ended) and everything handed on
    /// is recorded.
    pub fn is_finished(&self) -> bool {
        match self.phase {
            Phase::Stopping => self.pending.is_empty(),
            Phase::Draining => {
                self.queue.is_empty() && self.pending.is_empty() && !self.waits_for_tail()
            }
            _ => false,
        }
    }

    /// Stop: produce nothing more; record what is acknowledged.
    pub fn stop(&mut self) {
        if self.phase != Phase::Failed {
            self.phase = Phase::Stopping;
        }
        // Steps waiting for the target's tail are never produced now.
        self.tail = None;
    }

    /// The feed ended: hand on what is queued, record it, then finish.
    pub fn feed_ended(&mut self) {
        if matches!(
            self.phase,
            Phase::Running | Phase::OutOfRange { .. } | Phase::Recreated
        ) {
            self.phase = Phase::Draining;
        }
    }

    /// How many times the map was restarted for a re-created source topic (the flow saves
    /// a new topic id only with a map that belongs to it).
    pub fn recreations(&self) -> u64 {
        self.recreations
    }
}
