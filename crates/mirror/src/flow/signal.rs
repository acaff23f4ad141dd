//! Waiting on a stop signal (a `watch` flag that turns true once): until it turns, or a
//! job unless it turns first.

use tokio::sync::watch;

/// Runs `job` unless `stop` turns true first (then `None`).
pub(super) async fn interruptible<T>(
    stop: &mut watch::Receiver<bool>,
    job: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        r = job => Some(r),
        _ = until_true(stop) => None,
    }
}

/// Resolves once `flag` is true (or its sender is gone). Unlike `changed`, it also sees a
/// change an earlier wait already marked seen.
pub(super) async fn until_true(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|v| *v).await;
}
