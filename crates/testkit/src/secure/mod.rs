//! TLS, SASL and OAuth servers for client security tests: [`TestPki`], [`SecureFront`],
//! [`SecureBroker`] and [`TokenEndpoint`].
//!
//! Tansu's own TLS and SASL are unusable (docs/compatibility.md, "Security"), so the
//! server side is built here from implementations that share nothing
//! with Strait's client: Python's `ssl` module (OpenSSL) for TLS, the `scramp` package for
//! SCRAM, `cryptography` for certificates. Each is proven with librdkafka (confluent-kafka)
//! in `tests/secure.rs` before Strait's own client is tested against it.
//!
//! | piece | script | what it implements |
//! |---|---|---|
//! | [`TestPki`] | `py/test_pki.py` | a CA, server/client certs (EC P-256 and RSA-2048 keys, PKCS#8 plus SEC1 and PKCS#1 copies), an expired server cert, a wrong-host cert, a second unrelated CA with its own server and client certs |
//! | [`SecureFront`] | `py/secure_front.py` | a TCP front end for one Tansu broker: TLS 1.2/1.3 (optionally mutual), SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (KIP-152 framing: SaslHandshake v1, SaslAuthenticate v0-v2), KIP-368 re-authentication, one JSON event line per connection step |
//! | [`SecureBroker`] | - | a Tansu broker that **advertises the front end's port**, so every connection a client opens after Metadata goes through the front end too |
//! | [`TokenEndpoint`] | `py/token_endpoint.py` | an HTTPS OAuth 2.0 token endpoint for the client-credentials grant (RFC 6749 section 4.4, KIP-768) issuing HS256 JWTs the front end validates; also mints tokens into files |
//!
//! ```no_run
//! # fn main() -> strait_testkit::Result<()> {
//! use strait_testkit::rdkafka::{self, ClientConfig};
//! use strait_testkit::secure::{FrontOptions, SaslMechanism, SaslOptions, SecureBroker, TestPki};
//!
//! let pki = TestPki::generate_temp()?;
//! let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512]).user("alice", "alice-secret");
//! let secure = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl))?;
//! let client = ClientConfig::new()
//!     .set("security.protocol", "SASL_SSL")
//!     .set("ssl.ca.location", pki.ca_cert.to_string_lossy())
//!     .set("sasl.mechanism", "SCRAM-SHA-512")
//!     .set("sasl.username", "alice")
//!     .set("sasl.password", "alice-secret");
//! rdkafka::create_topic_with(&secure.bootstrap(), "t", 1, &[], &client)?;
//! assert_eq!(secure.front.count("auth_ok"), 1);
//! # Ok(()) }
//! ```
//!
//! # The front end
//!
//! Without SASL it relays bytes (after the TLS handshake, if TLS is on). With SASL it reads
//! Kafka request frames. Before authentication it forwards ApiVersions to Tansu and makes
//! sure the response advertises SaslHandshake v0-1 and SaslAuthenticate v0-2 (Tansu 0.6
//! already does), answers SaslHandshake and SaslAuthenticate itself, and closes the
//! connection on any other request. After success every frame is forwarded byte for byte
//! in both directions (post-authentication ApiVersions is not rewritten). SaslHandshake and
//! SaslAuthenticate on an authenticated connection are a KIP-368 re-authentication: they
//! are answered after every earlier request on the connection has been answered, so
//! responses stay in request order (Produce with `acks=0` expects no response and is not
//! waited for). With a session lifetime, SaslAuthenticate v1+ responses carry
//! `session_lifetime_ms`; for OAUTHBEARER it is capped at the token's remaining lifetime,
//! as Kafka does. A connection whose session expired is closed on its next non-SASL
//! request (event `session_expired`), as Kafka's broker does.
//!
//! * Wrong password, unknown user, bad or expired token: SaslAuthenticate answers
//!   error 58 (SASL_AUTHENTICATION_FAILED) with an error message, then the connection is
//!   closed. For OAUTHBEARER the response's auth bytes carry the RFC 7628 error JSON
//!   `{"status":"invalid_token"}`.
//! * A mechanism that is not enabled: SaslHandshake answers 33 (UNSUPPORTED_SASL_MECHANISM)
//!   with the enabled list, then closes.
//! * Re-authentication must keep the mechanism and the principal (else error 58 and close).
//! * OAUTHBEARER tokens must be HS256 JWTs signed with the shared secret
//!   ([`TokenEndpoint::secret`]), with a non-empty `sub` (the principal) and an `exp` in
//!   the future. SASL extensions are accepted and ignored. `alg: none` (librdkafka's
//!   built-in unsecured tokens) is refused.
//! * SCRAM: 4096 iterations, no channel binding (`n,,`), saslname `=2C`/`=3D` decoded.
//!
//! ## How it differs from a real Kafka broker
//!
//! * **No authorization**: there are no ACLs; every authenticated principal may do
//!   everything Tansu allows. The principal is not passed on to Tansu.
//! * SaslHandshake v0 (raw SASL tokens outside Kafka framing) is refused; librdkafka and
//!   Java clients use v1 when the broker advertises it.
//! * OAUTHBEARER failure: Kafka first answers the client's token with the error JSON as a
//!   *challenge* (error code 0), waits for the client's `%x01` and then fails with 58. The
//!   front end answers 58 with the JSON at once (both are valid RFC 7628 outcomes from the
//!   client's point of view: authentication fails).
//! * No `connections.max.reauth.ms` negotiation beyond the fixed lifetime; no delegation
//!   tokens, no SCRAM `tokenauth` extension, no GSSAPI.
//! * The TLS principal (client certificate subject) is only reported in the `tls_ok` event.
//!
//! ## Event lines
//!
//! One JSON object per line in [`SecureFront::events_path`]:
//! `{"ts": unix-seconds, "event": NAME, "conn": N, ...}`. Names and their extra fields:
//! `listening` (port, tls, mutual_tls, sasl, session_lifetime_ms), `upstream` (upstream),
//! `accepted` (peer), `tls_ok` (version, cipher, client_subject), `tls_failed` (error),
//! `auth_ok` / `reauth_ok` (mechanism, user, session_lifetime_ms, api_version),
//! `auth_failed` / `reauth_failed` (mechanism, user, reason), `refused` (api_key,
//! api_version: a request before authentication), `session_expired` (mechanism, user,
//! api_key), `closed` (reason). Parsed by [`SecureFront::events`] into [`FrontEvent`].
//!
//! # The token endpoint
//!
//! POST (any path; [`TokenEndpoint::url`] ends in `/token`) with form
//! `grant_type=client_credentials` and an optional `scope`; client authentication by HTTP
//! Basic or by form `client_id`/`client_secret`. Answers
//! `{"access_token", "token_type": "bearer", "expires_in", "scope"}`; the JWT carries `sub`
//! (the client id), `iat`, `exp`, `iss` and `scope`. Wrong secret or unknown client: 401
//! `{"error":"invalid_client"}`; another grant type: 400 `unsupported_grant_type`. It does
//! not implement refresh tokens, JWKS, or any other grant.
//!
//! # librdkafka notes (2.16)
//!
//! * OIDC (`sasl.oauthbearer.method=oidc`): librdkafka fetches the token with its own
//!   HTTPS client (libcurl); the endpoint's CA is given by `https.ca.location` (the
//!   `ssl.ca.location` of the Kafka connection is not used for it). librdkafka does not
//!   verify the JWT's signature; it reads `exp` and `sub` from it.
//! * librdkafka re-authenticates (KIP-368) ahead of `session_lifetime_ms` on each
//!   connection; a connection that does not is closed at its next request after expiry
//!   (event `session_expired`), after which librdkafka reconnects.
//! * A refused connection is retried forever by default: tests use
//!   [`rdkafka::check_connect`](crate::rdkafka::check_connect), which stops at the first
//!   `_AUTHENTICATION` / `_SSL` / `_ALL_BROKERS_DOWN` error librdkafka reports (within a
//!   second here).
//! * librdkafka **forgets the bootstrap address** once Metadata has named the brokers
//!   (the `.../bootstrap` broker is decommissioned), so a front end in front of a broker
//!   that advertises itself only works for the first request: use [`SecureBroker`].
//! * Its TLS error text is the same for an untrusted CA, an expired certificate and a
//!   wrong host name ("certificate verify failed: broker certificate could not be
//!   verified"). The alert it sends does say which; the front end logs it in
//!   `tls_failed`: `UNKNOWN_CA`, `CERTIFICATE_EXPIRED`, `BAD_CERTIFICATE` (wrong host).
//! * Host names are checked by default (`ssl.endpoint.identification.algorithm=https`);
//!   `127.0.0.1` matches the IP SAN of the server cert.
//! * Mutual TLS refusal over TLS 1.3: the server's alert arrives after the client
//!   considers the handshake done, so librdkafka reports no `_SSL` error, only
//!   `_ALL_BROKERS_DOWN`; the front end logs `PEER_DID_NOT_RETURN_A_CERTIFICATE` or
//!   `CERTIFICATE_VERIFY_FAILED`.
//! * It reads RSA PKCS#1, RSA PKCS#8, EC SEC1 and EC PKCS#8 client keys alike.
//! * SaslAuthenticate: librdkafka 2.16 uses v1 (so it gets `session_lifetime_ms`).
//! * With an `oauth_cb` (the token-file mode of the helper), librdkafka will not set a
//!   token whose expiry has passed, and the client constructor then fails after 10 s
//!   ("OAuth token not set within 10 seconds timeout"): the helper reports at least a
//!   minute of lifetime so an expired token reaches the front end, which refuses it.
//! * A wrong OIDC client secret: the endpoint answers 401 and librdkafka reports
//!   `_AUTHENTICATION: Failed to acquire SASL OAUTHBEARER token: {"error":
//!   "invalid_client"}`; it never offers the front end a token (no `auth_failed` there).
//! * Re-authentication seen in `tests/secure.rs` (2.5 s sessions, ~8 s of traffic on one
//!   producer and one consumer): 11 re-authentications over 7 connections, no session
//!   expiry closes, nothing lost.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::broker::{BrokerOptions, TansuBroker};
use crate::error::{Error, Result, io};
use crate::paths;

