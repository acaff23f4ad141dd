//! Counters of long work (offsets copied by a replay, records compared by a verify) that a
//! display reads while the work runs. Relaxed atomics: a display needs no ordering.

use std::sync::atomic::{AtomicU64, Ordering};

/// Units of work done, of a total that may grow as the work discovers more.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// Adds `n` to the total.
    pub fn add_total(&self, n: u64) {
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds `n` to what is done.
    pub fn add_done(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// (done, total).
    pub fn get(&self) -> (u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}
