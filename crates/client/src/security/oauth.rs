//! OAUTHBEARER token providers (RFC 7628 / KIP-255): a token file (re-read whenever a
//! token is needed, so any sidecar that refreshes the file works) and OIDC client
//! credentials against a token endpoint (KIP-768), cached until 80 % of its lifetime.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD as B64URL};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::net::TcpStream;

use super::config::{CaRoots, Secret, TlsConfig};
use super::tls;
use crate::error::{Error, ErrorKind, Result};

/// Kept here for callers that named them by this path; they live with the settings.
#[doc(no_inline)]
pub use super::config::{Token, TokenFuture, TokenProvider};

fn auth_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Authentication(msg.into()))
}

/// The `exp` and `sub` claims of a JWT, read without verifying it (the broker verifies).
pub fn jwt_claims(token: &str) -> (Option<SystemTime>, Option<String>) {
    let Some(payload) = token.split('.').nth(1) else {
        return (None, None);
    };
    let Ok(raw) = B64URL.decode(payload.trim_end_matches('=')) else {
        return (None, None);
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&raw) else {
        return (None, None);
    };
    let exp = v
        .get("exp")
        .and_then(|e| e.as_f64())
        .filter(|e| e.is_finite() && *e >= 0.0)
        .map(|e| UNIX_EPOCH + Duration::from_secs_f64(e.min(1e12)));
    let sub = v.get("sub").and_then(|s| s.as_str()).map(str::to_owned);
    (exp, sub)
}

/// Reads the token from a file each time one is needed.
#[derive(Debug, Clone)]
pub struct FileTokenProvider {
    path: PathBuf,
}

impl FileTokenProvider {
    /// A provider reading `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenProvider { path: path.into() }
    }

    fn read(&self) -> Result<Token> {
        let raw = std::fs::read_to_string(&self.path).map_err(|e| {
            auth_err(format!(
                "cannot read the OAUTHBEARER token file {}: {e}",
                self.path.display()
            ))
        })?;
        let value = raw.trim();
        if value.is_empty() || value.contains(char::is_whitespace) {
            return Err(auth_err(format!(
                "the OAUTHBEARER token file {} does not hold one token",
                self.path.display()
            )));
        }
        let (expires_at, principal) = jwt_claims(value);
        if let Some(exp) = expires_at
            && exp <= SystemTime::now()
        {
            return Err(auth_err(format!(
                "the token in {} has expired (its refresher may have stopped)",
                self.path.display()
            )));
        }
        Ok(Token {
            value: Secret::new(value),
            expires_at,
            principal,
        })
    }
}

impl TokenProvider for FileTokenProvider {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move { self.read() })
    }

    fn describe(&self) -> String {
        format!("token file {}", self.path.display())
    }
}

/// OIDC client credentials (RFC 6749 §4.4) against an `https://` token endpoint.
pub struct OidcTokenProvider {
    url: hyper::Uri,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    tls: TlsConfig,
    timeout: Duration,
    cache: TokenCache,
}

impl std::fmt::Debug for OidcTokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcTokenProvider")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scope", &self.scope)
            .finish()
    }
}

/// A URL as errors and logs show it: scheme, host, port and path, without any
/// `user:password@` and without the query or fragment (either may carry a secret).
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let hidden = if authority.contains('@') {
        "<redacted>@"
    } else {
        ""
    };
    match scheme {
        Some(s) => format!("{s}://{hidden}{host}{path}"),
        None => format!("{hidden}{host}{path}"),
    }
}

/// Largest token endpoint response accepted.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

