//! The engine's tokio runtime: one choice for `strait run` and `strait bench`, so that the
//! bench measures the runtime users run.
//!
//! With `engine.worker_threads = 1` (the default) the engine runs on a current-thread
//! runtime, on the thread that calls `block_on`: every task, timer and socket is on that
//! one thread, so a wake-up is a local queue push, never a cross-thread notification. A
//! multi-thread runtime with one worker would put the spawned tasks on its worker and the
//! `block_on` future on the calling thread; measured on the forwarding path it costs
//! ~10 % more engine CPU per batch (docs/benchmarks-history.md, "Round 5"). With more threads the
//! engine runs on a multi-thread runtime of that many workers.
//!
//! Blocking work (`spawn_blocking`, the `/metrics` rendering) has its own pool either way.

use tokio::runtime::Builder;

/// A runtime builder for `worker_threads` engine threads (I/O and timers enabled); the
/// caller may add hooks or names before `build`.
pub fn engine_runtime(worker_threads: usize) -> Builder {
    let mut b = if worker_threads <= 1 {
        Builder::new_current_thread()
    } else {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(worker_threads);
        b
    };
    b.enable_all();
    b
}

#[cfg(test)]
mod tests;
