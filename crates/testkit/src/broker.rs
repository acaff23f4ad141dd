//! Tansu broker processes: [`TansuBroker`] (one) and [`TansuCluster`] (several at once).
//!
//! Each broker is its own single-node cluster on a free loopback port, with its own memory
//! storage and cluster id. It is started, probed with a raw ApiVersions request until it
//! answers, and killed (SIGKILL + wait) when the value is dropped — also when a test
//! panics, in which case the tail of its log is printed to stderr and the log is kept.
//!
//! A watchdog (a tiny `sh` process that blocks reading a pipe only this process holds)
//! kills the broker if the test process itself dies without running destructors
//! (`SIGKILL`, `abort`, a `static` broker): the pipe closes and the watchdog fires.
//!
//! **Storage is in memory**: a [`TansuBroker::restart`] comes back empty (no topics, no
//! data, no group offsets) on the same port.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result, io};
use crate::netns::{Place, exec_prefix};
use crate::paths;
use crate::probe;
use crate::proxy::FaultProxy;

/// The line Tansu 0.6.0 logs once it listens; only printed when the bind succeeded.
const READY_MARKER: &str = "ready in";
/// How long a broker must answer (and stay alive) before we trust it without the marker.
const SETTLE_WITHOUT_MARKER: Duration = Duration::from_millis(300);
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
const PORT_ATTEMPTS: usize = 8;

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// How to start a [`TansuBroker`]. `Default` is right for almost every test.
#[derive(Debug, Clone)]
pub struct BrokerOptions {
    /// Name used for the cluster id and the memory storage (`memory://NAME/`).
    /// Default: `strait-<pid>-<n>`, unique within the test process.
    pub name: Option<String>,
    /// A fixed port instead of a free one (no retry on a port race then).
    pub port: Option<u16>,
    /// The broker binary; default [`paths::tansu_bin`].
    pub binary: Option<PathBuf>,
    /// How long to wait for the broker to answer ApiVersions. Default 20 s.
    pub startup_timeout: Duration,
    /// Advertise `127.0.0.1:THIS` in Metadata instead of the listening port (clients
    /// then connect there: a proxy in front of the broker). Default: the listening port.
    pub advertised_port: Option<u16>,
    /// Run the broker inside this network namespace ([`NetNs::place`](crate::NetNs::place)),
    /// listening on and advertising the namespace's address. Default: on the host's
    /// loopback.
    pub netns: Option<Place>,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        Self {
            name: None,
            port: None,
            binary: None,
            startup_timeout: Duration::from_secs(20),
            advertised_port: None,
            netns: None,
        }
    }
}

/// One running Tansu broker process, killed on drop.
#[derive(Debug)]
pub struct TansuBroker {
    name: String,
    port: u16,
    binary: PathBuf,
    startup_timeout: Duration,
    advertised_port: Option<u16>,
    /// Where it listens: loopback, or a namespace's address.
    host: IpAddr,
    /// The namespace it runs in, if any.
    netns: Option<String>,
    /// Holds the log; `None` once kept (after a panic) so it is not deleted.
    dir: Option<tempfile::TempDir>,
    log_path: PathBuf,
    child: Option<Child>,
    watchdog: Option<Child>,
}

/// Why one start attempt failed.
enum Attempt {
    /// The process exited early: most likely another process took the port. Retry.
    Exited(String),
    /// Anything else: give up.
    Fatal(Error),
}

impl TansuBroker {
    /// Starts a broker with default options on a free port and waits until it answers.
    pub fn start() -> Result<Self> {
        Self::start_with(BrokerOptions::default())
    }

