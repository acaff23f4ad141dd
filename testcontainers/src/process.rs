//! The `strait` binary under test, run as its own process: `strait run -c CONFIG` with its
//! output appended to a log file, killed (SIGKILL) and reaped on drop, also when an
//! assertion fails.
//!
//! Cargo gives `CARGO_BIN_EXE_strait` only to the `strait` package's own tests, so the
//! binary is found here: `$STRAIT_BIN`, else `<target dir>/debug/strait`
//! (`$CARGO_TARGET_DIR` or the workspace's `target/`). `scripts/test-kafka` builds it
//! first, so it is never stale there.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use strait_testkit::process::StraitProcess;
pub use strait_testkit::process::log_tail;

/// The path of the `strait` binary to test; fails the test if it is missing.
pub fn strait_binary() -> PathBuf {
    let path = match std::env::var_os("STRAIT_BIN") {
        Some(p) => PathBuf::from(p),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| strait_testkit::paths::workspace_root().join("target"))
            .join("debug/strait"),
    };
    assert!(
        path.is_file(),
        "no strait binary at {} (build it with `cargo build -p strait --bin strait`, as \
         scripts/test-kafka does, or set STRAIT_BIN)",
        path.display()
    );
    path
}

/// A running `strait run` of [`strait_binary`]: strait-testkit's guard.
pub type Strait = StraitProcess;

/// Starts `strait run -c config`, appending its output to `log`.
pub fn start(config: &Path, log: &Path) -> Strait {
    StraitProcess::run(strait_binary(), config, log, &[])
}

/// Runs `strait run --once -c config` to its end (at most `deadline`) and returns its exit
/// status; the test fails if it does not end in time.
pub fn once(config: &Path, log: &Path, deadline: Duration) -> ExitStatus {
    let mut s = StraitProcess::run(strait_binary(), config, log, &["--once"]);
    match s.wait_exit(deadline) {
        (Some(status), _) => status,
        (None, _) => panic!(
            "strait run --once did not end within {deadline:?}:\n{}",
            s.log_tail()
        ),
    }
}

/// SIGTERM, then the exit status within `deadline`; the test fails if it does not stop in
/// time.
pub fn stop(s: &mut Strait, deadline: Duration) -> ExitStatus {
    match s.terminate(deadline) {
        (Some(status), _) => status,
        (None, _) => panic!(
            "strait did not stop within {deadline:?} of SIGTERM:\n{}",
            s.log_tail()
        ),
    }
}

/// Runs `strait verify -c config --json ARGS` (read-only; it ends by itself) and returns
/// its exit code and stdout (the JSON report), the test failing with its output when it
/// prints nothing.
pub fn verify(config: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(strait_binary())
        .arg("verify")
        .arg("-c")
        .arg(config)
        .arg("--json")
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait verify");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !stdout.trim().is_empty(),
        "strait verify printed nothing (exit {:?}):\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), stdout)
}
