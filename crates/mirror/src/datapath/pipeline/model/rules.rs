//! The model's rules checked (numbered in the module docs of [`super`]): the map against
//! the target (rule 1), incidents under the policy (rule 3) and only where a fault forces
//! one (rule 4).

use super::*;

impl World {
    /// One incident of `kind`, skipped (`Ok`) or failing the pipeline (`Err`): the policy
    /// decides which (rule 3), a fault must force it (rule 4).
    pub(super) fn incident(
        &mut self,
        kind: IncidentKind,
        skipped: bool,
    ) -> Result<(), TestCaseError> {
        match kind {
            IncidentKind::SourceTruncation => self.incidents.source += 1,
            IncidentKind::TargetMismatch => self.incidents.target += 1,
            other => prop_assert!(false, "no {:?} incident can happen here", other),
        }
        prop_assert_eq!(
            skipped,
            self.policy == IncidentPolicy::Skip,
            "an incident under {:?} was {}",
            self.policy,
            if skipped { "skipped" } else { "an error" }
        );
        self.forced()
    }

    /// Rule 4: never more incidents than injected faults that can force one.
    pub(super) fn forced(&self) -> Result<(), TestCaseError> {
        let i = &self.incidents;
        prop_assert!(
            i.source <= i.truncations + i.restarts_below,
            "a source-truncation incident no fault forced: {i:?}"
        );
        prop_assert!(
            i.target <= i.restarts + i.foreign_copies,
            "a target mismatch no fault forced: {i:?}"
        );
        Ok(())
    }

    /// Whether the map claims target offset `t`.
    fn claims(&self, t: u64) -> bool {
        self.map
            .runs()
            .any(|r| (r.target_start()..r.target_start() + r.len()).contains(&t))
    }

    /// Whether the record at target offset `t` is ours: the map claims it, or it repeats
    /// a record the map claims before it.
    pub(super) fn ours(&self, t: u64) -> bool {
        let (records, r) = (&self.target.records, &self.target.records[t as usize]);
        self.claims(t)
            || (0..t).any(|u| {
                let c = &records[u as usize];
                self.claims(u) && (c.timestamp, &c.key, &c.value) == (r.timestamp, &r.key, &r.value)
            })
    }

    /// Rule 3: after an incident under `fail` the pipeline wants no feed, drops a record
    /// set that arrives anyway, and hands the producer nothing more, also when the batches
    /// still in flight are answered and free the window.
    pub(super) fn check_stopped(&mut self) -> Result<(), TestCaseError> {
        let Some(e) = self.stopped.take() else {
            return Ok(());
        };
        prop_assert!(
            self.policy == IncidentPolicy::Fail,
            "stopped under skip: {e}"
        );
        prop_assert!(
            !self.run.p.wants_feed(),
            "the feed is still wanted after {e}"
        );
        if let Some(&set) = self.source.get(self.run.fetch_next) {
            let r = self.run.p.fetched(Fetched {
                generation: self.run.p.generation(),
                position: set.0,
                records: record_set(&[set]),
                aborted: &[],
                stable: None,
                pin: (),
            });
            prop_assert!(
                matches!(r, Ok(None)),
                "a record set after {e} was not dropped: {r:?}"
            );
        }
        for _ in 0..1000 {
            match self.run.p.next_action(|_, _| None) {
                Some(Action::Produce { batch, .. }) => prop_assert!(
                    false,
                    "a batch was forwarded after {e}: {:?}",
                    batch.header()
                ),
                // What was acknowledged before the incident may still be recorded (the
                // driver stops at the error and asks nothing more).
                Some(Action::Record) => {
                    if self.run.p.record(&mut self.map).is_err() {
                        break;
                    }
                    self.check()?;
                }
                Some(Action::CheckTarget { .. }) => break,
                Some(_) => {}
                // Waiting: the next batch in flight is answered, freeing the window.
                None => match self.run.in_flight.pop_front() {
                    Some(b) => {
                        let base = self.target.append(&b);
                        if self.run.p.acked(base as i64).is_err() {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
        self.stopped = Some(e);
        Ok(())
    }

    /// The map never claims a record the target does not hold there, in order, and claims
    /// each source and target offset at most once.
    pub(super) fn check(&self) -> Result<(), TestCaseError> {
        let mut sources = BTreeSet::new();
        let mut targets = BTreeSet::new();
        prop_assert!(self.map.coarse_segments().is_empty());
        for run in self.map.runs() {
            for i in 0..run.len() {
                let (s, t) = (run.source_start() + i, run.target_start() + i);
                let held = self.target.records.get(t as usize);
                let want = source_record(s as i64);
                prop_assert!(
                    held.is_some_and(|r| r.value == want.value && r.timestamp == want.timestamp),
                    "the map claims source {s} at target {t}, the target holds {held:?}"
                );
                prop_assert!(sources.insert(s), "source {s} claimed twice");
                prop_assert!(targets.insert(t), "target {t} claimed twice");
            }
        }
        Ok(())
    }

    /// Rule 1's end: unless an incident stopped the case, replication reached the source
    /// end and every record still in the source is on the target.
    pub(super) fn check_complete(&self) -> Result<(), TestCaseError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        let end: i64 = self.source.iter().map(|(_, n)| n).sum();
        prop_assert_eq!(
            self.map.next(Side::Source),
            end as u64,
            "replication reaches the source end"
        );
        for s in self.log_start..end {
            let want = source_record(s);
            prop_assert!(
                self.target.records.iter().any(|r| r.value == want.value),
                "source record {} is on the target",
                s
            );
        }
        Ok(())
    }
}
