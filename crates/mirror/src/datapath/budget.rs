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
//! A fetch's reservation made with [`Budget::reserve_response`] ties the shares taken from
//! it to their response: a share returned while another share of the same response is
//! still alive stays counted as the response's residue (its buffer is still resident),
//! up to a process-wide limit, and the response's last share frees it (rules 7–9 of
//! [`super::quota`]).
//!
//! The budget also owns the pool that merged batches' buffers come from
//! ([`Budget::merge_buffers`]): up to the whole budget in freed buffers is kept for the
//! next merges instead of going back to the allocator. Merged batches in flight are
//! bounded by the budget, so the pool holds at most what they used at their peak; with a
//! quarter, about one merged batch in five of an uncompressed copy was a fresh
//! allocation, which the static (musl) binary's allocator maps from the kernel and zeroes
//! page by page.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

use strait_records::BufferPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::quota::{self, HeldVerdict, QuotaInput};
use crate::pruned::Pruned;

/// Bytes of one Fetch response kept counted after their shares were returned, because
/// another share of the response (and so its buffer) is still alive; freed when the last
/// share of the response goes.
#[derive(Debug)]
struct ResponseHold {
    /// The residue's permits (`None`: nothing kept yet).
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// Bytes kept.
    bytes: AtomicU64,
    /// The budget's `used`.
    used: Arc<AtomicU64>,
    /// The process-wide residue.
    residue: Arc<AtomicU64>,
    /// [`quota::residue_limit`] of the budget.
    limit: u64,
}

impl ResponseHold {
    /// Keeps `permit` (`bytes` of a returned share) as residue if rules 7–8 allow;
    /// otherwise hands it back to be freed.
    fn keep(
        &self,
        permit: OwnedSemaphorePermit,
        bytes: u64,
        others_alive: bool,
    ) -> Option<OwnedSemaphorePermit> {
        let mut permit = Some(permit);
        let kept = self
            .residue
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                quota::keep_as_residue(r, bytes, self.limit, others_alive).then_some(r + bytes)
            });
        if kept.is_err() {
            return permit;
        }
        let mut mine = lock(&self.permit);
        match (mine.as_mut(), permit.take()) {
            (Some(m), Some(p)) => m.merge(p),
            (None, p) => *mine = p,
            (Some(_), None) => {}
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        None
    }
}

impl Drop for ResponseHold {
    /// Rule 9: the response's last share is gone, and so is its buffer.
    fn drop(&mut self) {
        let bytes = self.bytes.load(Ordering::Relaxed);
        self.residue.fetch_sub(bytes, Ordering::AcqRel);
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        // The permit goes back to the semaphore as the field drops.
    }
}

/// A byte budget shared by every fetcher of the process.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    total: u32,
    used: Arc<AtomicU64>,
    merge_buffers: BufferPool,
    accounts: Arc<Accounts>,
    /// Residue of every response together (rule 8's sum).
    residue: Arc<AtomicU64>,
}

/// Every partition's [`Share`], and the sums the rules need.
#[derive(Debug, Default)]
struct Accounts {
    /// Registered shares (dead ones are pruned as the list grows).
    all: Mutex<Pruned<Weak<Account>>>,
    /// Live shares.
    active: AtomicUsize,
    /// Held bytes of every share together.
    held: AtomicU64,
}

/// One partition's account (shared by its [`Share`] and its reservations).
#[derive(Debug)]
struct Account {
    /// The partition, for messages.
    label: Label,
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

/// Which partition an account is: `flow F: topic/partition` in messages. Made of the
/// flow's and the topic's shared names, so that an account (one per partition) holds no
/// string of its own.
#[derive(Debug, Clone)]
pub struct Label {
    /// Flow name.
    pub flow: Arc<str>,
    /// Source topic.
    pub topic: Arc<str>,
    /// Partition.
    pub partition: i32,
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flow {}: {}/{}", self.flow, self.topic, self.partition)
    }
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
    /// The response whose buffer the bytes are a slice of ([`Budget::reserve_response`]).
    response: Option<Arc<ResponseHold>>,
    /// A share taken from a response's reservation: when returned, it may stay counted as
    /// the response's residue (the fetch's own remainder never does).
    share_of_response: bool,
}

impl Budget {
    /// A budget of `bytes` (capped at 4 GiB − 1, the semaphore's unit).
    pub fn new(bytes: u64) -> Self {
        let total = u32::try_from(bytes).unwrap_or(u32::MAX).max(1);
        Budget {
            sem: Arc::new(Semaphore::new(total as usize)),
            total,
            used: Arc::new(AtomicU64::new(0)),
            merge_buffers: BufferPool::new(total as usize),
            accounts: Arc::default(),
            residue: Arc::default(),
        }
    }