const DEFAULT_STARTUP: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------
// PKI
// ---------------------------------------------------------------------------------------

/// A throwaway PKI: PEM files written by `py/test_pki.py`. Every field except `dir` is the
/// absolute path of one file in `dir`. Keys are unencrypted; certificates are valid from
/// an hour ago for 30 days (except `expired_cert`).
#[derive(Debug, Deserialize)]
pub struct TestPki {
    /// The directory holding every file.
    #[serde(skip)]
    pub dir: PathBuf,
    /// `ca.pem`: the test CA (EC P-256), the trust anchor for everything below that is
    /// not `other_*`.
    pub ca_cert: PathBuf,
    /// `ca.key` (PKCS#8).
    pub ca_key: PathBuf,
    /// `server.pem`: CN=localhost, SAN IP 127.0.0.1 and DNS localhost, RSA-2048 key.
    pub server_cert: PathBuf,
    /// `server.key` (RSA, PKCS#8).
    pub server_key: PathBuf,
    /// `server-chain.pem`: `server.pem` followed by `ca.pem`.
    pub server_chain: PathBuf,
    /// `client.pem`: CN=strait-client, clientAuth, EC P-256 key.
    pub client_cert: PathBuf,
    /// `client.key`: the EC key in PKCS#8 (`BEGIN PRIVATE KEY`).
    pub client_key: PathBuf,
    /// `client.sec1.key`: the same EC key in SEC1 form (`BEGIN EC PRIVATE KEY`).
    pub client_key_sec1: PathBuf,
    /// `client-bundle.pem`: `client.pem` followed by `client.key`.
    pub client_bundle: PathBuf,
    /// `client-rsa.pem`: CN=strait-client-rsa, clientAuth, RSA-2048 key.
    pub client_rsa_cert: PathBuf,
    /// `client-rsa.key`: the RSA key in PKCS#8.
    pub client_rsa_key: PathBuf,
    /// `client-rsa.pkcs1.key`: the same RSA key in PKCS#1 (`BEGIN RSA PRIVATE KEY`).
    pub client_rsa_key_pkcs1: PathBuf,
    /// `expired.pem`: like the server cert (127.0.0.1 + localhost) but expired a day ago.
    pub expired_cert: PathBuf,
    /// `expired.key` (EC, PKCS#8).
    pub expired_key: PathBuf,
    /// `wrong-host.pem`: signed by the CA, SAN only DNS `wrong.example`.
    pub wrong_host_cert: PathBuf,
    /// `wrong-host.key` (EC, PKCS#8).
    pub wrong_host_key: PathBuf,
    /// `other-ca.pem`: an unrelated CA.
    pub other_ca_cert: PathBuf,
    /// `other-ca.key`.
    pub other_ca_key: PathBuf,
    /// `other-server.pem`: a server cert for 127.0.0.1 + localhost signed by `other-ca`.
    pub other_server_cert: PathBuf,
    /// `other-server.key`.
    pub other_server_key: PathBuf,
    /// `other-client.pem`: a client cert signed by `other-ca` (mutual TLS refuses it).
    pub other_client_cert: PathBuf,
    /// `other-client.key`.
    pub other_client_key: PathBuf,
    #[serde(skip)]
    temp: Option<tempfile::TempDir>,
}

