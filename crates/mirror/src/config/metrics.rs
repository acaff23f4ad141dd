//! `[metrics]`: the Prometheus `/metrics` and `/health` endpoint — the file's form, the
//! resolved form ([`MetricsEndpoint`]) and its checks.
//!
//! The basic auth password is never shown: not by `Debug`, not in a problem.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::defaults as d;
use super::problem::{KeyPath, Problem, duration_out_of_range};
use super::units::HumanDuration;

/// `stalled_after` bounds.
const STALLED_AFTER_BOUNDS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));

/// The Prometheus endpoint.
///
/// `Debug` is written by hand: it never shows `basic_auth_password`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSpec {
    /// Serve `/metrics` and `/health`.
    pub enabled: bool,
    /// `ip:port` to listen on.
    pub listen: String,
    /// Most connections served at once; a connection past it is closed as soon as it is
    /// accepted.
    pub max_connections: usize,
    /// Time a client has to finish the TLS handshake and send its request head.
    pub read_timeout: HumanDuration,
    /// Time the response may take to be written once the request is read (a client that
    /// does not read is dropped after it).
    pub write_timeout: HumanDuration,
    /// `/health` reports a partition that is behind its source end with nothing
    /// acknowledged for this long as stalled.
    pub stalled_after: HumanDuration,
    /// PEM certificate chain: serve HTTPS (with `tls_key_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of `tls_cert_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key_file: Option<PathBuf>,
    /// HTTP basic auth user for `/metrics` (with `basic_auth_password`); `/health` stays open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_auth_username: Option<String>,
    /// HTTP basic auth password; write `"${ENV_VAR}"` to keep it out of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_auth_password: Option<String>,
}

impl fmt::Debug for MetricsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsSpec")
            .field("enabled", &self.enabled)
            .field("listen", &self.listen)
            .field("max_connections", &self.max_connections)
            .field("read_timeout", &self.read_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("stalled_after", &self.stalled_after)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_key_file", &self.tls_key_file)
            .field("basic_auth_username", &self.basic_auth_username)
            .field(
                "basic_auth_password",
                &self.basic_auth_password.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Default for MetricsSpec {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: d::METRICS_LISTEN.to_owned(),
            max_connections: d::METRICS_MAX_CONNECTIONS,
            read_timeout: d::METRICS_READ_TIMEOUT,
            write_timeout: d::METRICS_WRITE_TIMEOUT,
            stalled_after: d::METRICS_STALLED_AFTER,
            tls_cert_file: None,
            tls_key_file: None,
            basic_auth_username: None,
            basic_auth_password: None,
        }
    }
}

/// The `/metrics` and `/health` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsEndpoint {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Most connections served at once; more are closed when accepted.
    pub max_connections: usize,
    /// Deadline for the TLS handshake and the request head.
    pub read_timeout: Duration,
    /// Deadline for writing the response once the request is read.
    pub write_timeout: Duration,
    /// `/health` reports a partition behind with nothing acknowledged for this long.
    pub stalled_after: Duration,
    /// Serve HTTPS with this certificate.
    pub tls: Option<MetricsTls>,
    /// Require HTTP basic auth on `/metrics`.
    pub basic_auth: Option<MetricsBasicAuth>,
}

impl MetricsEndpoint {
    /// Plain HTTP on `listen` with the default limits.
    pub fn plain(listen: SocketAddr) -> Self {
        MetricsEndpoint {
            listen,
            max_connections: d::METRICS_MAX_CONNECTIONS,
            read_timeout: d::METRICS_READ_TIMEOUT.0,
            write_timeout: d::METRICS_WRITE_TIMEOUT.0,
            stalled_after: d::METRICS_STALLED_AFTER.0,
            tls: None,
            basic_auth: None,
        }
    }
}

impl From<SocketAddr> for MetricsEndpoint {
    fn from(listen: SocketAddr) -> Self {
        Self::plain(listen)
    }
}

/// PEM files of the endpoint's certificate chain and private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsTls {
    /// Certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// The leaf's private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
}

/// HTTP basic auth credentials. `Debug` shows the user name only.
#[derive(Clone, PartialEq, Eq)]
pub struct MetricsBasicAuth {
    /// User name.
    pub username: String,
    password: String,
}

impl MetricsBasicAuth {
    /// Credentials `username` / `password`.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        MetricsBasicAuth {
            username: username.into(),
            password: password.into(),
        }
    }

    /// The password (a secret: never log it).
    pub fn password(&self) -> &str {
        &self.password
    }
}

