//! The TLS / SASL front end: its options ([`FrontOptions`], [`TlsOptions`],
//! [`SaslOptions`]), the running `py/secure_front.py` ([`SecureFront`], its [`FrontEvent`]s)
//! and a Tansu broker that advertises it ([`SecureBroker`]).

use std::ffi::OsString;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::pki::TestPki;
use super::py_server::{DEFAULT_STARTUP, PyServer, tail_lines, temp_dir, write_private};
use crate::broker::{BrokerOptions, TansuBroker};
use crate::error::{Error, Result, io};

/// A TLS protocol version bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2.
    V1_2,
    /// TLS 1.3.
    V1_3,
}

impl TlsVersion {
    fn as_str(self) -> &'static str {
        match self {
            TlsVersion::V1_2 => "1.2",
            TlsVersion::V1_3 => "1.3",
        }
    }
}

/// The front end's TLS side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Server certificate (PEM; may be a chain).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// Require a client certificate signed by this CA (mutual TLS). `None`: none asked.
    pub client_ca: Option<PathBuf>,
    /// Lowest accepted version (default 1.2).
    pub min_version: TlsVersion,
    /// Highest accepted version (default 1.3).
    pub max_version: TlsVersion,
}

impl TlsOptions {
    /// The PKI's server cert (127.0.0.1 + localhost), no client certificate asked.
    pub fn server(pki: &TestPki) -> Self {
        Self::with_cert(&pki.server_cert, &pki.server_key)
    }

    /// The PKI's server cert, client certificates required (signed by the PKI's CA).
    pub fn mutual(pki: &TestPki) -> Self {
        Self {
            client_ca: Some(pki.ca_cert.clone()),
            ..Self::server(pki)
        }
    }

    /// Any certificate and key (the expired or wrong-host ones, say).
    pub fn with_cert(cert: &Path, key: &Path) -> Self {
        Self {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            client_ca: None,
            min_version: TlsVersion::V1_2,
            max_version: TlsVersion::V1_3,
        }
    }

    /// Only this TLS version.
    pub fn only(mut self, version: TlsVersion) -> Self {
        self.min_version = version;
        self.max_version = version;
        self
    }
}

/// A SASL mechanism the front end can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// PLAIN (RFC 4616) against the user table.
    Plain,
    /// SCRAM-SHA-256 (RFC 5802/7677) against the user table.
    ScramSha256,
    /// SCRAM-SHA-512 against the user table.
    ScramSha512,
    /// OAUTHBEARER (RFC 7628) with HS256 JWTs signed with [`SaslOptions::oauth_secret`].
    OAuthBearer,
}

impl SaslMechanism {
    /// Every mechanism.
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ];

    /// The Kafka name (`sasl.mechanism`).
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }
}

/// The front end's SASL side.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SaslOptions {
    /// Enabled mechanisms, in the order SaslHandshake lists them.
    pub mechanisms: Vec<SaslMechanism>,
    /// `(user, password)` for PLAIN and SCRAM.
    pub users: Vec<(String, String)>,
    /// The HS256 key OAUTHBEARER tokens must be signed with ([`TokenEndpoint::secret`](super::TokenEndpoint::secret)).
    pub oauth_secret: Option<String>,
}

impl std::fmt::Debug for SaslOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let users: Vec<&str> = self.users.iter().map(|(u, _)| u.as_str()).collect();
        f.debug_struct("SaslOptions")
            .field("mechanisms", &self.mechanisms)
            .field("users", &users)
            .field("oauth_secret", &self.oauth_secret.as_ref().map(|_| "***"))
            .finish()
    }
}

impl SaslOptions {
    /// These mechanisms, no users yet.
    pub fn new(mechanisms: &[SaslMechanism]) -> Self {
        Self {
            mechanisms: mechanisms.to_vec(),
            ..Self::default()
        }
    }

    /// Adds a user (PLAIN and SCRAM).
    pub fn user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.users.push((name.into(), password.into()));
        self
    }

    /// Sets the OAUTHBEARER token key (see [`TokenEndpoint::secret`](super::TokenEndpoint::secret)).
    pub fn oauth_secret(mut self, secret: impl Into<String>) -> Self {
        self.oauth_secret = Some(secret.into());
        self
    }
}

/// How to start a [`SecureFront`]. `Default`: plain TCP relay, no TLS, no SASL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontOptions {
    /// TLS, or plaintext.
    pub tls: Option<TlsOptions>,
    /// SASL, or none.
    pub sasl: Option<SaslOptions>,
    /// KIP-368 session lifetime sent in SaslAuthenticate v1+; the connection is closed on
    /// its next non-SASL request once it passes without re-authentication. `None`: 0,
    /// sessions never expire.
    pub session_lifetime: Option<Duration>,
    /// A fixed listening port instead of a free one.
    pub port: Option<u16>,
    /// How long to wait for the front end to listen (default 20 s).
    pub startup_timeout: Duration,
}