impl TestPki {
    /// Generates a fresh PKI into `dir` (created if missing; files are overwritten).
    pub fn generate(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let python = paths::python()?;
        let script = paths::testkit_script("test_pki.py");
        let out = Command::new(&python)
            .arg(&script)
            .arg(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .output()
            .map_err(io(format!("running {}", script.display())))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(Error::ServerStart {
                what: "test_pki.py".into(),
                reason: out.status.to_string(),
                stderr,
            });
        }
        let mut pki: TestPki =
            serde_json::from_slice(&out.stdout).map_err(|e| Error::ServerStart {
                what: "test_pki.py".into(),
                reason: format!("unexpected output: {e}"),
                stderr,
            })?;
        pki.dir = dir.to_path_buf();
        Ok(pki)
    }

    /// Generates a fresh PKI in a temporary directory removed when the value is dropped.
    pub fn generate_temp() -> Result<Self> {
        let temp = tempfile::Builder::new()
            .prefix("strait-pki-")
            .tempdir()
            .map_err(io("creating a temp dir for the PKI"))?;
        let mut pki = Self::generate(temp.path())?;
        pki.temp = Some(temp);
        Ok(pki)
    }

    /// Reads one of the files (a PEM) as text.
    pub fn read(path: &Path) -> Result<String> {
        fs::read_to_string(path).map_err(io(format!("reading {}", path.display())))
    }

