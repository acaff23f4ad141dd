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
mod tests;
