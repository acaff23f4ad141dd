//! The `strait` binary run to its end as a user would, and what it printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, UNIX_EPOCH};

/// Runs `strait ARGS…` (this package's binary) to its end, without `RUST_LOG` so that the
/// command's own logging holds.
pub fn strait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait")
}

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn output_text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One of a run's streams as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `contents` into `dir/name` (a config, a CA file) and returns its path.
pub fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// A Unix time in milliseconds as RFC 3339 with milliseconds (`--from`, `start_position`).
pub fn rfc3339(ms: i64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms as u64)).to_string()
}
