//! The in-flight memory budget (`engine.in_flight_memory`): fetched bytes referenced by
//! batches not yet acknowledged. A fetcher takes a [`Reservation`] for each partition's
//! record set before handing it on and waits while the budget is exhausted; the
//! reservation is shared by the batches sliced from that record set and returned when the
//! last of them is acknowledged (or dropped).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A byte budget shared by every fetcher of the process.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    total: u32,
    used: Arc<AtomicU64>,
}

/// Bytes held against the [`Budget`]; returned on drop.
#[derive(Debug)]
pub struct Reservation {
    _permit: Option<OwnedSemaphorePermit>,
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
        }
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
        self.used.fetch_add(u64::from(want), Ordering::Relaxed);
        Reservation {
            _permit: permit,
            bytes: want,
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
        self.used.fetch_add(u64::from(want), Ordering::Relaxed);
        Some(Reservation {
            _permit: permit,
            bytes: want,
            used: Arc::clone(&self.used),
        })
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

    #[tokio::test]
    async fn reserve_waits_until_bytes_are_returned() {
        let b = Budget::new(100);
        let r1 = b.reserve(60).await;
        assert_eq!(b.used(), 60);
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.reserve(50).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "only 40 bytes are left");
        drop(r1);
        let r2 = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .expect("task");
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