impl Default for FrontOptions {
    fn default() -> Self {
        Self {
            tls: None,
            sasl: None,
            session_lifetime: None,
            port: None,
            startup_timeout: DEFAULT_STARTUP,
        }
    }
}

impl FrontOptions {
    /// TLS with the PKI's server cert (librdkafka: `security.protocol=SSL`).
    pub fn tls(pki: &TestPki) -> Self {
        Self {
            tls: Some(TlsOptions::server(pki)),
            ..Self::default()
        }
    }

    /// Mutual TLS: client certificates signed by the PKI's CA are required.
    pub fn mutual_tls(pki: &TestPki) -> Self {
        Self {
            tls: Some(TlsOptions::mutual(pki)),
            ..Self::default()
        }
    }

    /// TLS plus SASL (`security.protocol=SASL_SSL`).
    pub fn sasl_ssl(pki: &TestPki, sasl: SaslOptions) -> Self {
        Self {
            tls: Some(TlsOptions::server(pki)),
            sasl: Some(sasl),
            ..Self::default()
        }
    }

    /// SASL without TLS (`security.protocol=SASL_PLAINTEXT`).
    pub fn sasl_plaintext(sasl: SaslOptions) -> Self {
        Self {
            sasl: Some(sasl),
            ..Self::default()
        }
    }

    /// Sets [`session_lifetime`](Self::session_lifetime).
    pub fn with_session_lifetime(mut self, lifetime: Duration) -> Self {
        self.session_lifetime = Some(lifetime);
        self
    }
}

/// One event line of a [`SecureFront`] (see the [`secure`](super) module doc for names and fields).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FrontEvent {
    /// Unix time, seconds.
    pub ts: f64,
    /// `accepted`, `tls_ok`, `auth_ok`, `reauth_ok`, `auth_failed`, `session_expired`, ...
    pub event: String,
    /// Connection number (1, 2, ... in accept order); `None` for process-wide events.
    pub conn: Option<u64>,
    /// SASL mechanism, for auth events.
    pub mechanism: Option<String>,
    /// SASL principal, for auth events (when known).
    pub user: Option<String>,
    /// Why: for `auth_failed`, `closed`, ...
    pub reason: Option<String>,
    /// The TLS error, for `tls_failed`.
    pub error: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// Whether `e` is a `tls_failed` event of a TLS refusal rather than of the peer going
/// away mid-handshake (see [`SecureFront::tls_refusals`]).
fn is_tls_refusal(e: &FrontEvent) -> bool {
    let gone = |err: &str| {
        err.starts_with("ConnectionResetError")
            || err.starts_with("BrokenPipeError")
            || err.contains("EOF")
    };
    e.event == "tls_failed" && !e.error.as_deref().is_some_and(gone)
}

/// A running `secure_front.py`: TLS and/or SASL in front of one broker, killed on drop
/// (and exiting by itself if this process dies).
#[derive(Debug)]
pub struct SecureFront {
    server: PyServer,
    options: FrontOptions,
    upstream: Option<SocketAddr>,
}

impl SecureFront {
    /// Starts a front end forwarding to `upstream` and waits until it listens.
    ///
    /// Clients that follow Metadata will connect to what the broker advertises, bypassing
    /// the front end: use [`SecureBroker`] for a broker that advertises the front end.
    pub fn start(upstream: SocketAddr, options: FrontOptions) -> Result<Self> {
        let mut front = Self::spawn(options)?;
        front.set_upstream(upstream)?;
        Ok(front)
    }

    /// Starts the process without an upstream (connections wait for one).
    fn spawn(options: FrontOptions) -> Result<Self> {
        let dir = temp_dir("strait-secure-front-")?;
        let mut args: Vec<OsString> = vec![
            "--upstream-stdin".into(),
            "--port".into(),
            options.port.unwrap_or(0).to_string().into(),
            "--events".into(),
            dir.path().join("events.jsonl").into(),
        ];
        if let Some(tls) = &options.tls {
            args.extend([
                "--tls-cert".into(),
                tls.cert.clone().into(),
                "--tls-key".into(),
                tls.key.clone().into(),
                "--tls-min".into(),
                tls.min_version.as_str().into(),
                "--tls-max".into(),
                tls.max_version.as_str().into(),
            ]);
            if let Some(ca) = &tls.client_ca {
                args.extend(["--tls-client-ca".into(), ca.clone().into()]);
            }
        }
        if let Some(sasl) = &options.sasl {
            let names: Vec<&str> = sasl.mechanisms.iter().map(|m| m.as_str()).collect();
            args.extend(["--sasl".into(), names.join(",").into()]);
            let users: serde_json::Map<String, serde_json::Value> = sasl
                .users
                .iter()
                .map(|(u, p)| (u.clone(), serde_json::Value::String(p.clone())))
                .collect();
            let users_file = dir.path().join("users.json");
            write_private(
                &users_file,
                serde_json::Value::Object(users).to_string().as_bytes(),
            )?;
            args.extend(["--users-file".into(), users_file.into()]);
            if let Some(secret) = &sasl.oauth_secret {
                let secret_file = dir.path().join("oauth.secret");
                write_private(&secret_file, secret.as_bytes())?;
                args.extend(["--oauth-secret-file".into(), secret_file.into()]);
            }
        }
        if let Some(lifetime) = options.session_lifetime {
            args.extend([
                "--session-lifetime-ms".into(),
                lifetime.as_millis().max(1).to_string().into(),
            ]);
        }
        let server = PyServer::spawn(
            "secure_front.py",
            "secure_front.py",
            args,
            dir,
            options.startup_timeout,
        )?;
        Ok(Self {
            server,
            options,
            upstream: None,
        })
    }