    /// Starts a broker with the given options and waits until it answers.
    pub fn start_with(options: BrokerOptions) -> Result<Self> {
        let binary = match options.binary {
            Some(b) if b.is_file() => b,
            Some(path) => return Err(Error::TansuMissing { path }),
            None => paths::tansu_bin()?,
        };
        let name = options.name.unwrap_or_else(|| {
            format!(
                "strait-{}-{}",
                std::process::id(),
                NEXT_ID.fetch_add(1, Ordering::Relaxed)
            )
        });
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir()
            .map_err(io("creating a temp dir for the broker log"))?;
        let log_path = dir.path().join("tansu.log");
        let mut broker = Self {
            name,
            port: options.port.unwrap_or(0),
            binary,
            startup_timeout: options.startup_timeout,
            advertised_port: options.advertised_port,
            host: options
                .netns
                .as_ref()
                .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |p| IpAddr::V4(p.ip)),
            netns: options.netns.map(|p| p.name),
            dir: Some(dir),
            log_path,
            child: None,
            watchdog: None,
        };
        let attempts = if options.port.is_some() {
            1
        } else {
            PORT_ATTEMPTS
        };
        let mut last = String::new();
        for _ in 0..attempts {
            if options.port.is_none() {
                broker.port = free_port()?;
            }
            match broker.spawn_and_wait(Instant::now() + broker.startup_timeout) {
                Ok(()) => return Ok(broker),
                Err(Attempt::Exited(why)) => last = why,
                Err(Attempt::Fatal(e)) => return Err(e),
            }
        }
        Err(broker.start_error(format!("gave up after {attempts} attempts; last: {last}")))
    }

    /// Starts a broker behind a [`FaultProxy`]: the broker advertises the proxy's address
    /// in Metadata, so every connection a Kafka client makes (bootstrap and after) goes
    /// through the proxy. Give clients `proxy.bootstrap()`; `broker.bootstrap()` still
    /// reaches the broker directly (for setup and checks that must not see faults).
    /// The proxy keeps forwarding to the same port across [`restart`](Self::restart).
    pub fn start_behind_proxy(options: BrokerOptions) -> Result<(Self, FaultProxy)> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding the proxy"))?;
        let proxy_port = listener
            .local_addr()
            .map_err(io("reading the proxy address"))?
            .port();
        let broker = Self::start_with(BrokerOptions {
            advertised_port: Some(proxy_port),
            ..options
        })?;
        let proxy = FaultProxy::start_on(listener, broker.addr())?;
        Ok((broker, proxy))
    }

    /// `127.0.0.1:PORT` (or the namespace's `IP:PORT`), for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.addr().to_string()
    }

    /// The socket address the broker listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.host, self.port)
    }

    /// The port the broker listens on (kept across [`restart`](Self::restart)).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's name: its cluster id and memory-storage name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The broker's process id, or `None` after [`kill`](Self::kill).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the broker process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// The log file (stdout and stderr of every run of this broker).
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path, lines)
    }

    /// Kills the broker (SIGKILL) and waits for it. The port is then free; nothing
    /// reserves it until [`restart`](Self::restart). Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Errors here mean it is already gone; wait() reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }

    /// Kills the broker (if running) and starts it again on the same port, with the same
    /// name. **Memory storage: the new broker is empty** — topics, records and group
    /// offsets are gone. Retries while the port is still held, up to the startup timeout.
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        let deadline = Instant::now() + self.startup_timeout;
        loop {
            match self.spawn_and_wait(deadline) {
                Ok(()) => return Ok(()),
                // The old process's port may not be free yet: try again.
                Err(Attempt::Exited(_)) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(50));
                }
                Err(Attempt::Exited(why)) => {
                    return Err(self.start_error(format!("restart failed: {why}")));
                }
                Err(Attempt::Fatal(e)) => return Err(e),
            }
        }
    }

    fn start_error(&self, reason: String) -> Error {
        Error::BrokerStart {
            name: self.name.clone(),
            port: self.port,
            timeout: self.startup_timeout,
            reason,
            log: self.log_path.clone(),
            log_tail: self.log_tail(30),
        }
    }

    /// One attempt: spawn on `self.port`, then poll until it answers, exits or the
    /// deadline passes.
    fn spawn_and_wait(&mut self, deadline: Instant) -> Result<(), Attempt> {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| Attempt::Fatal(io("opening the broker log")(e)))?;
        let log_start = log
            .seek(SeekFrom::End(0))
            .map_err(|e| Attempt::Fatal(io("seeking the broker log")(e)))?;
        let _ = writeln!(
            log,
            "=== strait-testkit: starting {} on {} ===",
            self.name,
            self.addr()
        );
        let stderr = log
            .try_clone()
            .map_err(|e| Attempt::Fatal(io("cloning the log handle")(e)))?;
        let url = format!("tcp://{}", self.addr());
        let advertised = format!(
            "tcp://{}",
            SocketAddr::new(self.host, self.advertised_port.unwrap_or(self.port))
        );
        // In a namespace: `ip netns exec NAME tansu ...` (ip execs it: the pid is Tansu's).
        let mut command = match &self.netns {
            Some(name) => {
                let prefix = exec_prefix(name);
                let mut c = Command::new(&prefix[0]);
                c.args(&prefix[1..]).arg(&self.binary);
                c
            }
            None => Command::new(&self.binary),
        };
        let child = command
            .arg("broker")
            .args(["--listener-url", &url])
            .args(["--advertised-listener-url", &advertised])
            .args(["--storage-engine", &format!("memory://{}/", self.name)])
            .args(["--cluster-id", &self.name])
            .env("NO_COLOR", "1")
            .env_remove("SCHEMA_REGISTRY")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| Attempt::Fatal(io(format!("spawning {}", self.binary.display()))(e)))?;
        self.watchdog = spawn_watchdog(child.id());
        self.child = Some(child);

        let mut answering_since: Option<Instant> = None;
        loop {
            let child = match self.child.as_mut() {
                Some(c) => c,
                None => return Err(Attempt::Fatal(self.start_error("no child".into()))),
            };
            match child.try_wait() {
                Ok(Some(status)) => {
                    self.kill();
                    return Err(Attempt::Exited(format!(
                        "the broker exited early ({status})"
                    )));
                }
                Ok(None) => {}
                Err(e) => {
                    self.kill();
                    return Err(Attempt::Fatal(io("waiting for the broker")(e)));
                }
            }
            if probe::api_versions(self.addr(), PROBE_TIMEOUT).is_ok() {
                let since = *answering_since.get_or_insert_with(Instant::now);
                if log_contains_since(&self.log_path, log_start, READY_MARKER)
                    || since.elapsed() >= SETTLE_WITHOUT_MARKER
                {
                    return Ok(());
                }
            } else {
                answering_since = None;
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(Attempt::Fatal(
                    self.start_error("no ApiVersions answer before the deadline".into()),
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TansuBroker {
    fn drop(&mut self) {
        self.kill();
        if thread::panicking() {
            // Keep the log for a post-mortem and show its tail next to the panic.
            if let Some(dir) = self.dir.take() {
                let _ = dir.keep();
            }
            eprintln!(
                "--- strait-testkit: Tansu broker {} ({}) log tail, full log at {} ---\n{}\n--- end of log tail ---",
                self.name,
                self.addr(),
                self.log_path.display(),
                self.log_tail(40)
            );
        }
    }
}

/// Several brokers started in parallel, each an independent single-node cluster on its
/// own port (a source and a target cluster for a replication test, say). All are killed
/// when the cluster is dropped.
#[derive(Debug)]
pub struct TansuCluster {
    brokers: Vec<TansuBroker>,
}

impl TansuCluster {
    /// Starts `n` brokers with default options, in parallel.
    pub fn start(n: usize) -> Result<Self> {
        let results: Vec<Result<TansuBroker>> = thread::scope(|s| {
            let handles: Vec<_> = (0..n).map(|_| s.spawn(TansuBroker::start)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Protocol("a broker start thread panicked".into()))
                    })
                })
                .collect()
        });
        // On any error the brokers that did start are dropped (killed) here.
        let brokers = results.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Self { brokers })
    }

    /// The brokers, in start order.
    pub fn brokers(&self) -> &[TansuBroker] {
        &self.brokers
    }

    /// Broker `i` (panics if out of range, like indexing).
    pub fn broker(&self, i: usize) -> &TansuBroker {
        &self.brokers[i]
    }

    /// Broker `i`, mutably (to kill or restart it).
    pub fn broker_mut(&mut self, i: usize) -> &mut TansuBroker {
        &mut self.brokers[i]
    }

    /// Every broker's `127.0.0.1:PORT`.
    pub fn bootstraps(&self) -> Vec<String> {
        self.brokers.iter().map(TansuBroker::bootstrap).collect()
    }

    /// How many brokers.
    pub fn len(&self) -> usize {
        self.brokers.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.brokers.is_empty()
    }
}

