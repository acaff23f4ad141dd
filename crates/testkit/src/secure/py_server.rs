//! The Python server processes behind [`SecureFront`](super::SecureFront) and
//! [`TokenEndpoint`](super::TokenEndpoint): spawned, waited for until they listen, killed on
//! drop (their files kept and their logs printed when a test panics).

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::{Error, Result, io};
use crate::paths;

/// How long a server may take to listen, unless its options say otherwise.
pub(super) const DEFAULT_STARTUP: Duration = Duration::from_secs(20);

/// One Python server: killed on drop (stdin closed, SIGKILL, wait). Both scripts also exit
/// by themselves when their stdin reaches EOF, i.e. when this process dies.
#[derive(Debug)]
pub(super) struct PyServer {
    what: &'static str,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// `None` once kept (after a panic).
    dir: Option<tempfile::TempDir>,
    dir_path: PathBuf,
    stderr_path: PathBuf,
    pub(super) events_path: PathBuf,
    pub(super) port: u16,
}

#[derive(Deserialize)]
struct ReadyLine {
    event: String,
    port: u16,
}

impl PyServer {
    pub(super) fn spawn(
        what: &'static str,
        script: &str,
        args: Vec<OsString>,
        dir: tempfile::TempDir,
        timeout: Duration,
    ) -> Result<Self> {
        let python = paths::python()?;
        let dir_path = dir.path().to_path_buf();
        let stderr_path = dir_path.join("stderr.log");
        let events_path = dir_path.join("events.jsonl");
        let stderr = fs::File::create(&stderr_path).map_err(io("creating the stderr log"))?;
        let mut child = Command::new(&python)
            .arg(paths::testkit_script(script))
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(io(format!("spawning {} {script}", python.display())))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut server = Self {
            what,
            child: Some(child),
            stdin,
            dir: Some(dir),
            dir_path,
            stderr_path,
            events_path,
            port: 0,
        };
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = stdout {
            thread::spawn(move || {
                let mut lines = BufReader::new(stdout);
                let mut first = String::new();
                let _ = lines.read_line(&mut first);
                let _ = tx.send(first);
                // Keep draining so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut lines, &mut std::io::sink());
            });
        }
        let deadline = Instant::now() + timeout;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => match serde_json::from_str::<ReadyLine>(line.trim()) {
                    Ok(r) if r.event == "ready" => {
                        server.port = r.port;
                        return Ok(server);
                    }
                    _ => {
                        return Err(server
                            .start_error(format!("expected a ready line, got {:?}", line.trim())));
                    }
                },
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(server.start_error("no stdout".into()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Some(child) = server.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                // Give the reader a moment in case the line raced with the exit.
                if let Ok(line) = rx.recv_timeout(Duration::from_millis(100))
                    && let Ok(r) = serde_json::from_str::<ReadyLine>(line.trim())
                {
                    server.port = r.port;
                    return Ok(server);
                }
                return Err(server.start_error(format!("exited early ({status})")));
            }
            if Instant::now() >= deadline {
                return Err(server.start_error(format!("not listening within {timeout:?}")));
            }
        }
    }

    fn start_error(&mut self, reason: String) -> Error {
        self.kill();
        Error::ServerStart {
            what: self.what.into(),
            reason,
            stderr: self.stderr_tail(40),
        }
    }

    pub(super) fn stderr_tail(&self, lines: usize) -> String {
        tail_lines(&self.stderr_path, lines)
    }

    pub(super) fn send_line(&mut self, line: &str) -> Result<()> {
        use std::io::Write as _;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::Protocol(format!("{} has no stdin", self.what)))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(io(format!("writing to {}", self.what)))
    }

    pub(super) fn kill(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        self.kill();
        if thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let _ = dir.keep();
            }
            eprintln!(
                "--- strait-testkit: {} (127.0.0.1:{}) files kept in {} ---\n--- stderr tail ---\n{}\n--- events tail ---\n{}\n--- end ---",
                self.what,
                self.port,
                self.dir_path.display(),
                self.stderr_tail(30),
                tail_lines(&self.events_path, 30),
            );
        }
    }
}

pub(super) fn tail_lines(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

pub(super) fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    fs::write(path, contents).map_err(io(format!("writing {}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

pub(super) fn temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(io("creating a temp dir"))
}
