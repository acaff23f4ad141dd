//! The bytes partitions hold for open transactions: the process-wide limit on them
//! (rules 5–6 of [`super::quota`]) and the oldest transaction waited on, as the
//! [`Budget`] sees them, and each partition's [`Share`] of them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::quota::{self, HeldVerdict};
use super::{Account, Budget, OldestHeld, Share, lock};

impl Budget {
    /// The most bytes every partition together may hold for open transactions: half the
    /// budget (the other half keeps the rest replicating).
    pub fn held_limit(&self) -> u64 {
        self.total() / 2
    }

    /// Bytes held for open transactions by every partition together.
    pub fn held(&self) -> u64 {
        self.accounts.held.load(Ordering::Relaxed)
    }

    /// Rules 5–6 of [`super::quota`] for `share`, after it updated its held bytes: `Err`
    /// with the reason when it must fail. When another partition holds the most, that one
    /// is marked ([`Share::take_eviction`]; its fetcher nudges its pipeline, which spills
    /// or fails) and `Ok` is returned.
    pub fn check_held(&self, share: &Share) -> Result<(), String> {
        let limit = self.held_limit();
        let total = self.held();
        let mine = share.held();
        if quota::held_verdict(total, limit, mine, 0) == HeldVerdict::Within {
            return Ok(());
        }
        let largest = lock(&self.accounts.all)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| !Arc::ptr_eq(a, &share.account))
            .max_by_key(|a| a.held.load(Ordering::Relaxed));
        let other = largest
            .as_ref()
            .map_or(0, |a| a.held.load(Ordering::Relaxed));
        match quota::held_verdict(total, limit, mine, other) {
            HeldVerdict::Within => Ok(()),
            HeldVerdict::FailThis => Err(held_message(&share.account, total, limit)),
            HeldVerdict::FailLargest => {
                if let Some(a) = largest {
                    let why = held_message(&a, total, limit);
                    *lock(&a.evicted) = Some(why);
                    a.nudge.store(true, Ordering::Relaxed);
                }
                Ok(())
            }
        }
    }

    /// The transaction waited on longest by any partition, if one is open.
    pub fn oldest_held(&self) -> Option<OldestHeld> {
        lock(&self.accounts.all)
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|a| {
                let o = *lock(&a.oldest);
                o.map(|(pid, first, since)| (since, a.label.to_string(), pid, first))
            })
            .min_by_key(|(since, ..)| *since)
            .map(|(_, partition, producer_id, first_offset)| OldestHeld {
                partition,
                producer_id,
                first_offset,
            })
    }
}

impl Share {
    /// Bytes of the reservations attributed to the partition.
    pub fn outstanding(&self) -> u64 {
        self.account.outstanding.load(Ordering::Relaxed)
    }

    /// Of those, bytes in flight to the target (not held for a transaction).
    pub fn in_flight(&self) -> u64 {
        self.outstanding().saturating_sub(self.held())
    }

    /// Bytes the partition holds for open transactions.
    pub fn held(&self) -> u64 {
        self.account.held.load(Ordering::Relaxed)
    }

    /// Sets the partition's held bytes and the oldest transaction it waits on.
    pub fn set_held(&self, bytes: u64, oldest: Option<(i64, i64)>) {
        let before = self.account.held.swap(bytes, Ordering::Relaxed);
        if bytes >= before {
            self.accounts
                .held
                .fetch_add(bytes - before, Ordering::Relaxed);
        } else {
            self.accounts
                .held
                .fetch_sub(before - bytes, Ordering::Relaxed);
        }
        let mut o = lock(&self.account.oldest);
        *o = match (oldest, *o) {
            (None, _) => None,
            // The same transaction: it has been waited on since it was first seen.
            (Some((pid, first)), Some((p, f, since))) if (p, f) == (pid, first) => {
                Some((pid, first, since))
            }
            (Some((pid, first)), _) => Some((pid, first, Instant::now())),
        };
    }

    /// Why the partition must spill or fail, when another partition found it holding the
    /// most over the held limit (once: it is cleared).
    pub fn take_eviction(&self) -> Option<String> {
        lock(&self.account.evicted).take()
    }

    /// Whether the partition's pipeline must be made to look at an eviction (once).
    pub fn take_nudge(&self) -> bool {
        self.account.nudge.swap(false, Ordering::Relaxed)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.set_held(0, None);
        self.accounts.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The error of a partition that holds the most when the held limit is exceeded.
fn held_message(a: &Account, total: u64, limit: u64) -> String {
    let held = a.held.load(Ordering::Relaxed);
    let txn = lock(&a.oldest).map_or_else(
        || "open transactions".to_owned(),
        |(pid, first, since)| {
            format!(
                "the transaction of producer id {pid} open since source offset {first} \
                 (waited on for {}s)",
                since.elapsed().as_secs()
            )
        },
    );
    format!(
        "{} holds {held} bytes back waiting for {txn} to commit or abort, the most of any \
         partition, and every partition together holds {total} bytes for open \
         transactions, more than the {limit} allowed (half of engine.in_flight_memory): \
         raise engine.in_flight_memory or end the transaction",
        a.label
    )
}
