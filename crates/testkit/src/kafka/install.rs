//! Where the JDK and the Apache Kafka / MirrorMaker 2 classpaths are.
//!
//! `scripts/install-brokers` resolves them through Maven (the poms in `crates/testkit/kafka/`)
//! into `.tools/kafka/` and writes `.tools/kafka/env`, three `KEY=value` lines:
//! `JAVA` (the java binary it chose), `KAFKA_LIBS` and `MM2_LIBS` (folders of jars). Each can
//! be overridden by an environment variable ([`JAVA_ENV`], [`KAFKA_LIBS_ENV`], [`MM2_LIBS_ENV`]).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::paths::workspace_root;

/// Overrides the java binary.
pub const JAVA_ENV: &str = "STRAIT_JAVA";
/// Overrides the folder of the broker's jars.
pub const KAFKA_LIBS_ENV: &str = "STRAIT_KAFKA_LIBS";
/// Overrides the folder of MirrorMaker 2's jars.
pub const MM2_LIBS_ENV: &str = "STRAIT_MM2_LIBS";

/// A JDK and a folder of jars: what one JVM process needs.
#[derive(Debug, Clone)]
pub struct JavaInstall {
    /// The `java` binary.
    pub java: PathBuf,
    /// The folder whose `*.jar` files are the classpath.
    pub libs: PathBuf,
}

impl JavaInstall {
    /// The classpath argument: `<libs>/*` (the JVM expands the wildcard).
    pub fn classpath(&self) -> String {
        format!("{}/*", self.libs.display())
    }

    /// The version in the name of the first jar called `<prefix>-<version>.jar`
    /// (`kafka_2.13` gives the broker's, `connect-mirror` MirrorMaker 2's).
    pub fn jar_version(&self, prefix: &str) -> Option<String> {
        let entries = std::fs::read_dir(&self.libs).ok()?;
        entries.flatten().find_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
            let version = rest.strip_suffix(".jar")?;
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then(|| version.to_owned())
        })
    }
}

/// The broker's install: java and the `kafka_2.13` classpath.
pub fn broker() -> Result<JavaInstall> {
    locate("KAFKA_LIBS", KAFKA_LIBS_ENV, "kafka_2.13")
}

/// MirrorMaker 2's install: java and the `connect-mirror` classpath.
pub fn mm2() -> Result<JavaInstall> {
    locate("MM2_LIBS", MM2_LIBS_ENV, "connect-mirror")
}

fn env_file() -> PathBuf {
    workspace_root().join(".tools").join("kafka").join("env")
}

fn locate(key: &str, env: &str, marker_jar: &str) -> Result<JavaInstall> {
    let file = env_file();
    let recorded = std::fs::read_to_string(&file).unwrap_or_default();
    let value = |k: &str, var: &str| -> Option<PathBuf> {
        match std::env::var_os(var) {
            Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
            _ => parse_env(&recorded, k).map(PathBuf::from),
        }
    };
    let missing = |what: String| Error::KafkaMissing {
        what,
        env_file: file.clone(),
    };
    let java = value("JAVA", JAVA_ENV).ok_or_else(|| missing("the java binary".into()))?;
    let libs = value(key, env).ok_or_else(|| missing(format!("{key} (a folder of jars)")))?;
    if !java.is_file() {
        return Err(missing(format!("java at {}", java.display())));
    }
    let install = JavaInstall { java, libs };
    if install.jar_version(marker_jar).is_none() {
        return Err(missing(format!(
            "{marker_jar}-<version>.jar in {}",
            install.libs.display()
        )));
    }
    Ok(install)
}

/// The value of `key` in `KEY=value` lines.
fn parse_env<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// Whether `path` is a folder holding at least one jar (for diagnostics).
pub fn has_jars(path: &Path) -> bool {
    std::fs::read_dir(path)
        .map(|d| {
            d.flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "jar"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests;
