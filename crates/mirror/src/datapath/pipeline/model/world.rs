//! The model driven: a world's runs started and restarted (as the flow builds them), the
//! pipeline's actions answered by the model's target and source, and one [`Op`] applied.

use super::*;

impl World {
    pub(super) fn new(sizes: &[i64], policy: IncidentPolicy) -> Self {
        let map = OffsetMap::new();
        let run = Self::start(&map, Recovery::none(), policy, 0);
        World {
            source: source(sizes),
            target: Target::default(),
            checkpoint: map.clone(),
            map,
            policy,
            run,
            incidents: Incidents::default(),
            log_start: 0,
            stopped: None,
            dup_appended: 0,
            dup_since_ack: 0,
            dup_reported: 0,
        }
    }

    fn start(map: &OffsetMap, recovery: Recovery, policy: IncidentPolicy, fetch: usize) -> Run {
        let start = map.next(Side::Source) as i64;
        Run {
            p: Pipeline::new(
                Settings {
                    // A small window: batches queue behind it (and are merged) often.
                    max_in_flight: WINDOW,
                    ..settings(start, None, Policies::all(policy))
                },
                map,
                recovery,
            ),
            in_flight: VecDeque::new(),
            fetch_next: fetch,
        }
    }

    /// A new run from `map` (the map so far, or the last checkpoint) with a recovery over
    /// the target past it, as the flow builds it.
    fn restart(&mut self, map: OffsetMap) {
        self.incidents.restarts += 1;
        if (map.next(Side::Source) as i64) < self.log_start {
            self.incidents.restarts_below += 1;
        }
        self.map = map;
        let from = self.map.next(Side::Target);
        let recovery = self.target.recovery(from);
        // The feed starts at the map's source position.
        let fetch = self.batch_at(self.map.next(Side::Source) as i64);
        self.run = Self::start(&self.map, recovery, self.policy, fetch);
    }

    /// The index of the first source batch at or past `offset`.
    fn batch_at(&self, offset: i64) -> usize {
        self.source.iter().take_while(|(b, _)| *b < offset).count()
    }

