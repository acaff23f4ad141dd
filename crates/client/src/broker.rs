//! One broker: its address, its connections by purpose, and its throttle state.
//!
//! Connections are split by purpose so that a long-poll Fetch never queues a Produce or a
//! Metadata call behind it (Kafka answers in order per connection). A closed connection is
//! replaced on the next call.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::connection::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::security::config::SaslConfig;
use crate::security::{self, sasl};

/// The read buffer under a TLS connection (rustls itself reads 4 KiB at a time).
const TLS_READ_BUFFER: usize = 64 * 1024;

/// What a connection is used for; each purpose gets its own TCP connection per broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// Metadata, admin, group and transaction calls.
    Control,
    /// Produce requests.
    Produce,
    /// Fetch requests (long polls).
    Fetch,
}

impl Purpose {
    fn index(self) -> usize {
        match self {
            Purpose::Control => 0,
            Purpose::Produce => 1,
            Purpose::Fetch => 2,
        }
    }
}

/// Settings every connection needs.
#[derive(Debug, Clone)]
pub(crate) struct ConnSettings {
    pub(crate) client_id: StrBytes,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) max_frame: usize,
    /// TLS connector and SASL credentials, prepared once per client.
    pub(crate) security: security::Prepared,
}

/// A broker we can talk to. `id` is -1 for a bootstrap address whose node id is unknown.
pub(crate) struct Broker {
    pub(crate) id: i32,
    pub(crate) addr: String,
    settings: Arc<ConnSettings>,
    conns: [tokio::sync::Mutex<Option<Arc<Connection>>>; 3],
    throttled_until: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Broker({} at {})", self.id, self.addr)
    }
}

impl Broker {
    pub(crate) fn new(id: i32, addr: String, settings: Arc<ConnSettings>) -> Self {
        Broker {
            id,
            addr,
            settings,
            conns: Default::default(),
            throttled_until: Mutex::new(None),
        }
    }

    /// The open connection for `purpose`, connecting (and negotiating versions) if needed.
    /// Concurrent callers share one connect attempt.
    pub(crate) async fn connection(&self, purpose: Purpose) -> Result<Arc<Connection>> {
        let mut slot = self.conns[purpose.index()].lock().await;
        if let Some(c) = slot.as_ref()
            && !c.is_closed()
        {
            return Ok(c.clone());
        }
        *slot = None;
        let s = &self.settings;
        let stream = match tokio::time::timeout(s.connect_timeout, TcpStream::connect(&self.addr))
            .await
        {
            Ok(r) => r.map_err(|e| Error::from(e).broker(self.id).message(self.addr.clone()))?,
            Err(_) => {
                return Err(Error::new(ErrorKind::Timeout)
                    .broker(self.id)
                    .message(format!("connecting to {}", self.addr)));
            }
        };
        stream.set_nodelay(true)?;
        let (conn, lifetime) = match &s.security.tls {
            None => self
                .handshake(stream)
                .await
                .map_err(|e| closed_before_answering(e, &self.addr))?,
            Some(tls) => {
                // rustls reads the socket 4 KiB at a time; a buffer under it turns those
                // into one read syscall per TLS_READ_BUFFER bytes.
                let stream = tokio::io::BufReader::with_capacity(TLS_READ_BUFFER, stream);
                let stream = tls
                    .connect(stream, &self.addr)
                    .await
                    .map_err(|e| e.broker(self.id))?;
                self.handshake(stream)
                    .await
                    .map_err(|e| refused_after_handshake(e, &self.addr))?
            }
        };
        tracing::debug!(broker = self.id, addr = %self.addr, ?purpose, "connected");
        let conn = Arc::new(conn);
        if let (Some(lifetime), Some(cfg)) = (lifetime, s.security.sasl.clone()) {
            tokio::spawn(reauthenticate_loop(
                Arc::downgrade(&conn),
                cfg,
                self.addr.clone(),
                s.request_timeout,
                lifetime,
            ));
        }
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// ApiVersions and SASL over an open stream (TCP or TLS).
    async fn handshake<S>(&self, stream: S) -> Result<(Connection, Option<Duration>)>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        let s = &self.settings;
        let conn = Connection::handshake(
            stream,
            self.id,
            s.client_id.clone(),
            s.max_frame,
            s.request_timeout,
        )
        .await?;
        let lifetime = match &s.security.sasl {
            Some(cfg) => sasl::authenticate(&conn, cfg, &self.addr, s.request_timeout).await?,
            None => None,
        };
        Ok((conn, lifetime))
    }

