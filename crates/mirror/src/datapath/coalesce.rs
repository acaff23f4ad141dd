//! Coalescing: one partition's queue of planned work between the planner and the
//! producer. Pure (no I/O), so every decision is unit-tested.
//!
//! The partition sender pushes every planned step here in log order: batches to produce
//! ([`Queued::Produce`]) and everything else the recorder must see in order
//! ([`Queued::Other`]: skipped markers, records already on the target, resets). It then
//! takes items back with [`Coalescer::next`], giving the number of batches it has sent
//! that are not acknowledged yet (the producer's window for the partition):
//!
//! - an `Other` item at the head is always handed on: the recorder handles it after the
//!   acknowledgements of every batch sent before it, so the offset map's source position
//!   only moves past a marker once the batches before it are on the target;
//! - a batch at the head waits while the window is full;
//! - when the window has room for every queued batch, the head batch goes as it is (no
//!   copy: the zero-copy fast path);
//! - when more batches are queued than the window has free slots (they could not all be
//!   sent now: a full window on a high-latency link, or a large fetch response), the
//!   consecutive mergeable batches at the head, up to `max_bytes` together, are merged
//!   with [`strait_records::merge`] into one batch that takes a single slot.
//!
//! Mergeable ([`MergeOptions::admits`]): forwarded source batches (their header's base
//! offset is the source offset), not transactional, and uncompressed, or of a codec the
//! recompression policy ([`strait_records::CompressedPolicy::merges`]) allows and no larger
//! than the options' `max_compressed_input_bytes` (under the default
//! `engine.recompress = "small"`, compressed batches under 4 KiB: a larger one already
//! carries enough per request, and recompressing it would only spend CPU). Re-encoded
//! batches and other compressed batches go as they are. A merged batch
//! reports the source offset of each record as runs ([`Written::Runs`]), which the
//! recorder appends to the offset map run by run at consecutive target offsets, so the
//! map stays exact across the gaps between (and inside) the merged inputs.

use std::collections::VecDeque;

use strait_records::{Batch, Compression, MergeOptions, Merged, merge, push_lean};

/// The source offsets of the records of a produced batch, in record order: record `i`
/// lands at target offset `base + i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// `count` records at source offsets `source_first..source_first + count`.
    Dense {
        /// First source offset.
        source_first: u64,
        /// Number of records.
        count: u64,
    },
    /// Records at these source offsets (strictly increasing): a re-encoded batch.
    Listed(Vec<u64>),
    /// Runs `(source_first, count)` of consecutive source offsets, increasing: a merged
    /// batch.
    Runs(Vec<(u64, u64)>),
}

impl Written {
    /// The first source offset.
    pub fn first_source(&self) -> u64 {
        match self {
            Written::Dense { source_first, .. } => *source_first,
            Written::Listed(v) => v.first().copied().unwrap_or(0),
            Written::Runs(v) => v.first().map_or(0, |r| r.0),
        }
    }

    /// The number of records.
    pub fn records(&self) -> u64 {
        match self {
            Written::Dense { count, .. } => *count,
            Written::Listed(v) => v.len() as u64,
            Written::Runs(v) => v.iter().map(|r| r.1).sum(),
        }
    }

    /// Appends the batch to `map` at `target_base`: `append_dense` for each run (target
    /// offsets consecutive across runs), `append_listed` for a re-encoded batch.
    pub fn append_to(
        &self,
        map: &mut strait_offsets::OffsetMap,
        target_base: u64,
    ) -> Result<(), strait_offsets::MapError> {
        match self {
            Written::Dense {
                source_first,
                count,
            } => map.append_dense(*source_first, *count, target_base),
            Written::Listed(offsets) => map.append_listed(offsets, target_base),
            Written::Runs(runs) => {
                let mut target = target_base;
                for &(first, count) in runs {
                    map.append_dense(first, count, target)?;
                    target += count;
                }
                Ok(())
            }
        }
    }
}

/// What a batch keeps alive: one pin for a source batch (held inline, no allocation per
/// batch), its inputs' pins for a merged one.
pub type Pins<P> = smallvec::SmallVec<[P; 1]>;

