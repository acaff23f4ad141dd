//! Reusing the large buffers that merged batches are written into.
//!
//! A merged batch is a fresh buffer of up to the target's `max.message.bytes` (1 MiB by
//! default), freed once the target acknowledges it. Allocating and freeing that much per
//! batch makes the allocator hand the pages back to the kernel and fault them in again
//! (glibc trims its arenas; musl maps every large allocation on its own), which cost an
//! uncompressed drain most of its page faults and about a third of its CPU. A
//! [`BufferPool`] keeps a few freed buffers and hands them out again, so their pages stay
//! mapped.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

/// New buffers are sized in steps of this, so that a freed buffer fits the next request
/// for about the same size.
const GRANULE: usize = 64 << 10;

/// A bounded store of freed buffers, shared by clones.
///
/// The default pool keeps nothing: every [`BufferPool::take`] allocates.
#[derive(Debug, Clone, Default)]
pub struct BufferPool {
    shared: Option<Arc<Shared>>,
}

#[derive(Debug)]
struct Shared {
    idle: Mutex<Idle>,
    max_idle_bytes: usize,
}

#[derive(Debug, Default)]
struct Idle {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

impl Shared {
    fn idle(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn put(&self, mut buf: Vec<u8>) {
        let mut idle = self.idle();
        if idle.bytes + buf.capacity() <= self.max_idle_bytes {
            buf.clear();
            idle.bytes += buf.capacity();
            idle.buffers.push(buf);
        }
    }
}

impl BufferPool {
    /// A pool that keeps freed buffers while their capacities add up to at most
    /// `max_idle_bytes` (none when 0).
    pub fn new(max_idle_bytes: usize) -> BufferPool {
        BufferPool {
            shared: (max_idle_bytes > 0).then(|| {
                Arc::new(Shared {
                    idle: Mutex::new(Idle::default()),
                    max_idle_bytes,
                })
            }),
        }
    }

    /// Bytes of capacity held by the freed buffers kept now.
    pub fn idle_bytes(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.idle().bytes)
    }

    /// An empty buffer with room for at least `capacity` bytes: the smallest kept one that
    /// is large enough and not more than twice as large, else a new one.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let rounded = capacity
            .checked_next_multiple_of(GRANULE)
            .unwrap_or(capacity);
        if let Some(shared) = &self.shared {
            let mut idle = shared.idle();
            let fits =
                |b: &Vec<u8>| b.capacity() >= capacity && b.capacity() <= rounded.saturating_mul(2);
            let best = (idle.buffers.iter().enumerate())
                .filter(|(_, b)| fits(b))
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            if let Some(i) = best {
                let buf = idle.buffers.swap_remove(i);
                idle.bytes -= buf.capacity();
                return buf;
            }
        }
        Vec::with_capacity(rounded)
    }

    /// Gives a buffer back for reuse (it is freed when the pool is full).
    pub fn put(&self, buf: Vec<u8>) {
        if let Some(shared) = &self.shared {
            shared.put(buf);
        }
    }

    /// `buf` as [`Bytes`] that give the buffer back to the pool once the last reference
    /// (clones and slices included) is dropped.
    pub fn freeze(&self, buf: Vec<u8>) -> Bytes {
        match &self.shared {
            Some(shared) => Bytes::from_owner(Recycled {
                buf,
                pool: Arc::clone(shared),
            }),
            None => Bytes::from(buf),
        }
    }
}

/// A pooled buffer lent out as [`Bytes`].
struct Recycled {
    buf: Vec<u8>,
    pool: Arc<Shared>,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests;
