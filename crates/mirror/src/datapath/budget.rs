//! The in-flight memory budget (`engine.in_flight_memory`): fetched bytes referenced by
//! batches not yet acknowledged. Before a fetch, a fetcher waits for room and takes what
//! is free as an up-front [`Reservation`], and asks the broker for no more than that, so
//! a response is never read into memory the budget does not have. Each partition's record
//! set then takes its share out of it ([`Reservation::take`]); the share is held by the
//! batches sliced from that record set and returned when the last of them is acknowledged
//! (or dropped). What the response did not use goes back at once.
//!
//! The budget also owns the pool that merged batches' buffers come from
//! ([`Budget::merge_buffers`]): up to a quarter of the budget in freed buffers is kept
//! for the next merges instead of going back to the allocator.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strait_records::BufferPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A byte budget shared by every fetcher of the process.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    total: u32,
    used: Arc<AtomicU64>,
    merge_buffers: BufferPool,
}

/// Bytes held against the [`Budget`]; returned on drop.
#[derive(Debug)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    bytes: u32,
    used: Arc<AtomicU64>,
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
        }
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
        }
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
        Reservation {
            permit,
            bytes: n,
            used: Arc::clone(&self.used),
        }
    }

    /// Adds `other`'s bytes to this one (both from the same budget).
    pub fn absorb(&mut self, mut other: Reservation) {
        if let Some(p) = other.permit.take() {
            match self.permit.as_mut() {
                Some(mine) => mine.merge(p),
                None => self.permit = Some(p),
            }
        }
        self.bytes += other.bytes;
        other.bytes = 0;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.used
            .fetch_sub(u64::from(self.bytes), Ordering::Relaxed);
    }
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
