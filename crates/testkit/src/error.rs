//! The one error type of the testkit.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while starting brokers, running the librdkafka helper or
/// talking raw Kafka protocol. Messages are written for a human reading a failed test.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Tansu binary is not where we looked.
    #[error(
        "Tansu broker binary not found at {}: run scripts/install-brokers (or set STRAIT_TANSU_BIN)",
        path.display()
    )]
    TansuMissing {
        /// Where we looked.
        path: PathBuf,
    },
    /// The Python interpreter (with confluent-kafka) is not where we looked.
    #[error(
        "Python with confluent-kafka not found at {}: run scripts/install-brokers (or set STRAIT_PYTHON)",
        path.display()
    )]
    PythonMissing {
        /// Where we looked.
        path: PathBuf,
    },
    /// Java or the Apache Kafka / MirrorMaker 2 jars are not where `scripts/install-brokers`
    /// records them.
    #[error(
        "Apache Kafka test install incomplete: {what} not found (recorded in {}): run \
         scripts/install-brokers (or set STRAIT_JAVA, STRAIT_KAFKA_LIBS, STRAIT_MM2_LIBS)",
        env_file.display()
    )]
    KafkaMissing {
        /// What is missing.
        what: String,
        /// The file install-brokers writes.
        env_file: PathBuf,
    },
    /// A broker did not come up (or exited) before its startup deadline.
    #[error(
        "broker {name} did not start on 127.0.0.1:{port} within {timeout:?}: {reason}\n\
         --- log tail ({}) ---\n{log_tail}",
        log.display()
    )]
    BrokerStart {
        /// The broker's name (also its cluster id and storage name).
        name: String,
        /// The port it was asked to listen on.
        port: u16,
        /// The startup deadline.
        timeout: Duration,
        /// What happened.
        reason: String,
        /// The log file.
        log: PathBuf,
        /// The last lines of the log.
        log_tail: String,
    },
    /// A helper server (TLS/SASL front end, token endpoint, PKI generator) did not start.
    #[error("{what} did not start: {reason}\n--- stderr ---\n{stderr}")]
    ServerStart {
        /// Which helper.
        what: String,
        /// What happened.
        reason: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A Kafka response did not look like what we asked for.
    #[error("Kafka protocol: {0}")]
    Protocol(String),
    /// The librdkafka helper script failed or timed out.
    #[error("rdkafka_tool.py {command} failed ({status}): {message}\n--- stderr ---\n{stderr}")]
    Tool {
        /// The subcommand.
        command: String,
        /// Exit status, or "timed out".
        status: String,
        /// The error the script reported, if any.
        message: String,
        /// The script's stderr (librdkafka logs and Python tracebacks).
        stderr: String,
    },
    /// Network namespaces can't be used here (not root, no `ip`, no netns support).
    #[error(
        "network namespaces are not available: {reason} (these tests need root and \
         iproute2: `ip netns add`, veth, `tc qdisc ... tbf`)"
    )]
    NetnsUnavailable {
        /// What the check found.
        reason: String,
    },
    /// An `ip` or `tc` command setting up or changing a network namespace failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Netns {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The helper script printed something that is not the JSON we expected.
    #[error(
        "rdkafka_tool.py {command} printed unexpected output: {reason}\n--- stdout ---\n{stdout}"
    )]
    ToolOutput {
        /// The subcommand.
        command: String,
        /// Why it was rejected.
        reason: String,
        /// What it printed (truncated).
        stdout: String,
    },
}

/// `Result` with the testkit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps an `io::Error` with context; for `map_err`.
pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}
