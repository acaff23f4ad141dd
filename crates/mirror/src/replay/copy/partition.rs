//! The copy of one partition of a replay: fetch from where its map ends, plan, cut at
//! the range's end, produce (or, on a resume, find on the target), and record each
//! acknowledgement in the replay's map in source order, saving it every checkpoint.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use strait_client::{AckFuture, Client, IdempotentProducer, IsolationLevel};
use strait_offsets::{OffsetMap, Side};
use strait_records::Limits;

use super::{FETCH_BYTES, Job, MARKER_WAIT, PartitionSummary, record};
use crate::datapath::plan::{Plan, Planner, Step};
use crate::datapath::recovery::Decision;
use crate::error::MirrorError;
use crate::progress::Progress;
use crate::replay::decide;
use crate::replay::lookup::fetch_one;
use crate::replay::{PartitionPlan, Prepared};
use crate::state::{ReplayStatus, StateWriter};

/// Where a step's records came from, kept until its acknowledgement is recorded.
enum Meta {
    Dense { first: i64, count: i64 },
    Listed(Vec<u64>),
}

impl Meta {
    fn of(step: &Step) -> Option<Meta> {
        match step {
            Step::Forward {
                source_first,
                count,
                ..
            } => Some(Meta::Dense {
                first: *source_first,
                count: *count,
            }),
            Step::Reencoded { source_offsets, .. } => Some(Meta::Listed(
                source_offsets.iter().map(|o| *o as u64).collect(),
            )),
            Step::Skip { .. } => None,
        }
    }

    fn records(&self) -> u64 {
        match self {
            Meta::Dense { count, .. } => *count as u64,
            Meta::Listed(o) => o.len() as u64,
        }
    }
}

/// Work handed on, in source order, until it is in the map.
enum Pending {
    Sent(Meta, AckFuture),
    /// Found on the target by the resume's content check.
    There(Meta, u64),
    Skip(i64),
}

/// What copies each partition of one replay run: the clients, the run and its limits.
pub(super) struct Copier<'a> {
    /// Source offsets copied (or found there) of those to copy.
    pub(super) progress: &'a Progress,
    pub(super) source: &'a Client,
    pub(super) producer: &'a IdempotentProducer,
    pub(super) prepared: &'a Prepared,
    pub(super) run: u32,
    pub(super) max_batch_bytes: usize,
    pub(super) window: usize,
    pub(super) checkpoint: Duration,
    pub(super) limits: Limits,
}

/// A partition's copy under way: the work handed on but not yet in the map, what was
/// recorded so far, and when its progress was last saved.
struct Copying {
    /// Work handed on, in source order, until it is in the map.
    queue: VecDeque<Pending>,
    /// What was recorded so far.
    counts: Counts,
    /// When the partition's replay record was last written.
    last_write: Instant,
}

/// Counts of one partition's copy.
#[derive(Default)]
struct Counts {
    records: u64,
    already_there: u64,
}

