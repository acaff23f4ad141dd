//! The in-flight memory budget (`engine.in_flight_memory`): fetched bytes referenced by
//! batches not yet acknowledged. Before a fetch, a fetcher waits for room and takes what
//! is free as an up-front [`Reservation`], and asks the broker for no more than that, so
//! a response is never read into memory the budget does not have. Each partition's record
//! set then takes its share out of it ([`Reservation::take`]); the share is held by the
//! batches sliced from that record set and returned when the last of them is acknowledged
//! (or dropped). What the response did not use goes back at once.
//!
//! Each partition has a [`Share`] (its account, registered by the fetcher on assignment):
//! the bytes of its reservations, the part of them held for open transactions, and the
//! oldest transaction it waits on. Fetchers leave a partition over its quota out of the
//! next fetch, and held bytes count against one process-wide limit (the rules are in
//! [`super::quota`]).
//!
//! The budget also owns the pool that merged batches' buffers come from
//! ([`Budget::merge_buffers`]): up to a quarter of the budget in freed buffers is kept
//! for the next merges instead of going back to the allocator.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

use strait_records::BufferPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::quota::{self, HeldVerdict, QuotaInput};

/// A byte budget shared by every fetcher of the process.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    total: u32,
    used: Arc<AtomicU64>,
    merge_buffers: BufferPool,
    accounts: Arc<Accounts>,
}

/// Every partition's [`Share`], and the sums the rules need.
#[derive(Debug, Default)]
struct Accounts {
    /// Registered shares (dead ones are pruned on registration).
    all: Mutex<Vec<Weak<Account>>>,
    /// Live shares.
    active: AtomicUsize,
    /// Held bytes of every share together.
    held: AtomicU64,
}

/// One partition's account (shared by its [`Share`] and its reservations).
#[derive(Debug)]
struct Account {
    /// `flow topic/partition`, for messages.
    label: String,
    /// Bytes of the reservations attributed to the partition.
    outstanding: AtomicU64,
    /// Of those, bytes held for open transactions (set by the pipeline).
    held: AtomicU64,
    /// The oldest transaction the partition waits on: (producer id, first offset, since).
    oldest: Mutex<Option<(i64, i64, Instant)>>,
    /// Set when another partition found this one holding the most over the held limit.
    evicted: Mutex<Option<String>>,
    /// Set with `evicted`, taken by the fetcher (which then makes the pipeline look).
    nudge: std::sync::atomic::AtomicBool,
}

/// A partition's account in the [`Budget`]: what its reservations and held batches use
/// (see [`super::quota`]). Dropping it takes its held bytes out of the process-wide sum.
#[derive(Debug)]
pub struct Share {
    account: Arc<Account>,
    accounts: Arc<Accounts>,
}

/// The oldest open transaction of the process, for `/health`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldestHeld {
    /// The partition (`flow topic/partition`).
    pub partition: String,
    /// The transaction's producer id.
    pub producer_id: i64,
    /// The source offset of its first held batch.
    pub first_offset: i64,
}

/// Bytes held against the [`Budget`]; returned on drop.
#[derive(Debug)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    bytes: u32,
    used: Arc<AtomicU64>,
    /// The partition the bytes are attributed to, if any.
    owner: Option<Arc<Account>>,
}

impl Budget {
    /// A budget of `bytes` (capped at 4 GiB − 1, the semaphore's unit).
    pub fn new(bytes: u64) -> Self {
        let total = u32::try_from(bytes).unwrap_or(u32::MAX).max(1);
        Budget {
            sem: Arc::new(Semaphore::new(total as usize)),
            total,
            used: Arc::new(AtomicU64::new(0)),
            merge_buffers: BufferPool::new(total as usize / 4),
            accounts: Arc::default(),
        }
    }

