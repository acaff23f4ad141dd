//! A partition's inbox: what its fetcher (and its flow) hand the partition's pipeline, in
//! order, and the flow's stop signal, in one small structure per partition.
//!
//! It replaces a bounded `tokio::sync::mpsc` channel and a `watch` channel per partition:
//! a channel allocates its queue in blocks of 32 slots and its shared state cache-padded,
//! about 1.25 KiB per partition before any item, and the stop watch another 330 bytes —
//! 16 MB at 10,000 partitions. Here the queue is a `VecDeque` that grows to the depth it
//! is used at (4 slots of a boxed item) and the stop is a flag beside it.
//!
//! Rules (tests named after them):
//! 1. *Items come out in the order they went in.*
//! 2. *Data is refused past the depth; control items never are* (a failure, an
//!    out-of-range answer or a re-creation must not be lost to a full queue; there is at
//!    most one of each outstanding, as each pauses the feed).
//! 3. *A receiver that does not want items still wakes for the stop*, and one that does
//!    not watch the stop still wakes for items; one that wants neither never wakes.
//! 4. *No wake-up is lost*: an item or a stop that arrives while the receiver is not
//!    waiting is seen by its next receive.
//! 5. *A parked receiver wakes for any item or the stop* ([`Inbox::ready`], which takes
//!    nothing): the partition's driver parks there while it has nothing else to wait for.
//! 6. *A wait that is dropped leaves nothing behind* (its waker would keep the ended
//!    task's memory alive for as long as the inbox lives).
//!
//! There is one receiver (the partition's task), so the wake-up is one waker slot beside
//! the queue, set and taken under the queue's lock, rather than a `tokio::sync::Notify`:
//! a `Notified` future is ~100 bytes, and every parked partition holds one (rule 4 holds
//! the same way: the state is read and the waker stored under one lock, so a push after
//! the read finds the waker).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// What a receive returned.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound<T> {
    /// The next item.
    Item(T),
    /// The flow asked the partition to stop.
    Stop,
}

/// One partition's inbox (see the module docs); one producer side may be shared.
#[derive(Debug)]
pub struct Inbox<T> {
    state: Mutex<State<T>>,
    depth: usize,
}

#[derive(Debug)]
struct State<T> {
    queue: VecDeque<T>,
    /// Data items in `queue` (the depth counts only them).
    data: usize,
    stop: bool,
    /// The receiver waiting, if it is.
    waker: Option<Waker>,
    /// Its waits pending (a task may poll two at once; the slot is emptied when the last
    /// ends).
    waits: u32,
}

impl<T> Inbox<T> {
    /// An empty inbox holding at most `depth` data items (at least one).
    pub fn new(depth: usize) -> Self {
        Inbox {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                data: 0,
                stop: false,
                waker: None,
                waits: 0,
            }),
            depth: depth.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the receiver if it waits, once `s` (the state it changed) is unlocked.
    fn wake(mut s: MutexGuard<'_, State<T>>) {
        let waker = s.waker.take();
        drop(s);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether a data item would be accepted now.
    pub fn has_room(&self) -> bool {
        self.lock().data < self.depth
    }

    /// Queues a data item, or gives it back when `depth` are queued (rule 2).
    pub fn offer(&self, item: T) -> Result<(), T> {
        let mut s = self.lock();
        if s.data >= self.depth {
            return Err(item);
        }
        s.data += 1;
        s.queue.push_back(item);
        Self::wake(s);
        Ok(())
    }

    /// Queues a control item, whatever the depth (rule 2).
    pub fn push_control(&self, item: T) {
        let mut s = self.lock();
        s.queue.push_back(item);
        Self::wake(s);
    }

    /// Asks the receiver to stop.
    pub fn stop(&self) {
        let mut s = self.lock();
        s.stop = true;
        Self::wake(s);
    }

    /// Whether the stop was asked for.
    pub fn stopped(&self) -> bool {
        self.lock().stop
    }

    /// Whether nothing is queued (items of either kind).
    pub fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    /// Gives back the queue's capacity when nothing is queued (a parked receiver).
    pub fn shrink_if_empty(&self) {
        let mut s = self.lock();
        if s.queue.is_empty() {
            s.queue.shrink_to_fit();
        }
    }

    /// Waits until an item is queued or the stop was asked for, and takes nothing (rule 5).
    pub async fn ready(&self) {
        self.wait_for(|s| (s.stop || !s.queue.is_empty()).then_some(()))
            .await
    }

    /// Waits until `take` finds what it waits for in the state (rule 4: the state is read
    /// and the waker stored under one lock, so a push after the read wakes it).
    fn wait_for<R, F: FnMut(&mut State<T>) -> Option<R>>(&self, take: F) -> WaitFor<'_, T, F> {
        WaitFor {
            inbox: self,
            take,
            waiting: false,
        }
    }

    /// The next item when `items`, the stop when `stop` and it was asked for (the stop
    /// first); waits until one is there (rules 3–4). `is_data` tells which items count
    /// against the depth.
    pub async fn recv(&self, items: bool, stop: bool, is_data: impl Fn(&T) -> bool) -> Inbound<T> {
        if !items && !stop {
            return std::future::pending().await;
        }
        self.wait_for(|s| {
            if stop && s.stop {
                return Some(Inbound::Stop);
            }
            let item = if items { s.queue.pop_front() } else { None }?;
            if is_data(&item) {
                s.data -= 1;
            }
            Some(Inbound::Item(item))
        })
        .await
    }
}

/// [`Inbox::wait_for`]'s future.
struct WaitFor<'a, T, F> {
    inbox: &'a Inbox<T>,
    take: F,
    /// Its waker is in the slot (rule 6: taken out when it is dropped).
    waiting: bool,
}

impl<T, R, F: FnMut(&mut State<T>) -> Option<R> + Unpin> Future for WaitFor<'_, T, F> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        let mut s = this.inbox.lock();
        if let Some(r) = (this.take)(&mut s) {
            if std::mem::take(&mut this.waiting) {
                ended(&mut s);
            }
            return Poll::Ready(r);
        }
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        if !std::mem::replace(&mut this.waiting, true) {
            s.waits += 1;
        }
        Poll::Pending
    }
}

/// A pending wait ended: the last one takes the waker out (rule 6).
fn ended<T>(s: &mut State<T>) {
    s.waits = s.waits.saturating_sub(1);
    if s.waits == 0 {
        s.waker = None;
    }
}

impl<T, F> Drop for WaitFor<'_, T, F> {
    fn drop(&mut self) {
        if self.waiting {
            ended(&mut self.inbox.lock());
        }
    }
}

#[cfg(test)]
mod tests;