    /// Opens an account for the partition `label`.
    pub fn register(&self, label: Label) -> Share {
        let account = Arc::new(Account {
            label,
            outstanding: AtomicU64::new(0),
            held: AtomicU64::new(0),
            oldest: Mutex::new(None),
            evicted: Mutex::new(None),
            nudge: std::sync::atomic::AtomicBool::new(false),
        });
        let mut all = lock(&self.accounts.all);
        all.push(Arc::downgrade(&account), |w| w.strong_count() > 0);
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
                o.map(|(pid, first, since)| (since, a.label.to_string(), pid, first))
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

    /// [`Budget::reserve_share`] for one Fetch response: the shares taken from it
    /// ([`Reservation::take_for`]) belong to the response, and one returned while another
    /// is still alive stays counted as residue (rules 7–9 of [`super::quota`]).
    pub async fn reserve_response(&self, min: usize, max: usize) -> Reservation {
        let mut r = self.reserve_share(min, max).await;
        r.response = Some(Arc::new(ResponseHold {
            permit: Mutex::new(None),
            bytes: AtomicU64::new(0),
            used: Arc::clone(&self.used),
            residue: Arc::clone(&self.residue),
            limit: quota::residue_limit(self.total()),
        }));
        r
    }

    /// Bytes of returned shares still counted because their responses are (rule 8's sum).
    pub fn residue(&self) -> u64 {
        self.residue.load(Ordering::Relaxed)
    }

    fn reservation(&self, permit: Option<OwnedSemaphorePermit>, bytes: u32) -> Reservation {
        self.used.fetch_add(u64::from(bytes), Ordering::Relaxed);
        Reservation {
            permit,
            bytes,
            used: Arc::clone(&self.used),
            owner: None,
            response: None,
            share_of_response: false,
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

    /// Grows `r` to `want` bytes, capped at the budget (a record set larger than the
    /// whole budget takes all of it): at once when the rest is free; otherwise `r` is let
    /// go of first and the whole is waited for. A waiter never holds part of the budget
    /// while it waits for more: one that did could wait for bytes it holds itself (a
    /// response larger than the budget minus its own share), or two could wait for each
    /// other (two fetchers each holding part of what both need). The bytes count for
    /// `r`'s partition and stay a share of `r`'s response.
    pub async fn grow(&self, mut r: Reservation, want: usize) -> Reservation {
        let want = want.min(self.total as usize);
        let extra = want.saturating_sub(r.bytes());
        if extra == 0 {
            return r;
        }
        if let Some(more) = self.try_reserve(extra) {
            r.absorb(more);
            return r;
        }
        let (owner, response) = (r.owner.clone(), r.response.take());
        let share_of_response = std::mem::replace(&mut r.share_of_response, false);
        // Back to the semaphore, not kept as the response's residue: the buffer is
        // counted again, whole, once the wait is over.
        drop(r);
        let mut whole = self.reserve(want).await;
        if let Some(o) = &owner {
            whole.set_owner(o);
        }
        whole.response = response;
        whole.share_of_response = share_of_response;
        whole
    }

    /// Reserves what is free now, up to `max` bytes, without waiting (nothing when the
    /// budget is exhausted). A read that must never wait on the budget sizes its request
    /// by it: a restart's recovery, whose chunk of the target's tail is what lets go of
    /// the record sets it holds (`datapath::partition`).
    pub fn reserve_free(&self, max: usize) -> Reservation {
        let want = max.min(self.sem.available_permits());
        // `None` only when another reservation took the bytes meanwhile.
        self.try_reserve(want)
            .unwrap_or_else(|| self.reservation(None, 0))
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
            share_of_response: self.response.is_some(),
            response: self.response.clone(),
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
        self.disown(u64::from(self.bytes));
        if self.share_of_response
            && let (Some(hold), Some(permit)) = (self.response.as_ref(), self.permit.take())
        {
            // Another share of the response (or the fetch itself) still holds it.
            let others_alive = Arc::strong_count(hold) > 1;
            match hold.keep(permit, u64::from(self.bytes), others_alive) {
                // Counted as residue now: `used` goes down when the response goes.
                None => return,
                Some(permit) => self.permit = Some(permit),
            }
        }
        self.used
            .fetch_sub(u64::from(self.bytes), Ordering::Relaxed);
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
mod tests;
