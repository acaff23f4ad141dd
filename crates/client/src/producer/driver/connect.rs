//! The driver's tasks of their own, so that it never waits on one broker: the metadata
//! refresh, and the setting up of each broker's produce connection.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::time::Instant;

use super::{Conn, Driver, Link};
use crate::backoff::Backoff;
use crate::broker::{Broker, Purpose};

impl Driver {
    /// Refreshes the metadata in a task of its own (one at a time), which wakes the driver
    /// when done; failures are spaced by a backoff.
    pub(super) fn start_refresh(&self) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = self.inner.clone();
        let (flag, backoff) = (self.refreshing.clone(), self.refresh_backoff.clone());
        tokio::spawn(async move {
            match inner.client.refresh_if_stale().await {
                Ok(()) => *backoff.lock() = Backoff::new(inner.client.config().backoff),
                Err(e) => {
                    tracing::debug!(error = %e, "producer metadata refresh failed; will retry");
                    let delay = backoff.lock().next_delay();
                    tokio::time::sleep(delay).await;
                }
            }
            flag.store(false, Ordering::Release);
            inner.wake.notify_one();
        });
    }

    /// `broker`'s open produce connection; otherwise starts setting one up in a task of its
    /// own (which wakes the driver when done) and reports it pending, or the error of the
    /// last attempt (once).
    pub(super) fn connection(&self, broker: &Arc<Broker>) -> Conn {
        let mut links = self.links.lock();
        match links.remove(&broker.id) {
            Some(Link::Ready(c)) if !c.is_closed() => {
                links.insert(broker.id, Link::Ready(c.clone()));
                return Conn::Ready(c);
            }
            Some(Link::Connecting) => {
                links.insert(broker.id, Link::Connecting);
                return Conn::Pending;
            }
            Some(Link::Failed(e, at)) if at.elapsed() < self.inner.client.config().backoff.max => {
                return Conn::Failed(e);
            }
            Some(Link::Ready(_) | Link::Failed(..)) | None => {}
        }
        links.insert(broker.id, Link::Connecting);
        drop(links);
        let (inner, links, broker) = (self.inner.clone(), self.links.clone(), broker.clone());
        tokio::spawn(async move {
            let r = broker.connection(Purpose::Produce).await;
            {
                let mut links = links.lock();
                let link = match r {
                    Ok(c) => Link::Ready(c),
                    Err(e) => Link::Failed(e.broker(broker.id), Instant::now()),
                };
                links.insert(broker.id, link);
            }
            inner.wake.notify_one();
        });
        Conn::Pending
    }
}