    /// Opens an account for the partition `label` (`flow topic/partition`).
    pub fn register(&self, label: &str) -> Share {
        let account = Arc::new(Account {
            label: label.to_owned(),
            outstanding: AtomicU64::new(0),
            held: AtomicU64::new(0),
            oldest: Mutex::new(None),
            evicted: Mutex::new(None),
            nudge: std::sync::atomic::AtomicBool::new(false),
        });
        let mut all = lock(&self.accounts.all);
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&account));
        self.accounts.active.fetch_add(1, Ordering::Relaxed);
        Share {
            account,
            accounts: Arc::clone(&self.accounts),
        }
    }

    /// Whether `share`'s partition may be part of the next fetch, which needs at least
    /// `min_room` bytes (rules 1–4 of [`super::quota`]).
    pub fn may_fetch(&self, share: &Share, min_room: usize) -> bool {
        quota::may_fetch(QuotaInput {
            total: self.total(),
            used: self.used(),
            in_flight: share.in_flight(),
            active: self.accounts.active.load(Ordering::Relaxed),
            min_room: u64::try_from(min_room).unwrap_or(u64::MAX),
        })
    }

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
                o.map(|(pid, first, since)| (since, a.label.clone(), pid, first))
            })
            .min_by_key(|(since, ..)| *since)
            .map(|(_, partition, producer_id, first_offset)| OldestHeld {
                partition,
                producer_id,
                first_offset,
            })
    }

    /// Where coalescing takes merged batches' buffers from and returns them to.
    pub fn merge_buffers(&self) -> &BufferPool {
        &self.merge_buffers
    }

    /// Reserves `bytes`, waiting while the budget is exhausted. A record set larger than
    /// the whole budget takes all of it (so it cannot wait forever).
    pub async fn reserve(&self, bytes: usize) -> Reservation {
        let want = u32::try_from(bytes).unwrap_or(u32::MAX).min(self.total);
        let permit = if want == 0 {
            None
        } else {
            // The semaphore is never closed.
            self.sem.clone().acquire_many_owned(want).await.ok()
        };
        self.reservation(permit, want)
    }

    /// Waits until `min` bytes (capped at the budget) are free and reserves them, plus
    /// half of what is still free then, up to `max` in all. Halving leaves room for other
    /// fetchers whose requests may be parked at a broker with their share.
    pub async fn reserve_share(&self, min: usize, max: usize) -> Reservation {
        let mut held = self.reserve(min.min(max)).await;
        let more = max
            .saturating_sub(held.bytes())
            .min(self.sem.available_permits() / 2);
        if let Some(extra) = self.try_reserve(more) {
            held.absorb(extra);
        }
        held
    }

    fn reservation(&self, permit: Option<OwnedSemaphorePermit>, bytes: u32) -> Reservation {
        self.used.fetch_add(u64::from(bytes), Ordering::Relaxed);
        Reservation {
            permit,
            bytes,
            used: Arc::clone(&self.used),
            owner: None,
        }
    }

    /// [`Budget::try_reserve`], attributing the bytes to the partition `like` belongs to
    /// (a merged batch's own reservation replacing its inputs' keeps counting against the
    /// partition's quota).
    pub fn try_reserve_like(&self, bytes: usize, like: &Reservation) -> Option<Reservation> {
        let mut r = self.try_reserve(bytes)?;
        if let Some(owner) = &like.owner {
            owner
                .outstanding
                .fetch_add(u64::from(r.bytes), Ordering::Relaxed);
            r.owner = Some(Arc::clone(owner));
        }
        Some(r)
    }

    /// Reserves `bytes` now if the budget has them, without waiting (`None` otherwise).
    /// Coalescing uses it for a merged batch: it is a new allocation, so it holds its own
    /// reservation and lets go of its inputs' (whose fetch buffers it no longer needs).
    pub fn try_reserve(&self, bytes: usize) -> Option<Reservation> {
        let want = u32::try_from(bytes).ok()?;
        if want > self.total {
            return None;
        }
        let permit = if want == 0 {
            None
        } else {
            Some(self.sem.clone().try_acquire_many_owned(want).ok()?)
        };
        Some(self.reservation(permit, want))
    }

    /// Bytes currently reserved.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The budget.
    pub fn total(&self) -> u64 {
        u64::from(self.total)
    }
}

impl Reservation {
    /// The bytes it holds.
    pub fn bytes(&self) -> usize {
        self.bytes as usize
    }

    /// Moves `bytes` (at most what it holds) into a reservation of their own.
    pub fn take(&mut self, bytes: usize) -> Reservation {
        let n = u32::try_from(bytes).unwrap_or(u32::MAX).min(self.bytes);
        let permit = if n == 0 {
            None
        } else {
            self.permit.as_mut().and_then(|p| p.split(n as usize))
        };
        self.bytes -= n;
        self.disown(u64::from(n));
        Reservation {
            permit,
            bytes: n,
            used: Arc::clone(&self.used),
            owner: None,
        }
    }

    /// [`Reservation::take`], attributing the bytes to `share`'s partition (they count
    /// against its quota until the reservation is dropped).
    pub fn take_for(&mut self, bytes: usize, share: &Share) -> Reservation {
        let mut r = self.take(bytes);
        r.set_owner(&share.account);
        r
    }

