//! Releasing transactional data only once its outcome is known.
//!
//! A `read_committed` Fetch from Apache Kafka stops at the last stable offset and lists the
//! aborted transactions it overlaps, so every transactional batch it returns is already
//! decided. Not every Kafka-compatible broker does that: Tansu 0.6 answers with LSO = HW and
//! an empty aborted list, so open and aborted transactions come back looking committed
//! (docs/compatibility.md). A replicator that trusted the list would copy aborted data.
//!
//! [`TxnResolver`] does not trust it alone. Fed a partition's batches in offset order,
//! together with the [`AbortedFilter`](crate::AbortedFilter) verdict from the Fetch
//! response, it holds back each transactional batch until that producer's COMMIT or ABORT
//! marker arrives (or the aborted list already condemned it), and releases batches strictly
//! in offset order: a non-transactional batch behind an undecided one waits too, because
//! the target must receive records in source order for the offset map to stay monotonic.
//! Against Kafka the extra wait is at most until the marker is fetched, which is at or below
//! the LSO; against Tansu it is what makes aborted data stay on the source.
//!
//! Held batches pin the fetch buffers they slice, so callers bound [`TxnResolver::held_bytes`].
//!
//! [`TxnResolver::in_commit_order`] releases instead each batch as soon as its own outcome is
//! known, past undecided batches of other producers: the order in which data becomes
//! committed. It is for readers of a log whose writers own disjoint keys and fence their
//! own zombies (the state topic, where each exactly-once slot commits the maps of its own
//! partitions): one writer's open transaction must not hide another's newer committed
//! records. It is wrong wherever offset order matters (the data path).

use std::collections::{BTreeMap, VecDeque};

use crate::aborted::TxnVerdict;
use crate::decode::ControlRecordType;
use crate::error::Result;
use crate::split::{Batch, Limits};

/// Why a batch was released without being forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// A control batch (transaction marker or other control record).
    Control,
    /// Data of an aborted transaction.
    Aborted,
}

/// A batch released by the resolver, in offset order.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// Committed or non-transactional data: forward it.
    Forward(Batch),
    /// Not to be forwarded; its offsets are still consumed on the source.
    Skip(Batch, SkipReason),
}

impl Resolved {
    /// The batch, whatever the outcome.
    pub fn batch(&self) -> &Batch {
        match self {
            Resolved::Forward(b) | Resolved::Skip(b, _) => b,
        }
    }
}

#[derive(Debug)]
enum Slot {
    Decided(Resolved),
    /// Transactional data of this producer id whose marker has not been seen yet.
    Open(Batch, i64),
}

/// Holds one partition's transactional batches until their outcome is known and releases
/// all batches in offset order.
#[derive(Debug)]
pub struct TxnResolver {
    queue: VecDeque<Slot>,
    /// Open batches per producer id (only ids with at least one). A `BTreeMap`: 24 bytes
    /// where a hash map (with its hasher's keys) takes 48, in every partition's pipeline,
    /// for the one or two producers a partition usually has open.
    open: BTreeMap<i64, usize>,
    held_bytes: usize,
    limits: Limits,
    /// Release decided batches past undecided ones ([`TxnResolver::in_commit_order`]).
    commit_order: bool,
}

impl TxnResolver {
    /// An empty resolver; `limits` bound the decoding of control records.
    pub fn new(limits: Limits) -> TxnResolver {
        TxnResolver {
            queue: VecDeque::new(),
            open: BTreeMap::new(),
            held_bytes: 0,
            limits,
            commit_order: false,
        }
    }

    /// An empty resolver that releases every batch once its own outcome is known, in the
    /// order outcomes become known: committed and non-transactional data is not held
    /// behind another producer's open transaction (the module doc says where that is
    /// right). A producer's own batches still leave in their offset order.
    pub fn in_commit_order(limits: Limits) -> TxnResolver {
        TxnResolver {
            commit_order: true,
            ..TxnResolver::new(limits)
        }
    }

