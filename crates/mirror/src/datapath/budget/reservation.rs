//! A [`Reservation`]'s bytes: taken apart into shares, merged, attributed to a
//! partition, and returned on drop, where a share of a response may stay counted as the
//! response's residue ([`ResponseHold`], rules 7–9 of [`super::quota`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::OwnedSemaphorePermit;

use super::quota;
use super::{Account, Reservation, ResponseHold, Share, lock};

impl ResponseHold {
    /// Keeps `permit` (`bytes` of a returned share) as residue if rules 7–8 allow;
    /// otherwise hands it back to be freed.
    fn keep(
        &self,
        permit: OwnedSemaphorePermit,
        bytes: u64,
        others_alive: bool,
    ) -> Option<OwnedSemaphorePermit> {
        let mut permit = Some(permit);
        let kept = self
            .residue
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                quota::keep_as_residue(r, bytes, self.limit, others_alive).then_some(r + bytes)
            });
        if kept.is_err() {
            return permit;
        }
        let mut mine = lock(&self.permit);
        match (mine.as_mut(), permit.take()) {
            (Some(m), Some(p)) => m.merge(p),
            (None, p) => *mine = p,
            (Some(_), None) => {}
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        None
    }
}

impl Drop for ResponseHold {
    /// Rule 9: the response's last share is gone, and so is its buffer.
    fn drop(&mut self) {
        let bytes = self.bytes.load(Ordering::Relaxed);
        self.residue.fetch_sub(bytes, Ordering::AcqRel);
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        // The permit goes back to the semaphore as the field drops.
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
        self.disown(u64::from(n));
        Reservation {
            permit,
            bytes: n,
            used: Arc::clone(&self.used),
            owner: None,
            share_of_response: self.response.is_some(),
            response: self.response.clone(),
        }
    }

    /// [`Reservation::take`], attributing the bytes to `share`'s partition (they count
    /// against its quota until the reservation is dropped).
    pub fn take_for(&mut self, bytes: usize, share: &Share) -> Reservation {
        let mut r = self.take(bytes);
        r.set_owner(&share.account);
        r
    }

    /// Adds `other`'s bytes to this one (both from the same budget); they count for this
    /// one's partition.
    pub fn absorb(&mut self, mut other: Reservation) {
        if let Some(p) = other.permit.take() {
            match self.permit.as_mut() {
                Some(mine) => mine.merge(p),
                None => self.permit = Some(p),
            }
        }
        other.disown(u64::from(other.bytes));
        other.owner = None;
        if let Some(o) = &self.owner {
            o.outstanding
                .fetch_add(u64::from(other.bytes), Ordering::Relaxed);
        }
        self.bytes += other.bytes;
        other.bytes = 0;
    }

    pub(super) fn set_owner(&mut self, account: &Arc<Account>) {
        self.disown(u64::from(self.bytes));
        account
            .outstanding
            .fetch_add(u64::from(self.bytes), Ordering::Relaxed);
        self.owner = Some(Arc::clone(account));
    }

    /// Takes `bytes` off the owner's count (they leave this reservation).
    fn disown(&self, bytes: u64) {
        if let Some(o) = &self.owner {
            o.outstanding.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.disown(u64::from(self.bytes));
        if self.share_of_response
            && let (Some(hold), Some(permit)) = (self.response.as_ref(), self.permit.take())
        {
            // Another share of the response (or the fetch itself) still holds it.
            let others_alive = Arc::strong_count(hold) > 1;
            match hold.keep(permit, u64::from(self.bytes), others_alive) {
                // Counted as residue now: `used` goes down when the response goes.
                None => return,
                Some(permit) => self.permit = Some(permit),
            }
        }
        self.used
            .fetch_sub(u64::from(self.bytes), Ordering::Relaxed);
    }
}