impl Copier<'_> {
    /// Copies one partition's range, then saves it as done (a partition already done is
    /// only summarised).
    pub(super) async fn copy(
        &self,
        job: &mut Job<'_>,
        writer: &mut StateWriter,
    ) -> Result<PartitionSummary, MirrorError> {
        let plan = job.plan;
        let p = plan.partition;
        if job.done {
            return Ok(summary(
                plan,
                &Counts::default(),
                &job.map,
                plan.saved.is_some(),
            ));
        }
        let end = plan.end;
        let position = job.map.next(Side::Source) as i64;
        let mut planner: Planner<()> = Planner::new(position, self.max_batch_bytes, self.limits);
        let mut fetch_pos = position;
        let mut copying = Copying {
            queue: VecDeque::new(),
            counts: Counts::default(),
            last_write: Instant::now(),
        };
        let mut waiting_since: Option<Instant> = None;
        while planner.released_next() < end {
            let planned = self.fetch_planned(&mut planner, p, fetch_pos).await?;
            if planned.next_position <= fetch_pos && planned.steps.is_empty() {
                // Nothing new: the range ends inside a transaction whose marker is not
                // written (or not readable) yet.
                let since = *waiting_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= MARKER_WAIT {
                    return Err(marker_not_written(&planner, p, end, fetch_pos));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            waiting_since = None;
            fetch_pos = planned.next_position;
            for step in planned.into_steps() {
                self.take_step(step, job, writer, &mut copying).await?;
            }
        }
        self.finish(job, writer, &mut copying).await?;
        Ok(summary(plan, &copying.counts, &job.map, false))
    }

    /// Fetches the partition from `fetch_pos` and plans what came back.
    async fn fetch_planned(
        &self,
        planner: &mut Planner<()>,
        p: i32,
        fetch_pos: i64,
    ) -> Result<Plan<()>, MirrorError> {
        // read_uncommitted: the planner decides transactions by their markers, which a
        // read_committed fetch would not return past the last stable offset (another
        // transaction still open after the range would keep a decided one waiting).
        let fetched = fetch_one(
            self.source,
            &self.prepared.spec.source_topic,
            p,
            fetch_pos,
            FETCH_BYTES,
            IsolationLevel::ReadUncommitted,
        )
        .await?;
        let (records, aborted) = match fetched {
            Some(f) => (f.records, f.aborted_transactions),
            None => (bytes::Bytes::new(), Vec::new()),
        };
        planner.plan(records, &aborted, fetch_pos, ()).map_err(|e| {
            MirrorError::records(format!("replay: batch at offset {}", e.offset), e.source)
                .partition(p)
        })
    }

    /// Cuts a step at the range's end, hands it on, records what is settled down to the
    /// window, and saves the partition's progress when a checkpoint is due.
    async fn take_step(
        &self,
        step: Step,
        job: &mut Job<'_>,
        writer: &mut StateWriter,
        copying: &mut Copying,
    ) -> Result<(), MirrorError> {
        let p = job.plan.partition;
        let cut = decide::cut(step, job.plan.end, &self.limits)
            .map_err(|e| MirrorError::records("replay: cutting the last batch", e).partition(p))?;
        let Some(step) = cut else { return Ok(()) };
        self.hand_on(step, job, &mut copying.queue).await?;
        let (queue, counts) = (&mut copying.queue, &mut copying.counts);
        self.settle(queue, &mut job.map, counts, self.window)
            .await?;
        // Between steps, not per fetch: one fetch may hold the whole range.
        if copying.last_write.elapsed() >= self.checkpoint {
            self.save(job, writer, ReplayStatus::Copying).await?;
            copying.last_write = Instant::now();
        }
        Ok(())
    }

    /// Saves the partition's progress (its map and `status`) to the state topic.
    async fn save(
        &self,
        job: &mut Job<'_>,
        writer: &mut StateWriter,
        status: ReplayStatus,
    ) -> Result<(), MirrorError> {
        let progress = record(self.prepared, self.run, job.plan, &mut job.map, status);
        writer.write_encoded(vec![progress]).await
    }

    /// Records everything still queued, moves the map to the range's end and saves the
    /// partition as done.
    async fn finish(
        &self,
        job: &mut Job<'_>,
        writer: &mut StateWriter,
        copying: &mut Copying,
    ) -> Result<(), MirrorError> {
        let (p, end) = (job.plan.partition, job.plan.end);
        let (queue, counts) = (&mut copying.queue, &mut copying.counts);
        self.settle(queue, &mut job.map, counts, 0).await?;
        if (job.map.next(Side::Source) as i64) < end {
            job.map
                .advance_source(end as u64)
                .map_err(|e| MirrorError::offset_map(e).partition(p))?;
        }
        self.save(job, writer, ReplayStatus::Done).await?;
        Ok(())
    }

    /// Produces a step (or, on a resume, finds it on the target) and queues it.
    async fn hand_on(
        &self,
        step: Step,
        job: &mut Job<'_>,
        queue: &mut VecDeque<Pending>,
    ) -> Result<(), MirrorError> {
        let p = job.plan.partition;
        let Some(meta) = Meta::of(&step) else {
            queue.push_back(Pending::Skip(step.source_next()));
            return Ok(());
        };
        match job.recovery.decide(&step) {
            Decision::AlreadyWritten { target_base } => {
                queue.push_back(Pending::There(meta, target_base));
            }
            Decision::Mismatch { at, reason } => {
                return Err(MirrorError::state(format!(
                    "cannot resume the replay: the target holds records past its saved map \
                     that are not the replay's next records (at target offset {at}: {reason}); \
                     something else wrote the partition since the run was interrupted. \
                     --again copies the range afresh"
                ))
                .partition(p));
            }
            Decision::ReadMore { from } => {
                // The replay reads the whole tail up front (`Recovery::from_target`).
                return Err(MirrorError::other(format!(
                    "replay resume: the target's tail was not read past offset {from}"
                ))
                .partition(p));
            }
            Decision::Produce => {
                let (Step::Forward { batch, .. } | Step::Reencoded { batch, .. }) = step else {
                    return Ok(());
                };
                let ack = self
                    .producer
                    .send(&self.prepared.spec.target_topic, p, batch)
                    .await
                    .map_err(|e| MirrorError::kafka("replay: produce", e).partition(p))?;
                queue.push_back(Pending::Sent(meta, ack));
            }
        }
        Ok(())
    }

    /// Records queued work in order until at most `keep` produced batches are unresolved.
    async fn settle(
        &self,
        queue: &mut VecDeque<Pending>,
        map: &mut OffsetMap,
        counts: &mut Counts,
        keep: usize,
    ) -> Result<(), MirrorError> {
        loop {
            let sent = queue
                .iter()
                .filter(|q| matches!(q, Pending::Sent(..)))
                .count();
            let head_waits = matches!(queue.front(), Some(Pending::Sent(..)));
            if queue.is_empty() || (head_waits && sent <= keep) {
                return Ok(());
            }
            let Some(item) = queue.pop_front() else {
                return Ok(());
            };
            let map_err = MirrorError::offset_map;
            let before = map.next(Side::Source);
            match item {
                Pending::Skip(next) => {
                    if next as u64 > map.next(Side::Source) {
                        map.advance_source(next as u64).map_err(map_err)?;
                    }
                }
                Pending::There(meta, base) => {
                    counts.already_there += meta.records();
                    record_at(map, &meta, base).map_err(map_err)?;
                }
                Pending::Sent(meta, ack) => {
                    let ack = ack
                        .wait()
                        .await
                        .map_err(|e| MirrorError::kafka("replay: produce", e))?;
                    let Ok(base) = u64::try_from(ack.base_offset) else {
                        return Err(MirrorError::other(
                            "replay: the target acknowledged a batch without its offset \
                             (DUPLICATE_SEQUENCE_NUMBER): the map cannot place it; run the \
                             replay again (it resumes and checks the target)",
                        ));
                    };
                    counts.records += meta.records();
                    record_at(map, &meta, base).map_err(map_err)?;
                }
            }
            self.progress
                .add_done(map.next(Side::Source).saturating_sub(before));
        }
    }
}

fn record_at(map: &mut OffsetMap, meta: &Meta, base: u64) -> Result<(), strait_offsets::MapError> {
    match meta {
        Meta::Dense { first, count } => map.append_dense(*first as u64, *count as u64, base),
        Meta::Listed(offsets) => map.append_listed(offsets, base),
    }
}

/// What the copy of `plan` did, from its counts and map.
fn summary(
    plan: &PartitionPlan,
    counts: &Counts,
    map: &OffsetMap,
    was_done: bool,
) -> PartitionSummary {
    PartitionSummary {
        partition: plan.partition,
        source_start: plan.start,
        source_end: plan.end,
        records: counts.records,
        already_there: counts.already_there,
        target: map
            .runs()
            .next()
            .map(|r| (r.target_start(), map.next(Side::Target))),
        was_done,
    }
}

/// The error when the range ends in a transaction whose marker did not come within
/// [`MARKER_WAIT`].
fn marker_not_written(planner: &Planner<()>, p: i32, end: i64, fetch_pos: i64) -> MirrorError {
    let txn = planner.oldest_open().map_or_else(
        || "nothing more is readable".to_owned(),
        |t| {
            format!(
                "the transaction of producer id {} open since source offset {} \
                 is not decided",
                t.producer_id, t.first_offset
            )
        },
    );
    MirrorError::other(format!(
        "replay: the range ends at source offset {end} but {txn} after {}s at \
         offset {fetch_pos}; run it again once it is (the run resumes)",
        MARKER_WAIT.as_secs()
    ))
    .partition(p)
}
