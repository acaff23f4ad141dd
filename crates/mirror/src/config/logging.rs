//! `[logging]`: log level and format — the file's form, which is also the resolved form
//! ([`Logging`]), and its check of the level directives.

use serde::{Deserialize, Serialize};

use super::defaults as d;
use super::problem::{KeyPath, Problem};
use super::suggest::did_you_mean;

/// The levels a directive may name.
const LOG_LEVELS: &[&str] = &["trace", "debug", "info", "warn", "error", "off"];

/// Logging (`[logging]`), as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSpec {
    /// Filter directives such as `info` or `warn,strait_mirror=debug`; `RUST_LOG` wins.
    pub level: String,
    /// `text` or `json` (one JSON object per line).
    pub format: LogFormat,
}

/// Logging, resolved: the table as written, its level checked.
pub type Logging = LoggingSpec;

impl Default for LoggingSpec {
    fn default() -> Self {
        Self {
            level: d::LOG_LEVEL.to_owned(),
            format: LogFormat::default(),
        }
    }
}

/// Log output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Checks `spec` (at `at`, the `logging` table); every problem goes to `problems`. The
/// level takes `info`, `warn,strait_mirror=debug`: the subset of `tracing` directives we
/// document.
pub fn resolve(spec: &LoggingSpec, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<Logging> {
    let before = problems.len();
    for directive in spec.level.split(',').map(str::trim) {
        let lvl = directive.rsplit_once('=').map_or(directive, |(_, l)| l);
        if !LOG_LEVELS.contains(&lvl.to_ascii_lowercase().as_str()) {
            problems.push(
                Problem::new(
                    at.key("level"),
                    format!("invalid log directive \"{directive}\""),
                )
                .expected(format!(
                    "a level ({}) or `target=level`, comma-separated",
                    LOG_LEVELS.join(", ")
                ))
                .suggest(did_you_mean(lvl, LOG_LEVELS.iter().copied()).map(str::to_owned)),
            );
        }
    }
    (problems.len() == before).then(|| spec.clone())
}