/// A batch waiting to be produced.
#[derive(Debug)]
pub struct Outgoing<P> {
    /// The batch (a source batch to forward, a re-encoded or a merged batch).
    pub batch: Batch,
    /// Where its records came from.
    pub written: Written,
    /// What the batch keeps alive until acknowledged (fetch-buffer reservations).
    pub pins: Pins<P>,
    /// Whether it may be merged with its neighbours (see the module docs).
    pub mergeable: bool,
}

/// One queued item, in log order.
#[derive(Debug)]
pub enum Queued<P, R> {
    /// A batch to produce.
    Produce(Outgoing<P>),
    /// Anything else for the recorder, kept in order with the batches around it.
    Other(R),
}

/// What [`Coalescer::next`] hands on.
#[derive(Debug)]
pub enum Next<P, R> {
    /// Produce this batch.
    Send {
        /// The batch, its source offsets and pins.
        out: Outgoing<P>,
        /// `Some` when it was merged: the number of input batches and the bytes written.
        coalesced: Option<Coalesced>,
    },
    /// Pass this on to the recorder.
    Other(R),
}

/// What one merge did (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coalesced {
    /// Input batches replaced.
    pub inputs: usize,
    /// Bytes of the merged batch (a new allocation: every byte was copied).
    pub bytes: usize,
    /// Whether the inputs were compressed, so they were decompressed and the merged batch
    /// compressed again.
    pub recompressed: bool,
}

/// One partition's queue between planner and producer (see the module docs).
#[derive(Debug)]
pub struct Coalescer<P, R> {
    queue: VecDeque<Queued<P, R>>,
    queued_batches: usize,
    max_in_flight: usize,
    options: MergeOptions,
}

