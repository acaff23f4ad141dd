//! The feed side of the pipeline: a fetched record set planned, each step through
//! recovery into the queue, and the source's out-of-range answers and re-creation (the
//! rules are in the module docs of [`super`]: generations, `--once`, recovery, out of
//! range, source re-created).

use strait_records::push_lean;

use super::record::Update;
use super::{Action, Fetched, Phase, Pipeline, Planned};
use crate::datapath::coalesce::{Outgoing, Written};
use crate::datapath::plan::Step;
use crate::datapath::recovery::{Decision, Recovery};
use crate::error::MirrorError;
use crate::incident::Incident;

impl<P: Clone> Pipeline<P> {
    /// A record set arrived. `Ok(None)` when it was dropped (older generation, or
    /// `--once` past the end).
    pub fn fetched(&mut self, f: Fetched<'_, P>) -> Result<Option<Planned>, MirrorError> {
        if f.generation != self.generation || self.phase != Phase::Running {
            return Ok(None);
        }
        if let Some(until) = self.until
            && f.position >= until
        {
            push_lean(&mut self.outbox, Action::PauseFeed);
            return Ok(None);
        }
        let plan = self
            .planner
            .plan_stable(f.records, f.aborted, f.stable, f.position, f.pin)
            .map_err(|e| {
                MirrorError::records(format!("batch at source offset {}", e.offset), e.source)
                    .cluster(&*self.source_cluster)
            })?;
        let planned = Planned {
            dropped_control: plan.dropped_control,
            dropped_aborted: plan.dropped_aborted,
            slow: plan.slow.clone(),
        };
        let fetched_to = plan.next_position;
        for (step, pin) in plan.steps {
            self.step_or_hold(step, pin)?;
        }
        self.release_tail_pins();
        if let Some(until) = self.until
            && fetched_to >= until
        {
            // Batches still held belong to transactions open at that end: they are not
            // replicated (the map's source position stays before them for the next run).
            push_lean(&mut self.outbox, Action::PauseFeed);
            self.reached_end();
        }
        Ok(Some(planned))
    }

    /// One planned step: recovery, then the queue. Gives the step back when recovery
    /// needs the next chunk of the target's tail to decide it ([`Action::ReadTargetTail`]
    /// is then queued).
    pub(super) fn step(&mut self, step: Step, pin: P) -> Result<Option<(Step, P)>, MirrorError> {
        let mut decision = self.recovery.decide(&step);
        if let Decision::ReadMore { from } = decision {
            let to = self.recovery.target_end();
            push_lean(&mut self.outbox, Action::ReadTargetTail { from, to });
            return Ok(Some((step, pin)));
        }
        let finished = match decision {
            Decision::Mismatch { .. } => None,
            _ => self.recovery.finished(),
        };
        if let Some(f) = finished {
            push_lean(
                &mut self.outbox,
                Action::Recovered {
                    duplicates: f.duplicates,
                },
            );
        }
        if let Decision::Mismatch { at, reason } = &decision {
            self.mismatch(*at, reason, &step)?;
            decision = Decision::Produce;
        }
        let written = written_of(&step);
        // Recovery over: the next batch lands at the target's end, past trailing
        // duplicates (after this step's own records when the target held them).
        let recovered_to = finished.map(|f| Update::RecoveredTo(f.target_end));
        let already = matches!(decision, Decision::AlreadyWritten { .. });
        if !already && let Some(u) = recovered_to.clone() {
            self.queue.push_other(u);
        }
        self.enqueue(decision, step, written, pin)?;
        if already && let Some(u) = recovered_to {
            self.queue.push_other(u);
        }
        Ok(None)
    }

    /// Recovery found the target's record at `at` is not `step`'s: an incident (`reason`)
    /// the policy fails or skips; skipped, the map resets to the target's end and
    /// recovery is over.
    fn mismatch(&mut self, at: u64, reason: &str, step: &Step) -> Result<(), MirrorError> {
        let end = self.recovery.target_end();
        let skipped = Incident::recovery_mismatch(&self.target_topic, at, reason, end)
            .decide(&self.policies)
            .into_result()
            .inspect_err(|_| self.phase = Phase::Failed)?;
        push_lean(&mut self.outbox, Action::Skipped(skipped));
        let resume_source = written_of(step).map_or(0, |w| w.first_source());
        self.queue.push_other(Update::TargetReset {
            target_end: end,
            resume_source,
        });
        self.recovery = Recovery::none();
        Ok(())
    }

