//! MirrorMaker 2, the replicator Strait replaces, run from its own jars: [`Mm2`] is a
//! dedicated-mode process (`org.apache.kafka.connect.mirror.MirrorMaker`) and
//! [`translate_offsets`] is MM2's own client-side translation
//! (`RemoteClusterUtils.translateOffsets`), compiled from
//! `crates/testkit/kafka/TranslateOffsets.java` with the JDK's `javac` on first use.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::install::{self, JavaInstall};
use super::props::log4j2_properties;
use crate::broker::{log_contains_since, log_tail, spawn_watchdog};
use crate::error::{Error, Result, io};

/// What dedicated-mode MM2 logs once its connectors are configured.
const STARTED_MARKER: &str = "Kafka MirrorMaker started";

/// A running dedicated-mode MirrorMaker 2, killed on drop.
#[derive(Debug)]
pub struct Mm2 {
    child: Option<Child>,
    watchdog: Option<Child>,
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    version: String,
}

impl Mm2 {
    /// Starts MM2 with `properties` (the text of an `mm2.properties`) and waits until it logs
    /// that it started, at most `timeout`.
    pub fn start(properties: &str, timeout: Duration) -> Result<Self> {
        let install = install::mm2()?;
        let version = install
            .jar_version("connect-mirror")
            .unwrap_or_else(|| "unknown".into());
        let dir = tempfile::Builder::new()
            .prefix("strait-mm2-")
            .tempdir()
            .map_err(io("creating MM2's folder"))?;
        let path = dir.path().to_owned();
        std::fs::write(path.join("mm2.properties"), properties)
            .map_err(io("writing mm2.properties"))?;
        std::fs::write(
            path.join("log4j2.properties"),
            log4j2_properties(&path.join("mm2.log")),
        )
        .map_err(io("writing MM2's log4j2.properties"))?;
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path.join("stdout.log"))
            .map_err(io("opening MM2's stdout log"))?;
        let err = out.try_clone().map_err(io("cloning the log handle"))?;
        let child = java(&install, &path)
            .arg("-cp")
            .arg(install.classpath())
            .arg("org.apache.kafka.connect.mirror.MirrorMaker")
            .arg(path.join("mm2.properties"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(io("spawning MirrorMaker 2"))?;
        let watchdog = spawn_watchdog(child.id());
        let mut mm2 = Self {
            child: Some(child),
            watchdog,
            dir: Some(dir),
            path,
            version,
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(Ok(Some(status))) = mm2.child.as_mut().map(Child::try_wait) {
                return Err(mm2.start_error(format!("it exited ({status})")));
            }
            if log_contains_since(&mm2.log_path(), 0, STARTED_MARKER) {
                return Ok(mm2);
            }
            if Instant::now() >= deadline {
                return Err(mm2.start_error(format!("no \"{STARTED_MARKER}\" within {timeout:?}")));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// MM2's log.
    pub fn log_path(&self) -> PathBuf {
        self.path.join("mm2.log")
    }

    /// The last `lines` lines of MM2's log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// The connect-mirror version that runs.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// A clean stop: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if let Some(child) = self.child.as_mut() {
            super::node::signal(child.id(), "TERM");
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                thread::sleep(Duration::from_millis(50));
            }
        }
        self.kill9();
    }

    /// `kill -9`. Idempotent.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
    }

    fn start_error(&mut self, reason: String) -> Error {
        self.kill9();
        if let Some(dir) = self.dir.take() {
            let _ = dir.keep();
        }
        let mut tail = self.log_tail(30);
        if tail.trim().is_empty() {
            tail = log_tail(&self.path.join("stdout.log"), 30);
        }
        Error::ServerStart {
            what: format!("MirrorMaker 2 (log in {})", self.path.display()),
            reason,
            stderr: tail,
        }
    }
}

impl Drop for Mm2 {
    fn drop(&mut self) {
        self.kill9();
        if thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let _ = dir.keep();
            }
            eprintln!(
                "--- strait-testkit: MirrorMaker 2 log tail, full log at {} ---\n{}\n--- end ---",
                self.log_path().display(),
                self.log_tail(40)
            );
        }
    }
}