impl<P, R> Coalescer<P, R> {
    /// A queue for a partition whose producer keeps `max_in_flight` batches unresolved,
    /// merging into batches of at most `options.max_bytes`.
    pub fn new(max_in_flight: usize, options: MergeOptions) -> Self {
        Coalescer {
            queue: VecDeque::new(),
            queued_batches: 0,
            max_in_flight: max_in_flight.max(1),
            options,
        }
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Gives back the capacity the queue does not use now.
    pub fn shrink_to_fit(&mut self) {
        self.queue.shrink_to_fit();
    }

    /// Batches queued.
    pub fn queued_batches(&self) -> usize {
        self.queued_batches
    }

    /// Whether a forwarded source batch may be merged under these options.
    pub fn mergeable(&self, batch: &Batch) -> bool {
        let h = batch.header();
        !h.attributes.is_transactional()
            && !h.attributes.is_control()
            && h.records_count > 0
            && self.options.admits(batch.size(), h.compression())
    }

    /// Queues a batch to produce.
    pub fn push_batch(&mut self, out: Outgoing<P>) {
        self.queued_batches += 1;
        push_lean(&mut self.queue, Queued::Produce(out));
    }

    /// Queues an item for the recorder.
    pub fn push_other(&mut self, other: R) {
        push_lean(&mut self.queue, Queued::Other(other));
    }

    /// The next item to hand on when `in_flight` batches are sent and not yet
    /// acknowledged; `None` when the queue is empty or its head must wait for a slot.
    pub fn next(&mut self, in_flight: usize) -> Option<Next<P, R>> {
        match self.queue.front()? {
            Queued::Other(_) => {
                let Some(Queued::Other(r)) = self.queue.pop_front() else {
                    return None;
                };
                return Some(Next::Other(r));
            }
            Queued::Produce(_) if in_flight >= self.max_in_flight => return None,
            Queued::Produce(_) => {}
        }
        let free = self.max_in_flight - in_flight;
        let run = if self.queued_batches > free {
            self.mergeable_run()
        } else {
            1
        };
        if run < 2 {
            return self.pop_batch().map(|out| Next::Send {
                out,
                coalesced: None,
            });
        }
        let inputs: Vec<Outgoing<P>> = (0..run).filter_map(|_| self.pop_batch()).collect();
        let batches: Vec<Batch> = inputs.iter().map(|o| o.batch.clone()).collect();
        let merged = match merge(&batches, &self.options) {
            Ok(m) => outputs(m, inputs),
            Err(_) => Err(inputs),
        };
        match merged {
            Ok(mut outs) if !outs.is_empty() => {
                // Outputs after the first go back to the head, in order, as they are.
                let (out, coalesced) = outs.remove(0);
                for (o, _) in outs.into_iter().rev() {
                    self.queued_batches += 1;
                    self.queue.push_front(Queued::Produce(o));
                }
                Some(Next::Send { out, coalesced })
            }
            Ok(_) => None,
            Err(inputs) => {
                // Not merged (an input is corrupt or not what it claims): send them one
                // by one, so the error, if any, is reported on the batch it concerns.
                for mut out in inputs.into_iter().rev() {
                    out.mergeable = false;
                    self.queued_batches += 1;
                    self.queue.push_front(Queued::Produce(out));
                }
                self.pop_batch().map(|out| Next::Send {
                    out,
                    coalesced: None,
                })
            }
        }
    }

    /// The number of consecutive mergeable batches at the head fitting in `max_bytes`.
    fn mergeable_run(&self) -> usize {
        let mut bytes = 0usize;
        let mut n = 0;
        for q in &self.queue {
            let Queued::Produce(out) = q else { break };
            if !out.mergeable {
                break;
            }
            let size = out.batch.size();
            if bytes + size > self.options.max_bytes {
                break;
            }
            bytes += size;
            n += 1;
        }
        n
    }

    fn pop_batch(&mut self) -> Option<Outgoing<P>> {
        match self.queue.pop_front() {
            Some(Queued::Produce(out)) => {
                self.queued_batches -= 1;
                Some(out)
            }
            Some(other) => {
                self.queue.push_front(other);
                None
            }
            None => None,
        }
    }
}

/// Maps merge outputs back onto the inputs: each output gets its inputs' pins; an
/// unchanged input is handed on as it was. `Err(inputs)` when an output's source offsets
/// cannot be represented (negative offsets).
#[allow(clippy::type_complexity)]
fn outputs<P>(
    merged: Vec<Merged>,
    inputs: Vec<Outgoing<P>>,
) -> Result<Vec<(Outgoing<P>, Option<Coalesced>)>, Vec<Outgoing<P>>> {
    // Validate first so that a failure can hand the inputs back untouched.
    let Some(plans) = source_runs(&merged) else {
        return Err(inputs);
    };
    let mut slots: Vec<Option<Outgoing<P>>> = inputs.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(merged.len());
    for (m, runs) in merged.into_iter().zip(plans) {
        let range = m.inputs();
        let mut pins = Pins::new();
        let mut first = None;
        for slot in slots.get_mut(range.clone()).into_iter().flatten() {
            if let Some(o) = slot.take() {
                pins.extend(o.pins);
                first.get_or_insert((o.written, o.batch));
            }
        }
        match (m, runs) {
            (
                Merged::Rewritten {
                    batch,
                    inputs: range,
                    ..
                },
                Some(runs),
            ) => {
                let bytes = batch.size();
                let recompressed = batch.header().compression() != Compression::None;
                out.push((
                    Outgoing {
                        batch,
                        written: Written::Runs(runs),
                        pins,
                        mergeable: false,
                    },
                    Some(Coalesced {
                        inputs: range.len(),
                        bytes,
                        recompressed,
                    }),
                ));
            }
            (_, _) => {
                if let Some((written, batch)) = first {
                    out.push((
                        Outgoing {
                            batch,
                            written,
                            pins,
                            mergeable: false,
                        },
                        None,
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Source offsets as (first, count) runs.
type Runs = Vec<(u64, u64)>;

/// Each rewritten output's source offsets as runs (`None` for an unchanged
/// input); `None` when one cannot be represented (negative, or no run at all).
fn source_runs(merged: &[Merged]) -> Option<Vec<Option<Runs>>> {
    let mut plans = Vec::with_capacity(merged.len());
    for m in merged {
        match m {
            Merged::Rewritten { source_offsets, .. } => {
                let runs: Option<Runs> = source_offsets
                    .runs()
                    .iter()
                    .map(|r| Some((u64::try_from(r.first).ok()?, u64::from(r.count))))
                    .collect();
                match runs {
                    Some(runs) if !runs.is_empty() => plans.push(Some(runs)),
                    _ => return None,
                }
            }
            Merged::Unchanged { .. } => plans.push(None),
        }
    }
    Some(plans)
}

#[cfg(test)]
mod tests;