impl OidcTokenProvider {
    /// A provider for `url` (must be `https://`), verifying the endpoint against `ca`.
    pub fn new(
        url: &str,
        client_id: impl Into<String>,
        client_secret: Secret,
        scope: Option<String>,
        ca: CaRoots,
    ) -> Result<Self> {
        let shown = redact_url(url);
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| Error::invalid(format!("token endpoint URL {shown:?}: {e}")))?;
        if uri.scheme_str() != Some("https") || uri.host().is_none() {
            return Err(Error::invalid(format!(
                "token endpoint URL {shown:?} must be an https:// URL (client secrets never \
                 travel in clear)"
            )));
        }
        Ok(OidcTokenProvider {
            url: uri,
            client_id: client_id.into(),
            client_secret,
            scope,
            tls: TlsConfig {
                ca,
                ..TlsConfig::default()
            },
            timeout: Duration::from_secs(30),
            cache: TokenCache::new(Duration::from_secs(60)),
        })
    }

    /// Fetches a new token from the endpoint: connects, posts the client credentials, and
    /// reads the token from the answer.
    async fn fetch(&self) -> Result<Token> {
        let (host, addr) = self.host_and_addr();
        let connector = tls::Connector::new(&self.tls)?;
        let endpoint = format!("the token endpoint {}", redact_url(&self.url.to_string()));
        let (sender, conn_task) = self.open(&connector, &addr, &endpoint).await?;
        let req = self.token_request(&host, &endpoint)?;
        let (status, body) = self.post(sender, conn_task, req, &endpoint).await?;
        self.read_token(status, &body, &endpoint)
    }

    /// The endpoint's host, and the `host:port` to connect to (IPv6 in brackets).
    fn host_and_addr(&self) -> (String, String) {
        let host = self.url.host().unwrap_or_default().to_owned();
        let port = self.url.port_u16().unwrap_or(443);
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        (host, addr)
    }

    /// Connects over TLS to `addr` and starts an HTTP/1 connection, driven by the returned
    /// task.
    async fn open(
        &self,
        connector: &tls::Connector,
        addr: &str,
        endpoint: &str,
    ) -> Result<(
        hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        tokio::task::JoinHandle<hyper::Result<()>>,
    )> {
        let tcp = tokio::time::timeout(self.timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| {
                Error::new(ErrorKind::Timeout).message(format!("connecting to {endpoint}"))
            })?
            .map_err(|e| Error::from(e).message(format!("connecting to {endpoint}")))?;
        let stream = connector.connect(tcp, addr).await?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| auth_err(format!("{endpoint}: {e}")))?;
        Ok((sender, tokio::spawn(conn)))
    }

    /// The client-credentials POST (RFC 6749 §4.4.2), authenticated with HTTP Basic.
    fn token_request(&self, host: &str, endpoint: &str) -> Result<hyper::Request<Full<Bytes>>> {
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials");
            if let Some(s) = &self.scope {
                form.append_pair("scope", s);
            }
            form.finish()
        };
        // RFC 6749 §2.3.1: the id and secret are form-encoded before Basic encoding.
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let basic = B64.encode(format!(
            "{}:{}",
            enc(&self.client_id),
            enc(self.client_secret.expose())
        ));
        let path = self
            .url
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_owned();
        hyper::Request::post(path)
            .header(
                hyper::header::HOST,
                self.url.authority().map(|a| a.as_str()).unwrap_or(host),
            )
            .header(hyper::header::AUTHORIZATION, format!("Basic {basic}"))
            .header(
                hyper::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::invalid(format!("{endpoint}: {e}")))
    }

    /// Sends `req` and reads the whole (bounded) answer within the timeout, then stops the
    /// connection's task.
    async fn post(
        &self,
        mut sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        conn_task: tokio::task::JoinHandle<hyper::Result<()>>,
        req: hyper::Request<Full<Bytes>>,
        endpoint: &str,
    ) -> Result<(hyper::StatusCode, Bytes)> {
        let exchange = async {
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| auth_err(format!("{endpoint}: {e}")))?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_TOKEN_RESPONSE)
                .collect()
                .await
                .map_err(|e| auth_err(format!("{endpoint}: reading the response: {e}")))?
                .to_bytes();
            Ok::<_, Error>((status, body))
        };
        let res = tokio::time::timeout(self.timeout, exchange).await;
        conn_task.abort();
        res.map_err(|_| {
            Error::new(ErrorKind::Timeout).message(format!("{endpoint} did not answer"))
        })?
    }

    /// The token in the endpoint's JSON answer, expiring per `expires_in` (else its JWT
    /// `exp`); a refusal or a malformed answer is an authentication error.
    fn read_token(&self, status: hyper::StatusCode, body: &[u8], endpoint: &str) -> Result<Token> {
        let json: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
            auth_err(format!(
                "{endpoint} answered HTTP {status} with a body that is not JSON"
            ))
        })?;
        if !status.is_success() {
            let err = json.get("error").and_then(|e| e.as_str()).unwrap_or("?");
            return Err(auth_err(format!(
                "{endpoint} refused client id {:?}: HTTP {status}, error {err:?}",
                self.client_id
            )));
        }
        let value = json
            .get("access_token")
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| auth_err(format!("{endpoint}: the response has no access_token")))?;
        let (jwt_exp, principal) = jwt_claims(value);
        let now = SystemTime::now();
        let expires_at = json
            .get("expires_in")
            .and_then(|e| e.as_f64())
            .filter(|e| e.is_finite() && *e > 0.0)
            .map(|e| now + Duration::from_secs_f64(e.min(1e9)))
            .or(jwt_exp);
        Ok(Token {
            value: Secret::new(value),
            expires_at,
            principal,
        })
    }
}

