//! Queues kept once per partition that usually hold one or two items (10,000 partitions
//! keep 10,000 of each): a `VecDeque`'s first push allocates room for four items, so a
//! queue of 112-byte batches that never holds more than one keeps 336 bytes it never uses.
//! [`push_lean`] grows a queue one item at a time up to four, then as a `VecDeque` does:
//! a queue that does fill pays three more allocations in its lifetime, never one per
//! item.

use std::collections::VecDeque;

/// Below this capacity a full queue grows by one item.
const LEAN_UP_TO: usize = 4;

/// Appends `item` to `queue`, growing a full queue of fewer than four items by one.
pub fn push_lean<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() == queue.capacity() && queue.capacity() < LEAN_UP_TO {
        queue.reserve_exact(1);
    }
    queue.push_back(item);
}

#[cfg(test)]
mod tests;
