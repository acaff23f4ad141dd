//! The `strait` binary under test, run as its own process: `strait run -c CONFIG` with its
//! output appended to a log file, killed (SIGKILL) and reaped on drop, also when an
//! assertion fails.
//!
//! Cargo gives `CARGO_BIN_EXE_strait` only to the `strait` package's own tests, so the
//! binary is found here: `$STRAIT_BIN`, else `<target dir>/debug/strait`
//! (`$CARGO_TARGET_DIR` or the workspace's `target/`). `scripts/test-kafka` builds it
//! first, so it is never stale there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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

/// A running `strait run -c CONFIG` (or `--once`).
pub struct Strait {
    child: Child,
    /// Its stdout and stderr, appended.
    pub log: PathBuf,
}

impl Strait {
    /// Starts `strait run -c config`, appending its output to `log`.
    pub fn start(config: &Path, log: &Path) -> Strait {
        Strait::spawn(config, log, &[])
    }

    /// Runs `strait run --once -c config` to its end (at most `deadline`) and returns its
    /// exit status; the test fails if it does not end in time.
    pub fn once(config: &Path, log: &Path, deadline: Duration) -> ExitStatus {
        let mut s = Strait::spawn(config, log, &["--once"]);
        match s.wait_exit(deadline) {
            (Some(status), _) => status,
            (None, _) => panic!(
                "strait run --once did not end within {deadline:?}:\n{}",
                s.log_tail()
            ),
        }
    }

    fn spawn(config: &Path, log: &Path, extra: &[&str]) -> Strait {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(strait_binary())
            .arg("run")
            .args(extra)
            .arg("-c")
            .arg(config)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start strait");
        Strait {
            child,
            log: log.to_owned(),
        }
    }

    /// kill -9, and reap.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, then the exit status within `deadline`; the test fails if it does not
    /// stop in time.
    pub fn terminate(&mut self, deadline: Duration) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success(), "kill -TERM failed");
        match self.wait_exit(deadline) {
            (Some(status), _) => status,
            (None, _) => panic!(
                "strait did not stop within {deadline:?} of SIGTERM:\n{}",
                self.log_tail()
            ),
        }
    }

    /// Waits at most `deadline` for the process to exit.
    pub fn wait_exit(&mut self, deadline: Duration) -> (Option<ExitStatus>, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (Some(status), start.elapsed());
            }
            if start.elapsed() >= deadline {
                return (None, start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Panics (with the log) if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait") {
            panic!("strait exited early ({status}):\n{}", self.log_tail());
        }
    }

    /// The last 40 lines of the log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }
}

impl Drop for Strait {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The last 40 lines of a strait log file.
pub fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