    /// Queues what `step` (`written`: its source offsets) becomes as `decision` says: a
    /// move of the position, a record of what the target already holds, or a batch.
    fn enqueue(
        &mut self,
        decision: Decision,
        step: Step,
        written: Option<Written>,
        pin: P,
    ) -> Result<(), MirrorError> {
        match (decision, step, written) {
            (_, Step::Skip { source_next }, _) => self
                .queue
                .push_other(Update::Advance(u64::try_from(source_next).unwrap_or(0))),
            (Decision::AlreadyWritten { target_base }, _, Some(w)) => self
                .queue
                .push_other(Update::AlreadyWritten(w, target_base)),
            (_, Step::Forward { batch, .. }, Some(written)) => {
                let mergeable = self.queue.mergeable(&batch);
                self.queue.push_batch(Outgoing {
                    batch,
                    written,
                    pins: smallvec::smallvec![pin],
                    mergeable,
                });
            }
            (_, Step::Reencoded { batch, .. }, Some(written)) => {
                self.queue.push_batch(Outgoing {
                    batch,
                    written,
                    pins: smallvec::smallvec![pin],
                    mergeable: false,
                });
            }
            (_, _, None) => {
                self.phase = Phase::Failed;
                return Err(MirrorError::other("negative offset in a fetched batch"));
            }
        }
        Ok(())
    }

    /// The fetcher got OFFSET_OUT_OF_RANGE at `position` (its cursor is paused).
    pub fn out_of_range(&mut self, generation: u64, position: i64) {
        if generation == self.generation && self.phase == Phase::Running {
            self.phase = Phase::OutOfRange { position };
            push_lean(&mut self.outbox, Action::NeedLogStart);
        }
    }

    /// The flow found the source topic re-created and its policy is `skip`.
    pub fn source_recreated(&mut self) {
        if self.phase == Phase::Running {
            self.phase = Phase::Recreated;
            push_lean(&mut self.outbox, Action::NeedLogStart);
        }
    }

    /// The source log start asked for by [`Action::NeedLogStart`].
    pub fn log_start(&mut self, start: i64) -> Result<(), MirrorError> {
        let start = start.max(0);
        let (update, recreated) = match self.phase {
            Phase::OutOfRange { position } => {
                let (incident, update) = if position < start {
                    (
                        Incident::source_deleted(position, start),
                        Update::SourceLogStart(start as u64),
                    )
                } else {
                    (
                        Incident::source_past_end(position, start),
                        Update::SourceRecreated(start as u64),
                    )
                };
                let skipped = incident
                    .decide(&self.policies)
                    .into_result()
                    .map_err(|e| e.cluster(&*self.source_cluster))
                    .inspect_err(|_| self.phase = Phase::Failed)?;
                push_lean(&mut self.outbox, Action::Skipped(skipped));
                (update, false)
            }
            Phase::Recreated => {
                self.recovery = Recovery::none();
                self.release_tail_pins();
                (Update::SourceRecreated(start as u64), true)
            }
            // Stopped meanwhile, or not asked for.
            _ => return Ok(()),
        };
        self.queue.push_other(update);
        self.generation += 1;
        self.planner.reposition(start);
        self.phase = Phase::Running;
        push_lean(
            &mut self.outbox,
            Action::Reposition {
                position: start,
                generation: self.generation,
                recreated,
            },
        );
        Ok(())
    }
}

/// The ack-side view of a produced step (`None` for a skip or a negative offset).
fn written_of(step: &Step) -> Option<Written> {
    match step {
        Step::Forward {
            source_first,
            count,
            ..
        } => Some(Written::Dense {
            source_first: u64::try_from(*source_first).ok()?,
            count: u64::try_from(*count).ok()?,
        }),
        Step::Reencoded { source_offsets, .. } => Some(Written::Listed(
            source_offsets
                .iter()
                .map(|o| u64::try_from(*o).unwrap_or(0))
                .collect(),
        )),
        Step::Skip { .. } => None,
    }
}
