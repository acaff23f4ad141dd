//! The driver's loop: one `select!` over the commit barrier, the oldest acknowledgement,
//! the source's log start and the inbox (feed and stop), and what it does with each wake-up
//! (a feed item handed to the machine: [`Driver::fed`]). What it does for the machine's
//! actions is in `act.rs`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use strait_client::Ack;

use super::held_bytes::check_held;
use super::{BatchPin, Driver, Held, InFlight, LogStartWait, Parts, Ran};
use crate::datapath::commit::GateHandle;
use crate::datapath::fetcher::{Feed, RecordSet};
use crate::datapath::inbox::Inbound;
use crate::datapath::pipeline::{Fetched, Pipeline, Recorded};
use crate::error::MirrorError;

/// The barrier changed (never resolves without one).
async fn gate_changed(gate: &mut Option<Box<GateHandle>>) {
    match gate {
        Some(g) => g.changed().await,
        None => std::future::pending().await,
    }
}

/// What woke the driver.
enum Wake {
    Gate,
    Stop,
    Acked(strait_client::Result<Ack>),
    LogStart(Result<i64, MirrorError>),
    Feed(Feed),
}

impl<'a> Driver<'a> {
    /// Drives the machine until it finishes or would wait for the inbox alone ([`run`]);
    /// `parts.acks` holds the acknowledgements not yet resolved (the caller settles them
    /// after an error). A stop asked for while parked is seen here, at once.
    ///
    /// [`run`]: super::run
    pub(super) async fn run(&self, parts: &mut Parts) -> Result<Ran, MirrorError> {
        let Parts {
            machine,
            acks,
            held,
        } = parts;
        let mut log_start: Option<LogStartWait<'a>> = None;
        let mut recorded: Vec<Recorded> = Vec::new();
        // A run starts only while the machine is not stopping (it parks only wanting data).
        let mut stopping = false;
        let mut produced = false;
        if self.feed.stop_asked() {
            machine.stop();
            stopping = true;
        }
        loop {
            produced |= self
                .act(machine, acks, &mut log_start, held, &mut recorded)
                .await?;
            check_gate(held, acks)?;
            if machine.is_finished() {
                return Ok(Ran::Finished);
            }
            self.release_tail_if_short(machine);
            let wants_feed = machine.wants_feed();
            if wants_feed
                && acks.is_empty()
                && log_start.is_none()
                && held.gate.is_none()
                && self.feed.is_empty()
            {
                // The select below would wait for the inbox alone ([`run`]: parked).
                return Ok(Ran::Idle { produced });
            }
            let wake = tokio::select! {
                biased;
                () = gate_changed(&mut held.gate) => Wake::Gate,
                a = head(acks) => Wake::Acked(a),
                s = pending_or(&mut log_start) => Wake::LogStart(s),
                // One receiver for the feed and the stop: the inbox wakes one waiter.
                inbound = self.feed.recv(wants_feed, !stopping) => match inbound {
                    Inbound::Stop => Wake::Stop,
                    Inbound::Item(item) => Wake::Feed(item),
                },
            };
            match wake {
                Wake::Gate => self.gate_opened(acks, held).await?,
                Wake::Stop => {
                    stopping = true;
                    machine.stop();
                }
                Wake::Acked(acked) => self.acked(machine, acks, acked)?,
                Wake::LogStart(start) => {
                    log_start = None;
                    let r = machine.log_start(start?);
                    self.counted(r)?;
                }
                Wake::Feed(item) => self.fed(machine, item)?,
            }
        }
    }

    /// The barrier changed: the batches waiting for it are handed on, unless it still
    /// holds them.
    async fn gate_opened(
        &self,
        acks: &mut VecDeque<InFlight>,
        held: &mut Held,
    ) -> Result<(), MirrorError> {
        if !held.must_wait_gate() {
            while let Some((batch, fetched)) = held.waiting.pop_front() {
                if let Some(batch) = self.hand_on(batch, fetched, acks, held)? {
                    Box::pin(self.hand_on_waiting(batch, fetched, acks, held)).await?;
                }
            }
        }
        Ok(())
    }

    /// The oldest acknowledgement resolved: recorded by the machine, or the produce
    /// failed.
    fn acked(
        &self,
        machine: &mut Pipeline<BatchPin>,
        acks: &mut VecDeque<InFlight>,
        acked: strait_client::Result<Ack>,
    ) -> Result<(), MirrorError> {
        let sent = acks.pop_front();
        match acked {
            Ok(a) => {
                let gap = sent.map_or(0, |s| {
                    self.feed.metrics.engine_acked(s.fetched, s.handed);
                    s.gap
                });
                machine.acked_after(a.base_offset, gap)
            }
            Err(e) => {
                self.feed.metrics.produce_error();
                Err(machine.produce_failed(e))
            }
        }
    }

    /// Hands one feed item to the machine.
    fn fed(&self, machine: &mut Pipeline<BatchPin>, item: Feed) -> Result<(), MirrorError> {
        match item {
            Feed::Data(set) => {
                let RecordSet {
                    generation,
                    position,
                    records,
                    aborted,
                    end,
                    stable,
                    reservation,
                    received,
                } = *set;
                let planned = machine.fetched(Fetched {
                    generation,
                    position,
                    records,
                    aborted: &aborted,
                    stable,
                    pin: BatchPin {
                        reservation,
                        fetched: received,
                    },
                });
                let Some(planned) = self.counted(planned)? else {
                    return Ok(());
                };
                self.progress.end.store(end, Ordering::Relaxed);
                let m = &self.feed.metrics;
                m.dropped_n("control", u64::from(planned.dropped_control));
                m.dropped_n("aborted", u64::from(planned.dropped_aborted));
                for r in &planned.slow {
                    m.slow_path(r.as_str());
                }
                check_held(self.spec, self.feed, machine.planner_mut())
            }
            Feed::OutOfRange {
                generation,
                position,
            } => {
                machine.out_of_range(generation, position);
                Ok(())
            }
            Feed::SourceRecreated => {
                machine.source_recreated();
                Ok(())
            }
            Feed::Failed(e) => Err(*e),
        }
    }
}

/// The barrier after the machine acted: a failed transaction fails the partition; a
/// sealed one is told the partition is quiet once nothing is in flight.
fn check_gate(held: &mut Held, acks: &VecDeque<InFlight>) -> Result<(), MirrorError> {
    if let Some(g) = &mut held.gate {
        if g.failed() {
            return Err(MirrorError::other(
                "the flow's transaction failed; the flow restarts from its last commit",
            ));
        }
        if g.sealed() && acks.is_empty() {
            // Everything handed on is recorded: the map describes exactly this
            // partition's batches in the sealed transaction.
            g.quiet();
        }
    }
    Ok(())
}

/// The oldest acknowledgement awaited (never resolves when none is).
async fn head(acks: &mut VecDeque<InFlight>) -> strait_client::Result<Ack> {
    match acks.front_mut() {
        Some(sent) => (&mut sent.ack).await,
        None => std::future::pending().await,
    }
}

/// The log start asked for (never resolves when none is).
async fn pending_or(wait: &mut Option<LogStartWait<'_>>) -> Result<i64, MirrorError> {
    match wait {
        Some(w) => w.await,
        None => std::future::pending().await,
    }
}