    /// Until when the broker asked to be left alone (KIP-219), if that is still ahead.
    pub(crate) fn throttled_until(&self) -> Option<Instant> {
        let until = *self.throttled_until.lock();
        until.filter(|t| *t > Instant::now())
    }

    /// Closes every connection (used when the broker leaves the cluster metadata).
    pub(crate) fn close(&self) {
        for c in &self.conns {
            if let Ok(slot) = c.try_lock()
                && let Some(conn) = slot.as_ref()
            {
                conn.poison(Error::new(ErrorKind::ConnectionClosed).message("broker removed"));
            }
        }
    }

    /// Waits out a throttle the broker asked for in an earlier response.
    pub(crate) async fn wait_throttle(&self) {
        let until = *self.throttled_until.lock();
        if let Some(t) = until
            && t > Instant::now()
        {
            tokio::time::sleep_until(t).await;
        }
    }

    /// Records a response's `throttle_time_ms` (KIP-219: the broker has already answered and
    /// expects the client to hold back this long).
    pub(crate) fn note_throttle(&self, ms: i32) {
        if ms > 0 {
            let t = Instant::now() + Duration::from_millis(ms as u64);
            let mut g = self.throttled_until.lock();
            if g.is_none_or(|old| old < t) {
                *g = Some(t);
            }
            tracing::debug!(broker = self.id, ms, "throttled by broker");
        }
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.settings.request_timeout
    }
}

/// A plaintext connection closed before ApiVersions was answered is what a TLS listener
/// does with a plaintext client (OpenSSL closes without an alert; Java's engine sends one,
/// which the frame reader recognises). Kept retriable — a restarting broker does the same
/// — but the message says what to check.
fn closed_before_answering(e: Error, addr: &str) -> Error {
    let first_call = e.api_key() == Some(kafka_protocol::messages::ApiKey::ApiVersions);
    if first_call && matches!(e.kind(), ErrorKind::ConnectionClosed) {
        return e.message(format!(
            "{addr} closed the connection before answering ApiVersions: if it is a TLS \
             listener, set protocol = \"ssl\" or \"sasl_ssl\""
        ));
    }
    e
}

/// A broker that closes a TLS connection right after the handshake, before answering
/// ApiVersions, has refused our client certificate: with TLS 1.3 the server checks it after
/// the client's handshake is done, and many servers close without an alert. Retrying
/// cannot help, so this becomes a TLS error that says so.
fn refused_after_handshake(e: Error, addr: &str) -> Error {
    let first_call = e.api_key() == Some(kafka_protocol::messages::ApiKey::ApiVersions);
    if first_call && matches!(e.kind(), ErrorKind::ConnectionClosed | ErrorKind::Io(_)) {
        return Error::new(ErrorKind::Tls(format!(
            "{addr} closed the TLS connection right after the handshake, before answering: \
             a broker requiring mutual TLS does this when the client certificate is missing \
             or not signed by a CA it trusts (set `tls.cert_file` and `tls.key_file`)"
        )))
        .broker(e.broker_id().unwrap_or(-1));
    }
    e
}

/// Re-authenticates `conn` before each session expires (KIP-368), until the connection is
/// dropped or closed. A failed re-authentication closes the connection with that error
/// (requests already answered are unaffected; the owner reconnects on next use, and a
/// credential problem then surfaces as a non-retriable error).
async fn reauthenticate_loop(
    conn: std::sync::Weak<Connection>,
    cfg: SaslConfig,
    addr: String,
    timeout: Duration,
    mut lifetime: Duration,
) {
    loop {
        let wait = sasl::reauth_after(lifetime, rand::random::<f64>());
        tokio::time::sleep(wait).await;
        let Some(c) = conn.upgrade() else { return };
        if c.is_closed() {
            return;
        }
        match sasl::reauthenticate(&c, &cfg, &addr, timeout).await {
            Ok(Some(next)) => {
                tracing::debug!(broker = c.broker_id(), ?next, "re-authenticated");
                lifetime = next;
            }
            Ok(None) => {
                tracing::debug!(
                    broker = c.broker_id(),
                    "re-authenticated; no session lifetime"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(broker = c.broker_id(), error = %e, "re-authentication failed; closing the connection");
                c.poison(e);
                return;
            }
        }
    }
}
