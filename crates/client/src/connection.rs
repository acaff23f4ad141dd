//! One pipelined connection to one broker.
//!
//! - A **writer task** owns the write half and is fed by a channel, so a caller that is
//!   dropped (cancelled) mid-request can never leave a half-written frame on the socket.
//!   It drains whatever is queued and writes it with vectored I/O (batch payloads are
//!   written from the caller's `Bytes`, never copied into a request buffer).
//! - A **reader task** owns the read half, reads whole frames, and matches them in order to
//!   the pending queue (Kafka answers requests on one connection in the order sent); the
//!   correlation id is checked against the front of the queue.
//! - Any failure (socket error, protocol violation, a request timing out) **poisons** the
//!   connection: every pending and queued request fails with a retriable error, both tasks
//!   stop, and the owner ([`crate::broker`]) opens a new connection on next use.
//!
//! The tasks live in child files: [`reader`] (the read loop) and [`writer`] (the write
//! loop, its coalescing and vectored writes).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::error::{Error, ErrorKind, Result};
use crate::frame::{self, Frame, FrameReader, Request};
use crate::versions::BrokerVersions;

mod reader;
mod writer;

use reader::read_loop;
use writer::write_loop;

/// Frames queued for the writer before callers wait (back-pressure).
const QUEUE_DEPTH: usize = 256;

type ResponseTx = oneshot::Sender<Result<Bytes>>;

struct Pending {
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    /// `None` for a request Kafka does not answer (Produce acks=0). It stays queued so that
    /// a broker that answers anyway (Tansu 0.6 does) is matched and ignored, not taken for
    /// a protocol violation.
    tx: Option<ResponseTx>,
}

struct Outgoing {
    frame: Frame,
    /// The response slot (always present; see [`Pending::tx`]).
    pending: Option<Pending>,
    /// Told when the frame has been written (acks=0 completes here).
    written: Option<oneshot::Sender<Result<()>>>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<Pending>,
    closed: Option<Error>,
    reader: Option<AbortHandle>,
}

struct Shared {
    state: Mutex<State>,
    stop_writer: Notify,
    broker_id: i32,
}

impl Shared {
    /// Marks the connection dead and fails everything pending on it. Idempotent.
    fn poison(&self, err: Error) {
        let (pending, reader) = {
            let mut st = self.state.lock();
            if st.closed.is_some() {
                return;
            }
            st.closed = Some(err.clone());
            (std::mem::take(&mut st.pending), st.reader.take())
        };
        tracing::debug!(broker = self.broker_id, error = %err, "connection closed");
        for p in pending {
            if let Some(tx) = p.tx {
                let _ = tx.send(Err(err.clone().api(p.api)));
            }
        }
        if let Some(r) = reader {
            r.abort();
        }
        self.stop_writer.notify_one();
    }

    fn closed(&self) -> Option<Error> {
        self.state.lock().closed.clone()
    }
}

/// A response that has been requested; await it with [`ResponseFuture::wait`].
pub(crate) struct ResponseFuture {
    rx: Option<oneshot::Receiver<Result<Bytes>>>,
    written: oneshot::Receiver<Result<()>>,
    api: ApiKey,
    version: i16,
    shared: Arc<Shared>,
}

impl ResponseFuture {
    /// Waits for the response body (header stripped), or `None` for a request that has no
    /// response. On timeout the connection is poisoned.
    pub(crate) async fn wait(self, timeout: Duration) -> Result<Option<Bytes>> {
        let shared = self.shared.clone();
        let broker = shared.broker_id;
        let fut = async move {
            match self.rx {
                Some(rx) => match rx.await {
                    Ok(r) => r.map(Some),
                    Err(_) => Err(shared.closed().unwrap_or_else(closed_err)),
                },
                None => match self.written.await {
                    Ok(r) => r.map(|_| None),
                    Err(_) => Err(shared.closed().unwrap_or_else(closed_err)),
                },
            }
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r.map_err(|e| e.broker(broker).api(self.api)),
            Err(_) => {
                let e = Error::new(ErrorKind::Timeout)
                    .broker(broker)
                    .api(self.api)
                    .message(format!("no response within {timeout:?}"));
                self.shared.poison(e.clone());
                Err(e)
            }
        }
    }

