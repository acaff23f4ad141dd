//! Request merging for the per-broker sink: whether the partitions ready now leave in a
//! request at once or wait for the next response to leave with more. Pure: the sink driver
//! ([`super::driver`]) gathers the counts and does what it says.
//!
//! Why: a request carries at most one batch per partition, and a response that frees k
//! partitions lets exactly those k send their next batch, so without a rule request sizes
//! only ever split (a partition that waited for data leaves alone) and never merge while
//! fewer than `max_requests_in_flight` requests are outstanding: a 512 MiB lz4 drain over
//! 6 partitions fell to 1.9 batches per request, and each request costs a write, a
//! response and a wake-up. Rules ([`send_now`]):
//!
//! - **Idle broker.** With no request outstanding to the broker, a request goes at once.
//! - **As large as the largest.** A request carrying at least as many batches as the
//!   largest outstanding one goes at once.
//! - **Live partitions never wait.** A request with a ready partition that is not
//!   backlogged (fewer than [`BACKLOGGED`] batches of its own in flight) goes at once: a
//!   live partition's batch does not wait for an unrelated response.
//! - **Otherwise it waits** for the next response to the broker, which frees more
//!   partitions. It never waits forever: it waits only while a request is outstanding,
//!   whose response (or request timeout) comes, and the rules are asked again then.

/// Batches of a partition in flight from which it counts as backlogged: its next batch
/// may wait for a response to leave with others.
pub(super) const BACKLOGGED: usize = 2;

/// Whether a request for `ready` partitions goes now, given the `outstanding` requests to
/// the broker, the batch count of the `largest_outstanding` one, and whether every ready
/// partition is backlogged (asked only when the other rules do not decide).
pub(super) fn send_now(
    outstanding: usize,
    ready: usize,
    largest_outstanding: usize,
    all_backlogged: impl FnOnce() -> bool,
) -> bool {
    outstanding == 0 || ready >= largest_outstanding || !all_backlogged()
}

#[cfg(test)]
mod tests;
