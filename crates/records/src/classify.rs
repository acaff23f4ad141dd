//! What to do with a fetched batch.

use crate::split::Batch;

/// Why a batch cannot be forwarded as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReencodeReason {
    /// `recordsCount == 0`: compaction removed every record but kept the header.
    Empty,
    /// `recordsCount != lastOffsetDelta + 1`: compaction left gaps, which brokers refuse
    /// from clients.
    Gapped,
}

/// The plan for one batch (transactions aside: see [`crate::AbortedFilter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Patch the header and forward the payload as it is.
    Forward,
    /// A control batch (transaction marker): clients may not produce these; drop it.
    Control,
    /// Re-encode with dense offsets ([`Batch::reencode`]).
    NeedsReencode(ReencodeReason),
    /// Larger than the target accepts; re-encode into smaller batches.
    TooLarge {
        /// The batch's size in bytes.
        size: usize,
        /// The limit it exceeds.
        limit: usize,
    },
}

impl Batch {
    /// Classifies the batch for forwarding to a target that accepts batches of at most
    /// `max_batch_bytes`. When several apply, the first of control, re-encode and too
    /// large wins (a re-encode given the size limit also fixes the size).
    pub fn classify(&self, max_batch_bytes: usize) -> Class {
        let h = self.header();
        if h.attributes.is_control() {
            Class::Control
        } else if h.records_count <= 0 {
            Class::NeedsReencode(ReencodeReason::Empty)
        } else if i64::from(h.records_count) != i64::from(h.last_offset_delta) + 1 {
            Class::NeedsReencode(ReencodeReason::Gapped)
        } else if self.size() > max_batch_bytes {
            Class::TooLarge {
                size: self.size(),
                limit: max_batch_bytes,
            }
        } else {
            Class::Forward
        }
    }
}

#[cfg(test)]
mod tests;
