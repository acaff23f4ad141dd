//! What is wrong with a config: [`Problem`]s located by a [`KeyPath`], gathered into a
//! [`ConfigError`] that names the file.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Where a value sits in the file, displayed as `flows[0].topics.include[2]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// The whole file.
    pub fn root() -> Self {
        Self::default()
    }

    /// This path followed by table key `k`.
    pub fn key(&self, k: impl Into<String>) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.into()));
        p
    }

    /// This path followed by array index `i`.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }

    /// True for the whole file.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Index(i) => write!(f, "[{i}]")?,
                Segment::Key(k) => {
                    if n > 0 {
                        f.write_str(".")?;
                    }
                    let bare = !k.is_empty()
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if bare {
                        f.write_str(k)?
                    } else {
                        write!(f, "{k:?}")?
                    }
                }
            }
        }
        Ok(())
    }
}

/// One thing wrong with a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key at fault; the root for problems about the whole file.
    pub path: KeyPath,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What would have been accepted.
    pub expected: Option<String>,
    /// A likely fix, e.g. the correctly spelled key.
    pub suggestion: Option<String>,
}

/// Bounds of client timeouts (`request_timeout`, `connect_timeout`, TLS
/// `handshake_timeout`).
pub(super) const TIMEOUT_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(3600));
/// Bounds of periodic intervals (`metadata_refresh_interval`, `[flows.intervals]`):
/// below, brokers are hammered; above, "periodic" means never.
pub(super) const INTERVAL_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(24 * 3600));

/// The problem with duration `d` at `at` when it lies outside `min..=max` (a zero one
/// "must not be zero"), for every duration key's check.
pub fn duration_out_of_range(
    at: KeyPath,
    d: super::units::HumanDuration,
    (min, max): (Duration, Duration),
) -> Option<Problem> {
    use super::units::HumanDuration;
    if d.0 >= min && d.0 <= max {
        return None;
    }
    let what = if d.0.is_zero() {
        "must not be zero".to_owned()
    } else {
        format!("{d} is out of range")
    };
    Some(Problem::new(at, what).expected(format!(
        "a duration between {} and {}",
        HumanDuration(min),
        HumanDuration(max)
    )))
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: KeyPath, message: impl Into<String>) -> Self {
        Self {
            path,
            line: None,
            message: message.into(),
            expected: None,
            suggestion: None,
        }
    }

    /// Adds what would have been accepted.
    pub fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// Adds a "did you mean" suggestion.
    pub fn suggest(mut self, suggestion: Option<String>) -> Self {
        self.suggestion = suggestion;
        self
    }

    /// Sets the line.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }
}

impl fmt::Display for Problem {
    /// `key: message; expected ...; did you mean `x`?` (the file and line are added by
    /// [`ConfigError`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_root() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(e) = &self.expected {
            write!(f, "; expected {e}")?;
        }
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean `{s}`?")?;
        }
        Ok(())
    }
}

/// Why a config could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file was read but has problems; all of them are listed.
    #[error("{}", render(origin, problems))]
    Invalid {
        /// The file name (or another label for where the text came from).
        origin: String,
        /// Every problem found, in file order where lines are known.
        problems: Vec<Problem>,
    },
}

impl ConfigError {
    /// The problems, empty for a read error.
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Read { .. } => &[],
            Self::Invalid { problems, .. } => problems,
        }
    }
}

/// One line per problem: `file:line: key: message; expected ...`.
fn render(origin: &str, problems: &[Problem]) -> String {
    let mut out = String::new();
    for (n, p) in problems.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str(origin);
        if let Some(line) = p.line {
            out.push_str(&format!(":{line}"));
        }
        out.push_str(&format!(": {p}"));
    }
    out
}

#[cfg(test)]
mod tests;
