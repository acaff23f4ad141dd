//! Helpers shared by the engine tests: an [`Engine`] on its own runtime thread.

use std::sync::mpsc;
use std::time::Duration;

use strait_mirror::config::Config;
use strait_mirror::{Engine, Metrics};

/// An engine running on its own runtime thread; the runtime (and every task on it) is shut
/// down on drop, also when the engine hangs or an assertion fails.
pub struct Running {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<Result<(), String>>,
    metrics: Metrics,
}

impl Running {
    /// Starts `Engine::run` for `config`.
    pub fn start(config: Config) -> Running {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        let engine = Engine::new(config);
        let metrics = engine.metrics().clone();
        runtime.spawn(async move {
            let r = engine
                .run(async {
                    let _ = stop_rx.await;
                })
                .await;
            let _ = done_tx.send(r.map_err(|e| e.to_string()));
        });
        Running {
            runtime: Some(runtime),
            stop: Some(stop_tx),
            done,
            metrics,
        }
    }

    /// The engine's metrics.
    #[allow(dead_code)]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The sum of a metric's samples whose line contains every one of `labels`.
    pub fn sum(&self, name: &str, labels: &[&str]) -> f64 {
        self.metrics
            .render()
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .filter(|l| labels.iter().all(|x| l.contains(x)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// The engine's result if it stops within `bound`.
    pub fn wait(&self, bound: Duration) -> Option<Result<(), String>> {
        self.done.recv_timeout(bound).ok()
    }

    /// Asks for a graceful stop and returns the result (within `bound`).
    pub fn stop(&mut self, bound: Duration) -> Option<Result<(), String>> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.wait(bound)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// Logs to the test's output, filtered by `RUST_LOG`.
#[allow(dead_code)]
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}