    /// Adds `other`'s bytes to this one (both from the same budget); they count for this
    /// one's partition.
    pub fn absorb(&mut self, mut other: Reservation) {
        if let Some(p) = other.permit.take() {
            match self.permit.as_mut() {
                Some(mine) => mine.merge(p),
                None => self.permit = Some(p),
            }
        }
        other.disown(u64::from(other.bytes));
        other.owner = None;
        if let Some(o) = &self.owner {
            o.outstanding
                .fetch_add(u64::from(other.bytes), Ordering::Relaxed);
        }
        self.bytes += other.bytes;
        other.bytes = 0;
    }

    fn set_owner(&mut self, account: &Arc<Account>) {
        self.disown(u64::from(self.bytes));
        account
            .outstanding
            .fetch_add(u64::from(self.bytes), Ordering::Relaxed);
        self.owner = Some(Arc::clone(account));
    }

    /// Takes `bytes` off the owner's count (they leave this reservation).
    fn disown(&self, bytes: u64) {
        if let Some(o) = &self.owner {
            o.outstanding.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.used
            .fetch_sub(u64::from(self.bytes), Ordering::Relaxed);
        self.disown(u64::from(self.bytes));
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Asserts that `waiter` still waits after 20 ms (`why`), runs `release`, and returns
    /// what the waiter then finishes with.
    async fn waits_until<T>(
        waiter: tokio::task::JoinHandle<T>,
        why: &str,
        release: impl FnOnce(),
    ) -> T {
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "{why}");
        release();
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .expect("task")
    }

    #[tokio::test]
    async fn reserve_waits_until_bytes_are_returned() {
        let b = Budget::new(100);
        let r1 = b.reserve(60).await;
        assert_eq!(b.used(), 60);
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.reserve(50).await });
        let r2 = waits_until(waiter, "only 40 bytes are left", || drop(r1)).await;
        assert_eq!(b.used(), 50);
        drop(r2);
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn try_reserve_never_waits() {
        let b = Budget::new(100);
        let r1 = b.try_reserve(60).expect("room");
        assert!(b.try_reserve(50).is_none(), "only 40 bytes are left");
        assert!(b.try_reserve(1_000).is_none(), "larger than the budget");
        let r2 = b.try_reserve(40).expect("room");
        assert_eq!(b.used(), 100);
        drop((r1, r2));
        assert_eq!(b.used(), 0);
    }

    #[tokio::test]
    async fn up_front_reservations_are_shared_out_and_the_rest_returned() {
        let b = Budget::new(100);
        let other = b.reserve(30).await;
        let mut upfront = b.reserve_share(10, 1_000).await;
        assert_eq!(upfront.bytes(), 40, "the minimum and half of the 60 left");
        assert_eq!(b.used(), 70);
        let a = upfront.take(25);
        let c = upfront.take(100);
        assert_eq!((a.bytes(), c.bytes(), upfront.bytes()), (25, 15, 0));
        drop(upfront);
        assert_eq!(b.used(), 70, "shares are still held");
        drop((a, other));
        assert_eq!(b.used(), 15);
        let mut merged = b.reserve(5).await;
        merged.absorb(c);
        assert_eq!(merged.bytes(), 20);
        let capped = b.reserve_share(1, 10).await;
        assert_eq!(capped.bytes(), 10, "never more than the maximum");
        drop(capped);
        drop(merged);
        assert_eq!(b.used(), 0);
        assert!(b.try_reserve(100).is_some(), "every permit came back");
    }