    fn set_upstream(&mut self, upstream: SocketAddr) -> Result<()> {
        self.server.send_line(&upstream.to_string())?;
        self.upstream = Some(upstream);
        Ok(())
    }

    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.server.port)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.server.port))
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The broker it forwards to.
    pub fn upstream(&self) -> Option<SocketAddr> {
        self.upstream
    }

    /// The options it was started with.
    pub fn options(&self) -> &FrontOptions {
        &self.options
    }

    /// The event log (JSON lines).
    pub fn events_path(&self) -> &Path {
        &self.server.events_path
    }

    /// Every event so far, in order. A line being written at this moment is skipped.
    pub fn events(&self) -> Result<Vec<FrontEvent>> {
        let text = match fs::read_to_string(&self.server.events_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io("reading the front end's events")(e)),
        };
        let mut out = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_str::<FrontEvent>(line) {
                Ok(e) => out.push(e),
                // Only the last line can be half written.
                Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
                Err(e) => {
                    return Err(Error::Protocol(format!("bad event line {line:?}: {e}")));
                }
            }
        }
        Ok(out)
    }

    /// How many events named `event` so far (0 if the log cannot be read).
    pub fn count(&self, event: &str) -> usize {
        self.events()
            .map(|es| es.iter().filter(|e| e.event == event).count())
            .unwrap_or(0)
    }

    /// The `tls_failed` events that are a TLS refusal (an SSL error such as an unknown
    /// CA, or a handshake that timed out), not the peer going away mid-handshake (a
    /// connection reset, a broken pipe, an EOF): librdkafka drops connections of its own
    /// that way, and so does a client whose connect timeout ran out on a loaded machine.
    pub fn tls_refusals(&self) -> usize {
        self.events()
            .map(|es| es.iter().filter(|e| is_tls_refusal(e)).count())
            .unwrap_or(0)
    }

    /// Waits until at least `n` events named `event` were logged; returns the count, or
    /// an error (with the events so far) after `timeout`.
    pub fn wait_for(&self, event: &str, n: usize, timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.count(event);
            if got >= n {
                return Ok(got);
            }
            if Instant::now() >= deadline {
                return Err(Error::Protocol(format!(
                    "{got} {event:?} events after {timeout:?}, wanted {n}; events:\n{}",
                    tail_lines(&self.server.events_path, 30)
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last `lines` lines of its stderr (Python tracebacks).
    pub fn stderr_tail(&self, lines: usize) -> String {
        self.server.stderr_tail(lines)
    }

    /// Kills the front end; clients see their connections reset. Idempotent.
    pub fn kill(&mut self) {
        self.server.kill();
    }
}

/// A Tansu broker behind a [`SecureFront`]: the broker advertises the front end's port in
/// Metadata, so every connection a client makes (bootstrap and after) goes through the
/// front end. `broker.bootstrap()` still reaches Tansu directly, without security (for
/// setup and checks). Dropping it kills both (the front end first).
#[derive(Debug)]
pub struct SecureBroker {
    /// The front end (give clients [`SecureBroker::bootstrap`]).
    pub front: SecureFront,
    /// The broker behind it.
    pub broker: TansuBroker,
}

impl SecureBroker {
    /// A default broker behind a front end with these options.
    pub fn start(front: FrontOptions) -> Result<Self> {
        Self::start_with(front, BrokerOptions::default())
    }

    /// A broker with `broker` options (its `advertised_port` is replaced) behind a front
    /// end with `front` options.
    pub fn start_with(front: FrontOptions, broker: BrokerOptions) -> Result<Self> {
        let mut front = SecureFront::spawn(front)?;
        let broker = TansuBroker::start_with(BrokerOptions {
            advertised_port: Some(front.port()),
            ..broker
        })?;
        front.set_upstream(broker.addr())?;
        Ok(Self { front, broker })
    }

    /// The front end's `127.0.0.1:PORT`, for clients' `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.front.bootstrap()
    }

    /// The two halves (drop the front end first if the order matters to you).
    pub fn into_parts(self) -> (TansuBroker, SecureFront) {
        (self.broker, self.front)
    }
}

#[cfg(test)]
mod tests;
