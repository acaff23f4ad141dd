//! `strait run -c FILE [--once]`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use strait_mirror::Engine;
use strait_mirror::Metrics;
use strait_mirror::config::{Config, load};
use strait_mirror::metrics::http::MetricsServer;

use crate::cli::LogFormat;
use crate::exit::{self, Exit};
use crate::logging;
use crate::progress::{Bar, Unit};

/// Loads the config, starts logging and the metrics endpoint, and replicates until
/// SIGTERM/SIGINT (or, with `once`, until caught up). Exit 0 after a graceful stop; 1
/// when a flow failed (the other flows keep replicating until every flow ended or the
/// stop).
pub fn run_cmd(
    path: &Path,
    once: bool,
    log_format: Option<LogFormat>,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let config = match load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("strait: {} is not a valid config", path.display());
            return Ok(Exit::Usage.into());
        }
    };
    let format = log_format.unwrap_or(match config.logging.format {
        strait_mirror::config::model::LogFormat::Text => LogFormat::Text,
        strait_mirror::config::model::LogFormat::Json => LogFormat::Json,
    });
    // `--log-level` wins, then RUST_LOG, then the config file.
    let level = log_level
        .map(str::to_owned)
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| config.logging.level.clone());
    logging::init(format, Some(&level)).map_err(anyhow::Error::msg)?;
    let runtime = crate::runtime::engine_runtime(config.engine.worker_threads)
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(run(config, once));
    // Tasks still parked on a stalled network (or a blocking DNS lookup) must not hold up
    // the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

async fn run(config: Config, once: bool) -> anyhow::Result<ExitCode> {
    let listen = config.metrics.clone();
    let engine = Engine::new(config);
    let _server = match listen {
        Some(addr) => {
            engine.metrics().set_stalled_after(addr.stalled_after);
            let s = MetricsServer::start(addr, engine.metrics().clone()).await?;
            tracing::info!(addr = %s.local_addr(), "serving /metrics and /health");
            Some(s)
        }
        None => None,
    };
    // MirrorError's message already includes its cause: printed as it is, with the exit
    // code of its kind.
    let failed = |e: strait_mirror::MirrorError| {
        eprintln!("strait: {e}");
        Ok(exit::of_mirror_error(&e).into())
    };
    if once {
        let metrics = engine.metrics().clone();
        let bar = Bar::start("replicating", Unit::Records, move || {
            let (done, left) = progress_counts(&metrics);
            (done, done + left)
        });
        let result = engine.run_once().await;
        bar.finish();
        match result {
            Ok(summary) => println!("{summary}"),
            Err(e) => return failed(e),
        }
    } else {
        if let Err(e) = engine.run(shutdown_signal()).await {
            return failed(e);
        }
        tracing::info!("stopped");
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops Strait");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Records acknowledged and records still to replicate, summed over every partition, read
/// from the engine's metrics (`strait_records_replicated_total`, `strait_lag_offsets`).
fn progress_counts(metrics: &Metrics) -> (u64, u64) {
    let (mut done, mut left) = (0.0, 0.0);
    for line in metrics.render().lines() {
        let value = || {
            line.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        if line.starts_with("strait_records_replicated_total{") {
            done += value();
        } else if line.starts_with("strait_lag_offsets{") {
            left += value();
        }
    }
    (done as u64, left as u64)
}
