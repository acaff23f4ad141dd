//! One KRaft node: a JVM running `kafka.Kafka`, with its own folder (properties, log
//! directory, logs). Stop, `kill -9`, pause and restart keep the folder, so a restarted node
//! recovers its log as a production broker would.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::install::JavaInstall;
use super::props::NodePorts;
use crate::broker::{log_contains_since, log_tail, spawn_watchdog};
use crate::error::{Error, Result, io};
use crate::probe;

/// What the broker logs once every listener is up and it has caught up with the metadata.
const READY_MARKER: &str = "Kafka Server started";
/// A listener whose port another process took: the start is retried on new ports.
pub(super) const PORT_TAKEN: &str = "Address already in use";
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// One node of a [`KafkaCluster`](super::KafkaCluster).
#[derive(Debug)]
pub struct KafkaNode {
    pub(super) id: usize,
    pub(super) ports: NodePorts,
    pub(super) dir: PathBuf,
    pub(super) install: JavaInstall,
    pub(super) heap_mb: u32,
    pub(super) production_jvm: bool,
    pub(super) startup_timeout: Duration,
    pub(super) child: Option<Child>,
    pub(super) watchdog: Option<Child>,
    /// Where the current run's output starts in `server.log` (for the ready marker).
    pub(super) log_start: u64,
}

impl KafkaNode {
    /// The node id (1-based).
    pub fn id(&self) -> usize {
        self.id
    }

    /// The PLAINTEXT listener's `127.0.0.1:PORT`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.ports.plaintext)
    }

    /// The PLAINTEXT listener's address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports.plaintext))
    }

    /// The node's ports.
    pub fn ports(&self) -> NodePorts {
        self.ports
    }

    /// The JVM's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the JVM is running (a paused one is running).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// The node's folder: `server.properties`, `data/`, `server.log`, `stdout.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The broker's own log (log4j2).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The last `lines` lines of the broker's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// `kill -9`: the JVM dies without flushing or a controlled shutdown. Idempotent.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stop_watchdog();
    }

    /// A clean stop: SIGTERM (controlled shutdown), then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if let Some(child) = self.child.as_mut() {
            signal(child.id(), "TERM");
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                thread::sleep(Duration::from_millis(50));
            }
        }
        self.kill9();
    }

    /// SIGSTOP: the JVM stops answering but keeps its sockets open (a hung broker).
    pub fn pause(&self) {
        if let Some(child) = &self.child {
            signal(child.id(), "STOP");
        }
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&self) {
        if let Some(child) = &self.child {
            signal(child.id(), "CONT");
        }
    }

    /// Starts the JVM again on the same ports and log directory (after a stop or `kill -9`;
    /// a running node is killed first) and waits until it serves.
    pub fn restart(&mut self) -> Result<()> {
        self.kill9();
        let deadline = Instant::now() + self.startup_timeout;
        loop {
            match self.spawn() {
                Ok(()) => {}
                Err(e) => return Err(e),
            }
            match self.wait_ready(deadline) {
                Ok(()) => return Ok(()),
                // The old process's ports may still be held for a moment.
                Err(_) if self.port_taken() && Instant::now() < deadline => {
                    self.kill9();
                    thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Spawns the JVM (does not wait for it).
    pub(super) fn spawn(&mut self) -> Result<()> {
        let log_path = self.log_path();
        self.log_start = std::fs::metadata(&log_path).map_or(0, |m| m.len());
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("stdout.log"))
            .map_err(io("opening the node's stdout log"))?;
        let _ = out.seek(SeekFrom::End(0));
        let _ = writeln!(
            out,
            "=== strait-testkit: starting Kafka node {} ===",
            self.id
        );
        let err = out.try_clone().map_err(io("cloning the log handle"))?;
        let child = self
            .java_command()
            .arg("kafka.Kafka")
            .arg(self.dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(io(format!("spawning {}", self.install.java.display())))?;
        self.watchdog = spawn_watchdog(child.id());
        self.child = Some(child);
        Ok(())
    }

    /// `java` with this node's heap, GC and logging flags and the broker's classpath.
    pub(super) fn java_command(&self) -> Command {
        let mut c = Command::new(&self.install.java);
        c.arg(format!("-Xmx{}m", self.heap_mb))
            .arg(format!("-Xms{}m", (self.heap_mb / 4).max(64)));
        if self.production_jvm {
            // As kafka-server-start.sh / kafka-run-class.sh: G1 with its pause target.
            c.args([
                "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35",
                "-XX:+ExplicitGCInvokesConcurrent",
            ]);
        } else {
            // One GC thread and the quick compiler only: several JVMs share 2 cores.
            c.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]);
        }
        c.arg("-XX:-UsePerfData")
            .arg("-Djava.awt.headless=true")
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.dir.join("log4j2.properties").display()
            ))
            .arg("-cp")
            .arg(self.install.classpath())
            .env_remove("KAFKA_OPTS")
            .env_remove("JAVA_TOOL_OPTIONS")
            .env_remove("CLASSPATH");
        c
    }

    /// Waits until the broker logged that it started and answers ApiVersions, or fails
    /// with the log's tail when it exits or the deadline passes.
    pub(super) fn wait_ready(&mut self, deadline: Instant) -> Result<()> {
        loop {
            let exited = match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(None)) => None,
                Some(Ok(Some(status))) => Some(status.to_string()),
                Some(Err(e)) => Some(e.to_string()),
                None => Some("not started".to_owned()),
            };
            if let Some(why) = exited {
                self.kill9();
                return Err(self.start_error(format!("the JVM exited ({why})")));
            }
            if log_contains_since(&self.log_path(), self.log_start, READY_MARKER)
                && probe::api_versions(self.addr(), PROBE_TIMEOUT).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.kill9();
                return Err(self.start_error(format!(
                    "no \"{READY_MARKER}\" within {:?}",
                    self.startup_timeout
                )));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether this run failed because a port was taken.
    pub(super) fn port_taken(&self) -> bool {
        log_contains_since(&self.log_path(), self.log_start, PORT_TAKEN)
            || std::fs::read_to_string(self.dir.join("stdout.log"))
                .is_ok_and(|s| s.contains(PORT_TAKEN))
    }

    fn start_error(&self, reason: String) -> Error {
        let mut tail = self.log_tail(30);
        if tail.trim().is_empty() {
            tail = log_tail(&self.dir.join("stdout.log"), 30);
        }
        Error::BrokerStart {
            name: format!("Kafka node {}", self.id),
            port: self.ports.plaintext,
            timeout: self.startup_timeout,
            reason,
            log: self.log_path(),
            log_tail: tail,
        }
    }

    fn stop_watchdog(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

impl Drop for KafkaNode {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `kill -SIGNAL pid`, best effort.
pub(super) fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