    /// The CA certificate as PEM text.
    pub fn ca_pem(&self) -> Result<String> {
        Self::read(&self.ca_cert)
    }
}

// ---------------------------------------------------------------------------------------
// Front end options
// ---------------------------------------------------------------------------------------

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
    /// The HS256 key OAUTHBEARER tokens must be signed with ([`TokenEndpoint::secret`]).
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

    /// Sets the OAUTHBEARER token key (see [`TokenEndpoint::secret`]).
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

// ---------------------------------------------------------------------------------------
// A helper Python server process
// ---------------------------------------------------------------------------------------

/// One Python server: killed on drop (stdin closed, SIGKILL, wait). Both scripts also exit
/// by themselves when their stdin reaches EOF, i.e. when this process dies.
#[derive(Debug)]
struct PyServer {
    what: &'static str,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// `None` once kept (after a panic).
    dir: Option<tempfile::TempDir>,
    dir_path: PathBuf,
    stderr_path: PathBuf,
    events_path: PathBuf,
    port: u16,
}

#[derive(Deserialize)]
struct ReadyLine {
    event: String,
    port: u16,
}

impl PyServer {
    fn spawn(
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

    fn stderr_tail(&self, lines: usize) -> String {
        tail_lines(&self.stderr_path, lines)
    }

    fn send_line(&mut self, line: &str) -> Result<()> {
        use std::io::Write as _;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::Protocol(format!("{} has no stdin", self.what)))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(io(format!("writing to {}", self.what)))
    }