/// When a token fetched now with this expiry should be refreshed: at 80 % of its life;
/// `unknown` after now when its expiry is unknown or already past.
pub(crate) fn refresh_at(
    now: SystemTime,
    expires_at: Option<SystemTime>,
    unknown: Duration,
) -> SystemTime {
    match expires_at
        .and_then(|e| e.duration_since(now).ok())
        .filter(|d| !d.is_zero())
    {
        Some(life) => now + life.mul_f64(0.8),
        None => now + unknown,
    }
}

/// A token kept until 80 % of its lifetime; concurrent callers share one fetch.
pub(crate) struct TokenCache {
    cached: Mutex<Option<(Token, SystemTime)>>,
    fetch_lock: tokio::sync::Mutex<()>,
    /// How long a token of unknown expiry is kept.
    unknown: Duration,
}

impl TokenCache {
    pub(crate) fn new(unknown: Duration) -> Self {
        TokenCache {
            cached: Mutex::new(None),
            fetch_lock: tokio::sync::Mutex::new(()),
            unknown,
        }
    }

    fn fresh(&self) -> Option<Token> {
        let g = self.cached.lock();
        g.as_ref()
            .filter(|(_, refresh_at)| SystemTime::now() < *refresh_at)
            .map(|(t, _)| t.clone())
    }

    /// The cached token, or a new one from `fetch`.
    pub(crate) async fn get<F: Future<Output = Result<Token>>>(
        &self,
        fetch: impl FnOnce() -> F,
    ) -> Result<Token> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _one = self.fetch_lock.lock().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let t = fetch().await?;
        let at = refresh_at(SystemTime::now(), t.expires_at, self.unknown);
        *self.cached.lock() = Some((t.clone(), at));
        Ok(t)
    }
}

impl TokenProvider for OidcTokenProvider {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.cache.get(|| self.fetch()))
    }

    fn describe(&self) -> String {
        format!(
            "client id {:?} at {}",
            self.client_id,
            redact_url(&self.url.to_string())
        )
    }
}

/// The OAUTHBEARER initial client response (RFC 7628 §3.1, KIP-342 extensions).
pub(crate) fn client_first(token: &Token, extensions: &[(String, String)]) -> Vec<u8> {
    let mut s = format!("n,,\x01auth=Bearer {}", token.value.expose());
    for (k, v) in extensions {
        s.push('\x01');
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s.push_str("\x01\x01");
    s.into_bytes()
}

#[cfg(test)]
mod tests;