    /// The API version the request was encoded with.
    pub(crate) fn version(&self) -> i16 {
        self.version
    }
}

fn closed_err() -> Error {
    Error::new(ErrorKind::ConnectionClosed)
}

/// One connection to one broker. Cheap to share (`Arc`); dropping the last handle closes it.
pub(crate) struct Connection {
    tx: mpsc::Sender<Outgoing>,
    shared: Arc<Shared>,
    correlation: AtomicI32,
    client_id: StrBytes,
    versions: BrokerVersions,
    /// Held for writing while the connection re-authenticates (KIP-368): the broker must
    /// see nothing but SASL frames between SaslHandshake and the last SaslAuthenticate,
    /// so new requests wait here (they are not failed) while earlier ones are answered.
    gate: tokio::sync::RwLock<()>,
}

/// Whether a call goes through the re-authentication gate ([`Connection`]'s `gate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// An ordinary request: waits while a re-authentication runs.
    Pass,
    /// A SASL frame of the re-authentication that holds the gate.
    Held,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("broker", &self.shared.broker_id)
            .finish_non_exhaustive()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared
            .poison(Error::new(ErrorKind::ConnectionClosed).message("connection dropped"));
    }
}

impl Connection {
    /// Starts the reader and writer tasks over `stream` and negotiates API versions.
    /// Authentication, where the broker wants it, runs on the connection afterwards
    /// (`security::sasl`).
    pub(crate) async fn handshake<S>(
        stream: S,
        broker_id: i32,
        client_id: StrBytes,
        max_frame: usize,
        timeout: Duration,
    ) -> Result<Connection>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let mut conn = Connection::start(stream, broker_id, client_id, max_frame);
        conn.versions = conn.negotiate(timeout).await?;
        Ok(conn)
    }

    /// Closes the gate for as long as the guard lives (a re-authentication, KIP-368): new
    /// requests wait at it (they are not failed), requests already queued are answered in
    /// order, and only calls made with [`Gate::Held`] are written.
    pub(crate) async fn hold_gate(&self) -> tokio::sync::RwLockWriteGuard<'_, ()> {
        self.gate.write().await
    }

    fn start<S>(stream: S, broker_id: i32, client_id: StrBytes, max_frame: usize) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(stream);
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            stop_writer: Notify::new(),
            broker_id,
        });
        let reader = tokio::spawn(read_loop(FrameReader::new(rd, max_frame), shared.clone()));
        shared.state.lock().reader = Some(reader.abort_handle());
        tokio::spawn(write_loop(wr, rx, shared.clone()));
        Connection {
            tx,
            shared,
            correlation: AtomicI32::new(1),
            client_id,
            versions: BrokerVersions::default(),
            gate: tokio::sync::RwLock::new(()),
        }
    }

    /// ApiVersions, newest first; a broker that does not know our version answers
    /// UNSUPPORTED_VERSION in a v0-parseable shape, and we retry with v0.
    async fn negotiate(&self, timeout: Duration) -> Result<BrokerVersions> {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("strait-client"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let mut version = 3;
        loop {
            let corr = self.next_correlation_id();
            let api = ApiKey::ApiVersions;
            let frame = frame::encode_request(api, version, corr, &self.client_id, &req)?;
            let body = self
                .submit(api, version, corr, frame, true)
                .await?
                .wait(timeout)
                .await?
                .ok_or_else(|| Error::protocol("missing response"))?;
            // A broker that does not know our version answers UNSUPPORTED_VERSION encoded as
            // v0 (KIP-511); decode as v0 when our version does not fit, and retry at v0.
            let resp: ApiVersionsResponse = match frame::decode_body(api, version, body.clone()) {
                Ok(r) => r,
                Err(e) if version > 0 => match frame::decode_body(api, 0, body) {
                    Ok(r) => r,
                    Err(_) => return Err(e.broker(self.broker_id())),
                },
                Err(e) => return Err(e.broker(self.broker_id())),
            };
            if resp.error_code == 35 && version > 0 {
                version = 0;
                continue;
            }
            Error::check_code(resp.error_code, None)
                .map_err(|e| e.api(api).broker(self.broker_id()))?;
            return Ok(BrokerVersions::from_response(&resp));
        }
    }

    /// The broker's node id (-1 for a bootstrap connection).
    pub(crate) fn broker_id(&self) -> i32 {
        self.shared.broker_id
    }

    /// The versions the broker advertised.
    pub(crate) fn versions(&self) -> &BrokerVersions {
        &self.versions
    }

    /// True once the connection has failed; the owner should open a new one.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.state.lock().closed.is_some()
    }

    /// Closes the connection, failing everything pending with `err`.
    pub(crate) fn poison(&self, err: Error) {
        self.shared.poison(err);
    }

    pub(crate) fn next_correlation_id(&self) -> i32 {
        self.correlation.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn client_id(&self) -> &StrBytes {
        &self.client_id
    }

    /// Queues an encoded frame. Returns once it is queued (in order with every other frame
    /// queued on this connection); the response is awaited separately. This split lets the
    /// idempotent producer guarantee its batches hit the wire in sequence order.
    pub(crate) async fn submit(
        &self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        frame: Frame,
        expect_response: bool,
    ) -> Result<ResponseFuture> {
        let _pass = self.gate.read().await;
        self.submit_ungated(api, version, correlation_id, frame, expect_response)
            .await
    }

    async fn submit_ungated(
        &self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        frame: Frame,
        expect_response: bool,
    ) -> Result<ResponseFuture> {
        if let Some(e) = self.shared.closed() {
            return Err(e.broker(self.broker_id()).api(api));
        }
        let (wtx, wrx) = oneshot::channel();
        let (tx, rx) = if expect_response {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let pending = Some(Pending {
            correlation_id,
            api,
            version,
            tx,
        });
        let out = Outgoing {
            frame,
            pending,
            written: Some(wtx),
        };
        if self.tx.send(out).await.is_err() {
            let e = self.shared.closed().unwrap_or_else(closed_err);
            return Err(e.broker(self.broker_id()).api(api));
        }
        Ok(ResponseFuture {
            rx,
            written: wrx,
            api,
            version,
            shared: self.shared.clone(),
        })
    }

    /// Encodes, sends and decodes one request at the given version.
    pub(crate) async fn call<R: Request>(
        &self,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response> {
        self.call_gated(req, version, timeout, Gate::Pass).await
    }

    /// [`Connection::call`], through the re-authentication gate or (for the SASL frames
    /// of a re-authentication) past it.
    pub(crate) async fn call_gated<R: Request>(
        &self,
        req: &R,
        version: i16,
        timeout: Duration,
        gate: Gate,
    ) -> Result<R::Response> {
        let corr = self.next_correlation_id();
        let frame = frame::encode_request(R::KEY, version, corr, &self.client_id, req)?;
        let fut = match gate {
            Gate::Pass => self.submit(R::KEY, version, corr, frame, true).await?,
            Gate::Held => {
                self.submit_ungated(R::KEY, version, corr, frame, true)
                    .await?
            }
        };
        let body = fut
            .wait(timeout)
            .await?
            .ok_or_else(|| Error::protocol("missing response"))?;
        frame::decode_body(R::KEY, version, body).map_err(|e| e.broker(self.broker_id()))
    }

    /// Like [`Connection::call`], at the negotiated version.
    #[cfg(test)]
    pub(crate) async fn call_negotiated<R: Request>(
        &self,
        req: &R,
        timeout: Duration,
    ) -> Result<(i16, R::Response)> {
        let v = self
            .versions
            .pick(R::KEY)
            .map_err(|e| e.broker(self.broker_id()))?;
        Ok((v, self.call(req, v, timeout).await?))
    }
}

#[cfg(test)]
pub(crate) mod tests;
