//! Polling with a deadline: the scenarios wait for states (caught up, group settled), and
//! a state that does not come is a failure naming what was awaited and what was seen.

use std::time::{Duration, Instant};

/// Polls `done` every 200 ms until it is true; past `deadline`, fails the test with `what`
/// and `diagnose()`.
pub fn until(
    what: &str,
    deadline: Duration,
    mut done: impl FnMut() -> bool,
    diagnose: impl FnOnce() -> String,
) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= deadline {
            panic!(
                "timed out after {deadline:?} waiting for {what}\n{}",
                diagnose()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