/// A port that was free a moment ago (bind port 0, read it, close). Callers must cope
/// with losing a race for it.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding 127.0.0.1:0"))?;
    let port = listener
        .local_addr()
        .map_err(io("reading the bound port"))?
        .port();
    Ok(port)
}

/// `n` distinct ports that were free a moment ago: every listener stays bound until all
/// `n` are read, so no two can be the same (separate [`free_port`] calls can be, once the
/// first listener is closed). Callers must still cope with losing a race for them.
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").map_err(io("binding 127.0.0.1:0")))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(io("reading the bound port"))
        })
        .collect()
}

/// A watchdog `sh` that kills `pid` once its stdin reaches EOF, which happens when this
/// process dies without killing the broker itself (the pipe's write end is ours alone:
/// std creates it close-on-exec). Best effort: `None` if `sh` can't be spawned.
pub(crate) fn spawn_watchdog(pid: u32) -> Option<Child> {
    Command::new("/bin/sh")
        .arg("-c")
        .arg("read _ignored; kill -9 \"$1\" 2>/dev/null")
        .arg("strait-tansu-watchdog")
        .arg(pid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

fn read_log_from(path: &Path, from: u64) -> String {
    let mut buf = Vec::new();
    if let Ok(mut f) = File::open(path)
        && f.seek(SeekFrom::Start(from)).is_ok()
    {
        let _ = f.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

pub(crate) fn log_contains_since(path: &Path, from: u64, needle: &str) -> bool {
    read_log_from(path, from).contains(needle)
}

/// The last `lines` lines of a log file (at most its last 64 KiB).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let text = read_log_from(path, len.saturating_sub(64 * 1024));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests;
