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

use super::quota::{self, QuotaInput};
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

mod held;
mod reservation;
#[cfg(test)]
mod tests;
