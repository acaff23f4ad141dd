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
mod tests {
    use std::time::Duration;

    use super::*;

    /// `true` items are data, `false` control.
    fn data(item: &(u32, bool)) -> bool {
        item.1
    }

    async fn soon(
        inbox: &Inbox<(u32, bool)>,
        items: bool,
        stop: bool,
    ) -> Option<Inbound<(u32, bool)>> {
        tokio::time::timeout(Duration::from_millis(50), inbox.recv(items, stop, data))
            .await
            .ok()
    }

    #[tokio::test]
    async fn rule_1_items_come_out_in_the_order_they_went_in() {
        let inbox = Inbox::new(4);
        inbox.offer((1, true)).unwrap();
        inbox.push_control((2, false));
        inbox.offer((3, true)).unwrap();
        for n in [1, 2, 3] {
            assert!(
                matches!(soon(&inbox, true, true).await, Some(Inbound::Item((m, _))) if m == n)
            );
        }
        assert_eq!(soon(&inbox, true, true).await, None);
    }

    #[tokio::test]
    async fn rule_2_data_is_refused_past_the_depth_control_items_never_are() {
        let inbox = Inbox::new(2);
        assert!(inbox.offer((1, true)).is_ok());
        inbox.push_control((2, false));
        assert!(
            inbox.has_room(),
            "control items do not count against the depth"
        );
        assert!(inbox.offer((3, true)).is_ok());
        assert!(!inbox.has_room());
        assert_eq!(inbox.offer((4, true)), Err((4, true)));
        inbox.push_control((5, false));
        let mut got = Vec::new();
        while let Some(Inbound::Item((n, _))) = soon(&inbox, true, false).await {
            got.push(n);
        }
        assert_eq!(got, [1, 2, 3, 5]);
        assert!(inbox.has_room(), "taking data gives its room back");
    }

    #[tokio::test]
    async fn rule_3_the_stop_wakes_a_receiver_that_wants_no_items() {
        let inbox = Inbox::new(4);
        inbox.offer((1, true)).unwrap();
        assert_eq!(
            soon(&inbox, false, true).await,
            None,
            "items are left queued"
        );
        inbox.stop();
        assert_eq!(soon(&inbox, false, true).await, Some(Inbound::Stop));
        assert!(inbox.stopped());
        // Not watching the stop: the queued item still comes, and then nothing.
        assert_eq!(
            soon(&inbox, true, false).await,
            Some(Inbound::Item((1, true)))
        );
        assert_eq!(soon(&inbox, true, false).await, None);
        assert_eq!(
            soon(&inbox, false, false).await,
            None,
            "wanting neither never wakes"
        );
    }

    #[tokio::test]
    async fn rule_4_no_wake_up_is_lost() {
        let inbox = std::sync::Arc::new(Inbox::new(4));
        // Pushed while nobody waits, with a receive dropped in between.
        assert_eq!(soon(&inbox, true, true).await, None);
        inbox.offer((1, true)).unwrap();
        assert_eq!(
            soon(&inbox, true, true).await,
            Some(Inbound::Item((1, true)))
        );
        // Pushed while a receiver waits on another task.
        let waiting = {
            let inbox = std::sync::Arc::clone(&inbox);
            tokio::spawn(async move { inbox.recv(true, true, data).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        inbox.push_control((2, false));
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert!(matches!(got, Ok(Ok(Inbound::Item((2, false))))));
        // A stop while not waiting.
        inbox.stop();
        assert_eq!(soon(&inbox, false, true).await, Some(Inbound::Stop));
    }

    async fn ready_soon(inbox: &Inbox<(u32, bool)>) -> bool {
        tokio::time::timeout(Duration::from_millis(50), inbox.ready())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn rule_6_a_wait_that_is_dropped_leaves_nothing_behind() {
        let inbox = Inbox::<(u32, bool)>::new(4);
        assert!(!ready_soon(&inbox).await);
        assert_eq!(soon(&inbox, true, true).await, None);
        assert!(
            inbox.lock().waker.is_none(),
            "the timed-out waits took their waker out"
        );
        // A wait that ended by finding its item leaves none either.
        inbox.offer((1, true)).unwrap();
        assert!(ready_soon(&inbox).await);
        assert!(inbox.lock().waker.is_none());
        // Two waits of one task: dropping one keeps the other's wake-up.
        let _ = soon(&inbox, true, true).await;
        let (mut a, mut b) = (Box::pin(inbox.ready()), Box::pin(inbox.ready()));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(a.as_mut().poll(&mut cx).is_pending() && b.as_mut().poll(&mut cx).is_pending());
        drop(a);
        assert!(inbox.lock().waker.is_some(), "the other wait still has it");
        drop(b);
        assert!(inbox.lock().waker.is_none());
    }

    #[tokio::test]
    async fn rule_5_a_parked_receiver_wakes_for_any_item_or_the_stop() {
        for kind in ["data", "control", "stop"] {
            let inbox = std::sync::Arc::new(Inbox::new(4));
            assert!(inbox.is_empty());
            assert!(!ready_soon(&inbox).await, "nothing there: it stays parked");
            let parked = {
                let inbox = std::sync::Arc::clone(&inbox);
                tokio::spawn(async move { inbox.ready().await })
            };
            tokio::time::sleep(Duration::from_millis(10)).await;
            match kind {
                "data" => inbox.offer((1, true)).unwrap(),
                "control" => inbox.push_control((1, false)),
                _ => inbox.stop(),
            }
            let woke = tokio::time::timeout(Duration::from_secs(5), parked).await;
            assert!(matches!(woke, Ok(Ok(()))), "{kind} wakes it");
            // It took nothing: the item (or the stop) is there for the next receive.
            assert!(ready_soon(&inbox).await, "{kind} is still there");
            let next = soon(&inbox, true, true).await;
            match kind {
                "stop" => assert_eq!(next, Some(Inbound::Stop)),
                _ => assert!(matches!(next, Some(Inbound::Item((1, _))))),
            }
        }
    }
}