/// A realistic one-way `mm2.properties` for dedicated mode: `source` → `target` for the
/// topics matching `topics` (a regex list), default replication policy (`<source>.<topic>`),
/// every internal topic with one replica (test clusters of one node), checkpoints and
/// group offsets emitted every second, and as many tasks as a test topic has partitions.
pub fn dedicated_properties(
    source: &str,
    source_bootstrap: &str,
    target: &str,
    target_bootstrap: &str,
    topics: &str,
) -> String {
    let mut s = format!(
        "clusters = {source}, {target}\n\
         {source}.bootstrap.servers = {source_bootstrap}\n\
         {target}.bootstrap.servers = {target_bootstrap}\n\
         {source}->{target}.enabled = true\n\
         {target}->{source}.enabled = false\n\
         {source}->{target}.topics = {topics}\n\
         {source}->{target}.groups = .*\n\
         tasks.max = 6\n\
         refresh.topics.interval.seconds = 5\n\
         refresh.groups.interval.seconds = 5\n\
         emit.checkpoints.interval.seconds = 1\n\
         emit.heartbeats.interval.seconds = 1\n\
         sync.group.offsets.enabled = true\n\
         sync.group.offsets.interval.seconds = 1\n\
         offset.lag.max = 0\n\
         replication.factor = 1\n"
    );
    for key in [
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "offset-syncs.topic.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    ] {
        s.push_str(&format!("{key} = 1\n"));
    }
    s
}

/// MM2's own translation of `group`'s offsets: `RemoteClusterUtils.translateOffsets` reading
/// `<source_alias>.checkpoints.internal` on the cluster at `bootstrap`. Per (topic,
/// partition) of the target, the offset MM2's client would give a consumer there.
pub fn translate_offsets(
    bootstrap: &str,
    source_alias: &str,
    group: &str,
    timeout: Duration,
) -> Result<BTreeMap<(String, i32), i64>> {
    let install = install::mm2()?;
    let classes = compile_translator(&install)?;
    let output = java(&install, &classes)
        .arg("-cp")
        .arg(format!("{}:{}", classes.display(), install.classpath()))
        .arg("TranslateOffsets")
        .args([bootstrap, source_alias, group])
        .arg(timeout.as_millis().to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(io("running TranslateOffsets"))?;
    if !output.status.success() {
        return Err(Error::ServerStart {
            what: "MM2's RemoteClusterUtils.translateOffsets".into(),
            reason: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    parse_translation(&String::from_utf8_lossy(&output.stdout))
}

/// `TOPIC\tPARTITION\tOFFSET` lines.
fn parse_translation(text: &str) -> Result<BTreeMap<(String, i32), i64>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            let bad = || Error::Protocol(format!("TranslateOffsets printed {l:?}"));
            let topic = f.next().ok_or_else(bad)?.to_owned();
            let partition = f.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
            let offset = f.next().and_then(|o| o.parse().ok()).ok_or_else(bad)?;
            Ok(((topic, partition), offset))
        })
        .collect()
}

/// `java` with a small heap, logging through `log4j2.properties` in `dir` when present
/// (the caller adds the classpath).
fn java(install: &JavaInstall, dir: &Path) -> Command {
    let mut c = Command::new(&install.java);
    c.arg("-Xmx512m")
        .arg("-XX:+UseSerialGC")
        .arg("-XX:TieredStopAtLevel=1")
        .arg("-XX:-UsePerfData");
    let log4j = dir.join("log4j2.properties");
    if log4j.is_file() {
        c.arg(format!("-Dlog4j2.configurationFile={}", log4j.display()));
    } else {
        c.arg("-Dlog4j2.level=WARN");
    }
    c.env_remove("JAVA_TOOL_OPTIONS").env_remove("CLASSPATH");
    c
}

/// Compiles `TranslateOffsets.java` once per source text into a folder under the system
/// temp dir (compiled into a fresh folder, then renamed into place: concurrent tests race
/// safely).
fn compile_translator(install: &JavaInstall) -> Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kafka")
        .join("TranslateOffsets.java");
    let text = std::fs::read(&source).map_err(io("reading TranslateOffsets.java"))?;
    let key = {
        let mut h = DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    let dest = std::env::temp_dir().join(format!("strait-testkit-java-{key:016x}"));
    if dest.join("TranslateOffsets.class").is_file() {
        return Ok(dest);
    }
    let javac = install.java.with_file_name("javac");
    let work = tempfile::Builder::new()
        .prefix("strait-testkit-javac-")
        .tempdir()
        .map_err(io("creating a javac folder"))?;
    let output = Command::new(&javac)
        .arg("-d")
        .arg(work.path())
        .arg("-cp")
        .arg(install.classpath())
        .arg(&source)
        .output()
        .map_err(io(format!("running {}", javac.display())))?;
    if !output.status.success() {
        return Err(Error::ServerStart {
            what: "javac TranslateOffsets.java".into(),
            reason: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    let staged = work.keep();
    if std::fs::rename(&staged, &dest).is_err() {
        // Another test got there first.
        let _ = std::fs::remove_dir_all(&staged);
    }
    Ok(dest)
}

#[cfg(test)]
mod tests;