    fn kill(&mut self) {
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

fn tail_lines(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    fs::write(path, contents).map_err(io(format!("writing {}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

fn temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(io("creating a temp dir"))
}

// ---------------------------------------------------------------------------------------
// The front end
// ---------------------------------------------------------------------------------------

/// One event line of a [`SecureFront`] (see the module doc for names and fields).
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

// ---------------------------------------------------------------------------------------
// The token endpoint
// ---------------------------------------------------------------------------------------

/// How to start a [`TokenEndpoint`].
#[derive(Clone, PartialEq, Eq)]
pub struct TokenEndpointOptions {
    /// HTTPS server certificate (PEM).
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// `(client_id, client_secret)` pairs allowed to get tokens.
    pub clients: Vec<(String, String)>,
    /// The HS256 signing key shared with the front end. Default: unique per call.
    pub secret: String,
    /// `expires_in` and the token's `exp - iat` (default 1 hour).
    pub token_lifetime: Duration,
    /// How long to wait for it to listen (default 20 s).
    pub startup_timeout: Duration,
}

impl std::fmt::Debug for TokenEndpointOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clients: Vec<&str> = self.clients.iter().map(|(c, _)| c.as_str()).collect();
        f.debug_struct("TokenEndpointOptions")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("clients", &clients)
            .field("token_lifetime", &self.token_lifetime)
            .finish_non_exhaustive()
    }
}

impl TokenEndpointOptions {
    /// The PKI's server cert, no clients yet, a fresh secret, 1-hour tokens.
    pub fn new(pki: &TestPki) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Self {
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
            clients: Vec::new(),
            secret: format!("strait-testkit-{}-{nanos:x}", std::process::id()),
            token_lifetime: Duration::from_secs(3600),
            startup_timeout: DEFAULT_STARTUP,
        }
    }

    /// Adds a client.
    pub fn client(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.clients.push((id.into(), secret.into()));
        self
    }

    /// Sets the token lifetime (whole seconds, at least 1).
    pub fn token_lifetime(mut self, lifetime: Duration) -> Self {
        self.token_lifetime = lifetime;
        self
    }
}

/// A running `token_endpoint.py`: an HTTPS OAuth 2.0 client-credentials token endpoint,
/// killed on drop (and exiting by itself if this process dies).
#[derive(Debug)]
pub struct TokenEndpoint {
    server: PyServer,
    secret: String,
    secret_file: PathBuf,
}

impl TokenEndpoint {
    /// Starts it on a free port and waits until it listens.
    pub fn start(options: TokenEndpointOptions) -> Result<Self> {
        let dir = temp_dir("strait-token-endpoint-")?;
        let secret_file = dir.path().join("jwt.secret");
        write_private(&secret_file, options.secret.as_bytes())?;
        let clients: serde_json::Map<String, serde_json::Value> = options
            .clients
            .iter()
            .map(|(c, s)| (c.clone(), serde_json::Value::String(s.clone())))
            .collect();
        let clients_file = dir.path().join("clients.json");
        write_private(
            &clients_file,
            serde_json::Value::Object(clients).to_string().as_bytes(),
        )?;
        let args: Vec<OsString> = vec![
            "serve".into(),
            "--parent-stdin".into(),
            "--cert".into(),
            options.cert.clone().into(),
            "--key".into(),
            options.key.clone().into(),
            "--secret-file".into(),
            secret_file.clone().into(),
            "--clients-file".into(),
            clients_file.into(),
            "--lifetime-s".into(),
            options.token_lifetime.as_secs().max(1).to_string().into(),
            "--events".into(),
            dir.path().join("events.jsonl").into(),
        ];
        let server = PyServer::spawn(
            "token_endpoint.py",
            "token_endpoint.py",
            args,
            dir,
            options.startup_timeout,
        )?;
        Ok(Self {
            server,
            secret: options.secret,
            secret_file,
        })
    }

    /// `https://127.0.0.1:PORT/token` (`sasl.oauthbearer.token.endpoint.url`). The
    /// certificate is the PKI's server cert, valid for 127.0.0.1 and localhost.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/token", self.server.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The HS256 key its tokens are signed with; give it to [`SaslOptions::oauth_secret`].
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Its event log: one JSON line per request (`token_issued`, `token_refused`).
    pub fn events_path(&self) -> &Path {
        &self.server.events_path
    }

    /// How many lines of its event log are named `event`.
    pub fn count(&self, event: &str) -> usize {
        let text = fs::read_to_string(&self.server.events_path).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v.get("event").and_then(|e| e.as_str()) == Some(event))
            .count()
    }

    /// A token for `subject` valid for `lifetime` (whole seconds), signed like the
    /// endpoint's.
    pub fn mint_token(&self, subject: &str, lifetime: Duration) -> Result<String> {
        self.mint(subject, lifetime.as_secs() as i64, None)
    }

    /// Writes such a token into `path` (atomically: a temp file renamed over it), for a
    /// "token file" provider.
    pub fn mint_token_file(&self, path: &Path, subject: &str, lifetime: Duration) -> Result<()> {
        self.mint(subject, lifetime.as_secs() as i64, Some(path))
            .map(|_| ())
    }

    /// Writes a correctly signed token that expired a minute ago into `path`.
    pub fn mint_expired_token_file(&self, path: &Path, subject: &str) -> Result<()> {
        self.mint(subject, -60, Some(path)).map(|_| ())
    }

    fn mint(&self, subject: &str, lifetime_s: i64, out: Option<&Path>) -> Result<String> {
        let python = paths::python()?;
        let mut cmd = Command::new(&python);
        cmd.arg(paths::testkit_script("token_endpoint.py"))
            .arg("mint")
            .arg("--secret-file")
            .arg(&self.secret_file)
            .args(["--sub", subject])
            .arg(format!("--lifetime-s={lifetime_s}"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null());
        if let Some(path) = out {
            cmd.arg("--out").arg(path);
        }
        let output = cmd.output().map_err(io("running token_endpoint.py mint"))?;
        if !output.status.success() {
            return Err(Error::ServerStart {
                what: "token_endpoint.py mint".into(),
                reason: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        match out {
            Some(path) => fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .map_err(io(format!("reading {}", path.display()))),
            None => Ok(String::from_utf8_lossy(&output.stdout).trim().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(error: &str) -> FrontEvent {
        serde_json::from_value(serde_json::json!({
            "ts": 0.0, "event": "tls_failed", "conn": 1, "error": error
        }))
        .expect("event")
    }

    #[test]
    fn a_refused_handshake_counts_and_a_peer_gone_mid_handshake_does_not() {
        assert!(is_tls_refusal(&failed(
            "SSLError: [SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca"
        )));
        assert!(is_tls_refusal(&failed("TimeoutError: ")));
        assert!(!is_tls_refusal(&failed("ConnectionResetError: ")));
        assert!(!is_tls_refusal(&failed(
            "BrokenPipeError: [Errno 32] Broken pipe"
        )));
        assert!(!is_tls_refusal(&failed(
            "SSLEOFError: [SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred"
        )));
        let ok: FrontEvent =
            serde_json::from_value(serde_json::json!({"ts": 0.0, "event": "tls_ok", "conn": 1}))
                .expect("event");
        assert!(!is_tls_refusal(&ok));
    }
}