    #[tokio::test]
    async fn reserve_share_waits_for_its_minimum() {
        let b = Budget::new(100);
        let r1 = b.reserve(95).await;
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.reserve_share(20, 60).await });
        let r = waits_until(waiter, "only 5 bytes are free", || drop(r1)).await;
        assert_eq!(r.bytes(), 60, "20, then half of the 80 left, capped at 60");
    }

    /// One fetch round of a fetcher: reserves room, and hands each partition that may
    /// fetch `chunk` bytes of it (as `deliver` does); the rest goes back.
    async fn fetch_round(b: &Budget, shares: &[&Share], chunk: usize) -> Vec<Option<Reservation>> {
        let wanted: Vec<bool> = shares.iter().map(|s| b.may_fetch(s, chunk)).collect();
        let n = wanted.iter().filter(|w| **w).count();
        let mut upfront = b.reserve_share(chunk, chunk * n.max(1)).await;
        shares
            .iter()
            .zip(wanted)
            .map(|(s, w)| w.then(|| upfront.take_for(chunk, s)))
            .collect()
    }

    #[tokio::test]
    async fn a_partition_whose_target_never_acknowledges_holds_at_most_its_share() {
        // 4 partitions, a 64-byte budget, 4 bytes per fetch. Partition 0's target never
        // acknowledges (its reservations are kept forever); the others' are returned at
        // once. The healthy ones must keep getting room, and the stuck one stays within
        // its quota: at most half the budget (rule 3) plus one fetch.
        let b = Budget::new(64);
        let shares: Vec<Share> = (0..4).map(|i| b.register(&format!("p{i}"))).collect();
        let refs: Vec<&Share> = shares.iter().collect();
        let mut stuck = Vec::new();
        let mut healthy_fetches = [0u32; 3];
        for _ in 0..100 {
            let round = tokio::time::timeout(Duration::from_secs(1), fetch_round(&b, &refs, 4))
                .await
                .expect("a fetch round never waits for the stuck partition's bytes");
            for (i, r) in round.into_iter().enumerate() {
                match (i, r) {
                    (0, Some(r)) => stuck.push(r),
                    (i, Some(_)) => healthy_fetches[i - 1] += 1,
                    (_, None) => {}
                }
            }
        }
        assert_eq!(
            healthy_fetches, [100; 3],
            "the healthy partitions fetched every round"
        );
        assert!(
            shares[0].outstanding() <= 64 / 2 + 4,
            "{}",
            shares[0].outstanding()
        );
        assert!(shares[0].outstanding() >= 16, "it had its fair share");
        assert_eq!(b.used(), shares[0].outstanding());
        // Its target comes back: everything is returned and it is fetched again.
        stuck.clear();
        assert_eq!(shares[0].outstanding(), 0);
        assert!(b.may_fetch(&shares[0], 4));
    }

    #[test]
    fn held_bytes_are_not_in_flight_and_count_process_wide() {
        let b = Budget::new(100);
        let (a, c) = (b.register("a"), b.register("c"));
        let mut up = b.try_reserve(60).expect("room");
        let ra = up.take_for(40, &a);
        let rc = up.take_for(20, &c);
        a.set_held(30, Some((7, 100)));
        assert_eq!((a.outstanding(), a.in_flight(), a.held()), (40, 10, 30));
        assert!(b.check_held(&a).is_ok(), "30 of the 50 allowed");
        c.set_held(20, Some((8, 5)));
        assert!(b.check_held(&c).is_ok(), "50 of the 50 allowed");
        c.set_held(25, Some((8, 5)));
        // 55 > 50: c checks, but a holds the most: a is told through its feed.
        assert!(b.check_held(&c).is_ok());
        assert!(
            a.take_nudge() && !a.take_nudge(),
            "the fetcher is told once"
        );
        let why = a.take_eviction().expect("a holds the most");
        assert!(why.contains("a holds 30 bytes"), "{why}");
        assert!(
            why.contains("producer id 7 open since source offset 100"),
            "{why}"
        );
        assert!(why.contains("55 bytes"), "{why}");
        assert!(c.take_eviction().is_none() && !c.take_nudge());
        assert!(a.take_eviction().is_none(), "taken");
        let oldest = b.oldest_held().expect("open");
        assert_eq!(
            (oldest.producer_id, oldest.first_offset),
            (7, 100),
            "seen first"
        );
        // a fails and goes: its held bytes leave the sum.
        drop((ra, a));
        assert_eq!(b.held(), 25);
        assert!(b.check_held(&c).is_ok());
        c.set_held(60, None);
        let err = b.check_held(&c).expect_err("c alone over the limit");
        assert!(err.contains("c holds 60 bytes"), "{err}");
        drop(rc);
        assert_eq!(c.outstanding(), 0);
    }

    #[test]
    fn absorbed_and_merged_reservations_keep_counting_for_their_partition() {
        let b = Budget::new(100);
        let s = b.register("s");
        let mut up = b.try_reserve(10).expect("room");
        let mut mine = up.take_for(10, &s);
        mine.absorb(b.try_reserve(5).expect("room"));
        assert_eq!(s.outstanding(), 15);
        let merged = b.try_reserve_like(8, &mine).expect("room");
        assert_eq!(s.outstanding(), 23);
        drop(mine);
        assert_eq!(s.outstanding(), 8);
        drop(merged);
        assert_eq!((s.outstanding(), b.used()), (0, 0));
    }

    #[tokio::test]
    async fn oversized_and_empty_reservations_cannot_deadlock() {
        let b = Budget::new(100);
        let big = b.reserve(1_000).await;
        assert_eq!(b.used(), 100, "capped at the budget");
        drop(big);
        let empty = b.reserve(0).await;
        assert_eq!(b.used(), 0);
        drop(empty);
        assert_eq!(b.total(), 100);
    }
}
