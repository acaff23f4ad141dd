//! A list of registrations whose dead entries are dropped as it grows, in amortized
//! constant time per registration.
//!
//! The budget's accounts and the metrics' watched partitions hold one entry per
//! partition ever started (a `Weak` to its state). Dropping the dead ones on every
//! registration was a pass over the whole list each time: starting 10,000 partitions
//! made ~50 million liveness checks. [`Pruned::push`] drops them only once the list has
//! doubled since the last pass, so the passes cost at most twice the registrations, and
//! the list never holds more than twice what survived the last pass (or [`MIN_PRUNE`]).

/// Below this length nothing is pruned (a pass over a short list is not worth it).
pub(crate) const MIN_PRUNE: usize = 16;

/// Entries added one by one; dead ones dropped as the list doubles.
#[derive(Debug)]
pub(crate) struct Pruned<T> {
    items: Vec<T>,
    /// Length after the last pass.
    kept: usize,
}

impl<T> Default for Pruned<T> {
    fn default() -> Self {
        Pruned {
            items: Vec::new(),
            kept: 0,
        }
    }
}

impl<T> Pruned<T> {
    /// Adds `item`; first, if the list has doubled since the last pass, keeps only the
    /// entries `live` says are alive.
    pub(crate) fn push(&mut self, item: T, live: impl FnMut(&T) -> bool) {
        if self.items.len() >= (2 * self.kept).max(MIN_PRUNE) {
            self.items.retain(live);
            self.kept = self.items.len();
        }
        self.items.push(item);
    }

    /// Every entry, dead ones included (the caller skips those).
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// Entries held, dead ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cost_at_most_twice_the_registrations() {
        let mut list = Pruned::default();
        let mut checks = 0usize;
        for i in 0..10_000u32 {
            list.push(i, |_| {
                checks += 1;
                true
            });
        }
        assert_eq!(list.len(), 10_000);
        assert!(checks <= 2 * 10_000, "{checks} liveness checks");
    }

    #[test]
    fn a_partition_restarting_over_and_over_keeps_the_list_short() {
        // Every registration replaces the one before (a partition restarting).
        let mut list = Pruned::default();
        let mut newest = 0u32;
        for i in 0..5_000u32 {
            newest = i;
            list.push(i, |e| *e + 1 >= newest);
            let live = list.iter().filter(|e| **e + 1 >= newest).count();
            assert!(
                list.len() <= 2 * live.max(1) + MIN_PRUNE,
                "{} held",
                list.len()
            );
        }
        assert!(list.iter().any(|e| *e == newest), "the newest is kept");
    }

    #[test]
    fn live_entries_are_kept_in_order() {
        let mut list = Pruned::default();
        for i in 0..100u32 {
            list.push(i, |e| e % 3 == 0);
        }
        let kept: Vec<u32> = list.iter().copied().filter(|e| e % 3 == 0).collect();
        assert_eq!(kept, (0..100).filter(|e| e % 3 == 0).collect::<Vec<_>>());
    }
}