    /// Does what the pipeline asks until it waits; an error restarts from the map so far,
    /// unless it is an incident under `fail`, which ends the case.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        while self.stopped.is_none() {
            let action = self.run.p.next_action(|_, _| None);
            let r = match action {
                None => return Ok(()),
                Some(Action::Produce { batch, .. }) => {
                    self.run.in_flight.push_back(batch);
                    Ok(())
                }
                Some(Action::Record) => self.run.p.record(&mut self.map).map(|_| ()),
                Some(Action::Skipped(s)) => {
                    self.incident(s.kind, true)?;
                    Ok(())
                }
                Some(Action::NeedLogStart) => self.run.p.log_start(self.log_start),
                Some(Action::Reposition { position, .. }) => {
                    self.run.fetch_next = self.batch_at(position);
                    Ok(())
                }
                Some(Action::CheckTarget { from, to, .. }) => {
                    let batches: Vec<Batch> = self
                        .target
                        .chunks
                        .iter()
                        .filter(|(base, r)| base + r.len() as u64 > from && *base < to)
                        .map(|(base, r)| batch_of(*base as i64, r))
                        .collect();
                    self.run.p.target_read(from, &batches);
                    Ok(())
                }
                Some(Action::ReadTargetTail { from, to }) => {
                    let batches = self.target.read(from, to);
                    self.run.p.target_tail_read(&batches, ())
                }
                Some(Action::Duplicates { records, .. }) => {
                    self.dup_reported += records;
                    Ok(())
                }
                Some(_) => Ok(()),
            };
            if let Err(e) = r {
                self.failed(e)?;
            }
        }
        Ok(())
    }

    /// The pipeline returned `e`: an incident under `fail` ends the case; anything else
    /// restarts from the map so far.
    fn failed(&mut self, e: MirrorError) -> Result<(), TestCaseError> {
        if let Some(kind) = e.incident_kind() {
            self.incident(kind, false)?;
            self.stopped = Some(e);
            return Ok(());
        }
        self.restart(self.map.clone());
        Ok(())
    }

    /// Applies one [`Op`] to the world, then lets the pipeline settle. The model's
    /// transition table: one arm per op, kept whole so every transition reads side by
    /// side (an arm that changes nothing returns before settling).
    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        match *op {
            Op::Fetch(n) => {
                let from = self.run.fetch_next;
                let to = (from + n).min(self.source.len());
                if from == to || !self.run.p.wants_feed() {
                    return Ok(());
                }
                let set = &self.source[from..to];
                if set[0].0 < self.log_start {
                    self.run.p.out_of_range(self.run.p.generation(), set[0].0);
                    return self.settle();
                }
                self.run.fetch_next = to;
                let r = self.run.p.fetched(Fetched {
                    generation: self.run.p.generation(),
                    position: set[0].0,
                    records: record_set(set),
                    aborted: &[],
                    stable: None,
                    pin: (),
                });
                if let Err(e) = r {
                    self.failed(e)?;
                }
            }
            Op::Ack { no_offset, twice } => {
                let Some(batch) = self.run.in_flight.pop_front() else {
                    return Ok(());
                };
                // Appended twice: the first copy is the duplicate (the answer names the
                // second).
                if twice {
                    self.target.append(&batch);
                    self.dup_appended += batch.header().records_count.max(0) as u64;
                }
                let base = self.target.append(&batch);
                // An answer without an offset means "where the map expects it": only when
                // nothing landed before it.
                let acked = if no_offset && !twice && self.dup_since_ack == 0 {
                    -1
                } else {
                    base as i64
                };
                self.dup_since_ack = 0;
                if let Err(e) = self.run.p.acked(acked) {
                    self.failed(e)?;
                }
            }
            Op::Fail { written } => {
                if self.run.in_flight.is_empty() {
                    return Ok(());
                }
                for b in std::mem::take(&mut self.run.in_flight).iter().take(written) {
                    self.target.append(b);
                }
                let e = self.run.p.produce_failed(strait_client::Error::new(
                    strait_client::ErrorKind::ConnectionClosed,
                ));
                self.failed(e)?;
            }
            Op::Kill { written, twice } => {
                let in_flight = std::mem::take(&mut self.run.in_flight);
                for b in in_flight.iter().take(written) {
                    self.target.append(b);
                }
                if twice {
                    for b in in_flight.iter().take(written) {
                        self.target.append(b);
                    }
                }
                self.restart(self.checkpoint.clone());
            }
            Op::Dup(i) => {
                let recent = self.target.chunks.len().min(3);
                let candidates = self.run.in_flight.len() + recent;
                if candidates == 0 {
                    return Ok(());
                }
                let pick = i % candidates;
                let copy = match self.run.in_flight.get(pick) {
                    Some(b) => b.clone(),
                    None => {
                        let (base, r) = &self.target.chunks
                            [self.target.chunks.len() - 1 - (pick - self.run.in_flight.len())];
                        // Recognisable as a repeat of ours only if every record from the
                        // copied ones, or from where the map expects the next batch if
                        // that is before them, to the target's end is ours.
                        let from = (*base).min(self.map.next(Side::Target));
                        if !(from..self.target.end()).all(|t| self.ours(t)) {
                            self.incidents.foreign_copies += 1;
                        }
                        batch_of(*base as i64, r)
                    }
                };
                self.target.append(&copy);
                let n = copy.header().records_count.max(0) as u64;
                self.dup_appended += n;
                self.dup_since_ack += n;
            }
            Op::Checkpoint => {
                self.checkpoint = self.map.clone();
                // The driver lets go of the tail's chunks when the budget is short: it
                // changes no decision (they are read again when needed).
                self.run.p.release_tail();
            }
            Op::Truncate(n) => {
                let start = self.source[n.min(self.source.len() - 1)].0;
                if start > self.log_start && start as u64 > self.checkpoint.next(Side::Source) {
                    self.incidents.truncations += 1;
                }
                self.log_start = self.log_start.max(start);
            }
        }
        self.settle()
    }

    /// Runs without faults to the end of the source (or to an incident under `fail`).
    fn finish(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1000 {
            if self.stopped.is_some()
                || self.run.fetch_next == self.source.len() && self.run.in_flight.is_empty()
            {
                break;
            }
            self.apply(&Op::Fetch(3))?;
            self.apply(&Op::Ack {
                no_offset: false,
                twice: false,
            })?;
        }
        Ok(())
    }

    /// Applies `ops` and runs to the end, checking rule 1 after every event; checks rule 3
    /// when an incident stopped the case.
    pub(super) fn play(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            self.apply(op)?;
            self.check()?;
        }
        self.finish()?;
        self.check()?;
        self.check_stopped()
    }
}