    /// Feeds the partition's next batch with the verdict the Fetch response's
    /// aborted-transactions list gave it. Fails only if a control batch cannot be decoded:
    /// guessing its type could release aborted data or drop committed data.
    pub fn push(&mut self, batch: Batch, verdict: TxnVerdict) -> Result<()> {
        let header = *batch.header();
        let slot = match verdict {
            TxnVerdict::Aborted => Slot::Decided(Resolved::Skip(batch, SkipReason::Aborted)),
            TxnVerdict::Control => {
                match batch.control_type(&self.limits)? {
                    Some(ControlRecordType::Commit) => self.settle(header.producer_id, true),
                    Some(ControlRecordType::Abort) => self.settle(header.producer_id, false),
                    Some(ControlRecordType::Other(_)) | None => {}
                }
                Slot::Decided(Resolved::Skip(batch, SkipReason::Control))
            }
            TxnVerdict::Keep if header.attributes.is_transactional() && header.producer_id >= 0 => {
                *self.open.entry(header.producer_id).or_default() += 1;
                Slot::Open(batch, header.producer_id)
            }
            TxnVerdict::Keep => Slot::Decided(Resolved::Forward(batch)),
        };
        self.held_bytes += slot_batch(&slot).size();
        crate::lean::push_lean(&mut self.queue, slot);
        Ok(())
    }

    /// Feeds the partition's next batch, transactional data the caller knows is committed
    /// without its marker (Apache Kafka: below the fetch's last stable offset and not in
    /// its aborted list). It is released in order without waiting, and so are the held
    /// batches of its producer id: they belong to the same transaction (an earlier one of
    /// that producer ended with a marker before this batch, which settled it).
    pub fn push_committed(&mut self, batch: Batch) {
        self.settle(batch.header().producer_id, true);
        let slot = Slot::Decided(Resolved::Forward(batch));
        self.held_bytes += slot_batch(&slot).size();
        crate::lean::push_lean(&mut self.queue, slot);
    }

    /// The next batch whose outcome is known, if every batch before it is released (in
    /// commit order: the first batch whose outcome is known).
    pub fn pop(&mut self) -> Option<Resolved> {
        let at = if self.commit_order {
            self.queue
                .iter()
                .position(|s| matches!(s, Slot::Decided(_)))?
        } else {
            0
        };
        if !matches!(self.queue.get(at), Some(Slot::Decided(_))) {
            return None;
        }
        let Some(Slot::Decided(resolved)) = self.queue.remove(at) else {
            return None;
        };
        self.held_bytes -= resolved.batch().size();
        Some(resolved)
    }

    /// Gives back the capacity its queues do not use now (a partition that parks; the
    /// queues grow again as they are used).
    pub fn shrink_to_fit(&mut self) {
        self.queue.shrink_to_fit();
    }

    /// Bytes of batches held (decided or not) and not yet popped.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Batches held and not yet popped.
    pub fn held_batches(&self) -> usize {
        self.queue.len()
    }

    /// Whether some held batch still waits for its transaction's marker.
    pub fn is_waiting(&self) -> bool {
        !self.open.is_empty()
    }

    /// Forgets everything held (after the caller repositions the partition).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.open.clear();
        self.held_bytes = 0;
    }

    /// Decides every open batch of `producer_id`, which a marker just closed.
    fn settle(&mut self, producer_id: i64, committed: bool) {
        if self.open.remove(&producer_id).is_none() {
            return;
        }
        for slot in self.queue.iter_mut() {
            if let Slot::Open(batch, pid) = slot
                && *pid == producer_id
            {
                // Cloning a Batch is a refcount bump on its buffer.
                let batch = batch.clone();
                *slot = Slot::Decided(if committed {
                    Resolved::Forward(batch)
                } else {
                    Resolved::Skip(batch, SkipReason::Aborted)
                });
            }
        }
    }
}

fn slot_batch(slot: &Slot) -> &Batch {
    match slot {
        Slot::Decided(r) => r.batch(),
        Slot::Open(b, _) => b,
    }
}
