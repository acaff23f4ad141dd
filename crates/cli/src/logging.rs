//! Logging to stderr via tracing-subscriber.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Installs the global subscriber: `--log-level` wins, then `RUST_LOG`, then `warn`
/// (the config tools talk to the user on stdout/stderr directly, not through logs).
pub fn init(format: LogFormat, level: Option<&str>) -> Result<(), String> {
    let filter = match level {
        Some(l) => {
            EnvFilter::try_new(l).map_err(|e| format!("invalid --log-level \"{l}\": {e}"))?
        }
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(|e| format!("cannot install the logger: {e}"))
}

/// Whether log lines carry ANSI colour: only on a terminal, and never when `NO_COLOR` is
/// set to anything but the empty string (<https://no-color.org>). A pipe, a file or a
/// log collector gets plain text.
fn colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests;
