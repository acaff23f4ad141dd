//! The OAuth side of OAUTHBEARER: [`TokenEndpoint`], the running `py/token_endpoint.py`
//! (HTTPS client-credentials grant), which also mints tokens and token files.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::pki::TestPki;
use super::py_server::{DEFAULT_STARTUP, PyServer, temp_dir, write_private};
use crate::error::{Error, Result, io};
use crate::paths;

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

    /// The HS256 key its tokens are signed with; give it to [`SaslOptions::oauth_secret`](super::SaslOptions::oauth_secret).
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
