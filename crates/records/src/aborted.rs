//! Dropping the batches of aborted transactions, as a `read_committed` consumer does.
//!
//! A Fetch response lists `(producer_id, first_offset)` for each aborted transaction that
//! overlaps the returned data. Walking the partition's batches in offset order, a producer
//! id becomes "aborting" once a batch reaches that transaction's first offset, and stops
//! being so at its ABORT control marker. Transactional batches of an aborting producer are
//! dropped; control batches are dropped always.

use std::collections::HashSet;

use crate::decode::ControlRecordType;
use crate::error::Result;
use crate::split::{Batch, Limits};

/// One entry of a Fetch response's aborted-transactions list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTransaction {
    /// Producer id of the aborted transaction.
    pub producer_id: i64,
    /// First offset of the aborted transaction.
    pub first_offset: i64,
}

/// What a `read_committed` consumer does with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnVerdict {
    /// Committed or non-transactional data: keep.
    Keep,
    /// Data of an aborted transaction: drop.
    Aborted,
    /// A control batch (commit or abort marker): drop.
    Control,
}

impl TxnVerdict {
    /// Whether the batch is dropped.
    pub fn is_dropped(self) -> bool {
        self != TxnVerdict::Keep
    }
}

/// Stateful filter over one partition's batches, fed in offset order.
#[derive(Debug, Clone)]
pub struct AbortedFilter {
    /// Not yet reached, sorted by descending first offset so the next one is last.
    pending: Vec<AbortedTransaction>,
    aborting: HashSet<i64>,
    limits: Limits,
}

impl AbortedFilter {
    /// A filter for one Fetch response's aborted-transactions list (in any order).
    pub fn new(aborted: &[AbortedTransaction], limits: Limits) -> AbortedFilter {
        let mut pending = aborted.to_vec();
        pending.sort_by_key(|t| std::cmp::Reverse(t.first_offset));
        AbortedFilter {
            pending,
            aborting: HashSet::new(),
            limits,
        }
    }

    /// The verdict for the next batch. Fails only if a control batch cannot be decoded:
    /// guessing could drop committed data.
    pub fn check(&mut self, batch: &Batch) -> Result<TxnVerdict> {
        let h = batch.header();
        let control = h.attributes.is_control();
        // Batches without a producer id cannot be transactional.
        if h.producer_id >= 0 {
            let last = h.last_offset();
            while let Some(t) = self.pending.last().filter(|t| t.first_offset <= last) {
                self.aborting.insert(t.producer_id);
                self.pending.pop();
            }
            if control {
                if batch.control_type(&self.limits)? == Some(ControlRecordType::Abort) {
                    self.aborting.remove(&h.producer_id);
                }
            } else if h.attributes.is_transactional() && self.aborting.contains(&h.producer_id) {
                return Ok(TxnVerdict::Aborted);
            }
        }
        Ok(if control {
            TxnVerdict::Control
        } else {
            TxnVerdict::Keep
        })
    }
}

/// Verdicts for a partition's batches (in offset order) given a Fetch response's
/// aborted-transactions list.
pub fn filter_aborted(
    batches: &[Batch],
    aborted: &[AbortedTransaction],
    limits: &Limits,
) -> Result<Vec<TxnVerdict>> {
    let mut filter = AbortedFilter::new(aborted, *limits);
    batches.iter().map(|b| filter.check(b)).collect()
}

#[cfg(test)]
mod tests;