impl fmt::Debug for MetricsBasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsBasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Checks `spec` (at `at`, the `metrics` table, when enabled); every problem goes to
/// `problems`.
pub fn resolve(
    spec: &MetricsSpec,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<MetricsEndpoint> {
    let before = problems.len();
    let listen = listen(spec, at, problems);
    check_limits(spec, at, problems);
    let tls = tls(spec, at, problems);
    let basic_auth = basic_auth(spec, at, problems);
    if problems.len() != before {
        return None;
    }
    Some(MetricsEndpoint {
        listen: listen?,
        max_connections: spec.max_connections,
        read_timeout: spec.read_timeout.0,
        write_timeout: spec.write_timeout.0,
        stalled_after: spec.stalled_after.0,
        tls,
        basic_auth,
    })
}

/// `listen`, parsed as an `ip:port`.
fn listen(spec: &MetricsSpec, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<SocketAddr> {
    match spec.listen.parse::<SocketAddr>() {
        Ok(addr) => Some(addr),
        Err(_) => {
            problems.push(
                Problem::new(
                    at.key("listen"),
                    format!("invalid listen address \"{}\"", spec.listen),
                )
                .expected("an `ip:port` such as \"0.0.0.0:9464\""),
            );
            None
        }
    }
}

/// Checks `max_connections`, the read and write timeouts and `stalled_after` against
/// their bounds.
fn check_limits(spec: &MetricsSpec, at: &KeyPath, problems: &mut Vec<Problem>) {
    if !(1..=10_000).contains(&spec.max_connections) {
        problems.push(
            Problem::new(
                at.key("max_connections"),
                format!("{} is out of range", spec.max_connections),
            )
            .expected("1..=10000"),
        );
    }
    for (key, t) in [
        ("read_timeout", spec.read_timeout),
        ("write_timeout", spec.write_timeout),
    ] {
        if t.0.is_zero() || t.0 > Duration::from_secs(300) {
            problems.push(
                Problem::new(at.key(key), format!("{t} is out of range"))
                    .expected("more than 0s and at most 5m"),
            );
        }
    }
    problems.extend(duration_out_of_range(
        at.key("stalled_after"),
        spec.stalled_after,
        STALLED_AFTER_BOUNDS,
    ));
}

/// `tls_cert_file` and `tls_key_file`: both (HTTPS) or neither (plain HTTP).
fn tls(spec: &MetricsSpec, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<MetricsTls> {
    match (&spec.tls_cert_file, &spec.tls_key_file) {
        (Some(cert), Some(key)) => Some(MetricsTls {
            cert_file: cert.clone(),
            key_file: key.clone(),
        }),
        (None, None) => None,
        (cert, _) => {
            let (set, missing) = if cert.is_some() {
                ("tls_cert_file", "tls_key_file")
            } else {
                ("tls_key_file", "tls_cert_file")
            };
            problems.push(
                Problem::new(at.key(missing), format!("missing while `{set}` is set"))
                    .expected("both `tls_cert_file` and `tls_key_file`, or neither"),
            );
            None
        }
    }
}

/// `basic_auth_username` and `basic_auth_password`: both (HTTP Basic authentication) or
/// neither.
fn basic_auth(
    spec: &MetricsSpec,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<MetricsBasicAuth> {
    match (&spec.basic_auth_username, &spec.basic_auth_password) {
        (Some(user), Some(password)) => {
            if user.is_empty() || user.contains(':') {
                problems.push(
                    Problem::new(at.key("basic_auth_username"), "is empty or contains `:`")
                        .expected("a non-empty user name without `:` (RFC 7617)"),
                );
            }
            if password.is_empty() {
                // Never echo the value: it is a secret.
                problems.push(
                    Problem::new(at.key("basic_auth_password"), "is empty")
                        .expected("a password, e.g. \"${METRICS_PASSWORD}\""),
                );
            }
            Some(MetricsBasicAuth::new(user.clone(), password.clone()))
        }
        (None, None) => None,
        (user, _) => {
            let (set, missing) = if user.is_some() {
                ("basic_auth_username", "basic_auth_password")
            } else {
                ("basic_auth_password", "basic_auth_username")
            };
            problems.push(
                Problem::new(at.key(missing), format!("missing while `{set}` is set"))
                    .expected("both `basic_auth_username` and `basic_auth_password`, or neither"),
            );
            None
        }
    }
}
