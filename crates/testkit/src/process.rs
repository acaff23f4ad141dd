//! A `strait run` process under test: started with its output appended to a log file,
//! killed (SIGKILL) and reaped on drop, also when an assertion fails. The binary is the
//! caller's (`CARGO_BIN_EXE_strait` in the `strait` package's tests, a located build in
//! the Apache Kafka scenarios), so every suite that runs the binary shares this one guard.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running `strait run [EXTRA] -c CONFIG`.
pub struct StraitProcess {
    child: Child,
    /// Its stdout and stderr, appended.
    pub log: PathBuf,
}

impl StraitProcess {
    /// Starts `bin run EXTRA… -c config` (without `RUST_LOG`, so the config's level
    /// holds), appending its output to `log`.
    pub fn run(bin: impl AsRef<OsStr>, config: &Path, log: &Path, extra: &[&str]) -> Self {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(bin)
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
        StraitProcess {
            child,
            log: log.to_owned(),
        }
    }

    /// The process id (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// kill -9, and reap.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// Sends `signal` (`"STOP"`, `"CONT"`, `"TERM"`, …) with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// SIGTERM; the exit status and how long the exit took (`None`: still running after
    /// `deadline`).
    pub fn terminate(&mut self, deadline: Duration) -> (Option<ExitStatus>, Duration) {
        self.signal("TERM");
        self.wait_exit(deadline)
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

    /// The whole log.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last 40 lines of the log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }
}

impl Drop for StraitProcess {
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

#[cfg(test)]
mod tests;
