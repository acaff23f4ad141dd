//! The `/metrics` and `/health` endpoint: HTTP/1.1 (hyper), optionally over TLS, with
//! optional basic auth on `/metrics`.
//!
//! Nothing a slow or hostile client does can stall replication or exhaust descriptors:
//! - at most `max_connections` connections are served at once; one more is accepted and
//!   closed at once (never left queued in the kernel backlog, and the accept loop never
//!   waits for a free slot);
//! - the TLS handshake and the request head must arrive within `read_timeout`;
//! - the whole connection is dropped `read_timeout + write_timeout` after it was accepted,
//!   so a client that never reads its response cannot pin it;
//! - one request per connection (`Connection: close`), a request head of at most 16 KiB,
//!   and a request body is never read;
//! - `/metrics` is rendered on tokio's blocking pool, never on the runtime's workers that
//!   run the data path (and rendering takes each family's lock only to copy its handles).
//!
//! `/health` never asks for credentials (Kubernetes probes and load balancers cannot send
//! them, and it shows only flow names and states); `/metrics` does when basic auth is set.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::Metrics;
use super::auth::BasicAuth;
use super::tls;
use crate::config::resolved::MetricsEndpoint;
use crate::error::MirrorError;

/// Largest request head read (hyper's read buffer); a longer one gets a 431 or a close.
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// Most request header lines.
const MAX_HEADERS: usize = 64;

/// The content type of [`Metrics::render`].
pub const METRICS_CONTENT_TYPE: &str = super::CONTENT_TYPE;
const TEXT: &str = "text/plain; charset=utf-8";

/// The running server; stopped when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    slots: Arc<Semaphore>,
    max_connections: usize,
    task: JoinHandle<()>,
}

struct Shared {
    metrics: Metrics,
    auth: Option<BasicAuth>,
    read_timeout: Duration,
    write_timeout: Duration,
}

impl MetricsServer {
    /// Binds `endpoint` (a [`MetricsEndpoint`], or a plain `SocketAddr` for HTTP with the
    /// default limits; port 0 picks a free port) and serves in the background. TLS files
    /// are read here: a bad certificate or key fails the start.
    pub async fn start(
        endpoint: impl Into<MetricsEndpoint>,
        metrics: Metrics,
    ) -> Result<Self, MirrorError> {
        let endpoint = endpoint.into();
        let addr = endpoint.listen;
        let listen_err = |source| MirrorError::metrics_listen(addr, source);
        let acceptor = match &endpoint.tls {
            Some(files) => Some(tls::acceptor(files).map_err(listen_err)?),
            None => None,
        };
        let listener = TcpListener::bind(addr).await.map_err(listen_err)?;
        let addr = listener.local_addr().map_err(listen_err)?;
        let shared = Arc::new(Shared {
            metrics,
            auth: endpoint.basic_auth.as_ref().map(BasicAuth::new),
            read_timeout: endpoint.read_timeout,
            write_timeout: endpoint.write_timeout,
        });
        let max_connections = endpoint.max_connections.max(1);
        let slots = Arc::new(Semaphore::new(max_connections));
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&slots), acceptor, shared));
        Ok(MetricsServer {
            addr,
            slots,
            max_connections,
            task,
        })
    }

    /// Connections being served now (at most `max_connections`).
    pub fn connections(&self) -> usize {
        self.max_connections - self.slots.available_permits()
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    slots: Arc<Semaphore>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
) {
    let mut rejected: u64 = 0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            // Full: close at once (dropping the stream), so the descriptor is freed and
            // the client sees a reset instead of waiting in the backlog.
            rejected += 1;
            if rejected.is_power_of_two() {
                tracing::warn!(
                    rejected,
                    "metrics endpoint: too many connections, closing new ones"
                );
            }
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let deadline = shared.read_timeout + shared.write_timeout;
            match tokio::time::timeout(deadline, connection(stream, acceptor, &shared)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "metrics connection"),
                Err(_) => tracing::debug!("metrics connection: deadline passed, dropped"),
            }
            drop(permit);
        });
    }
}

async fn connection(
    stream: TcpStream,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    shared: &Arc<Shared>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match acceptor {
        None => serve_http(stream, shared).await,
        Some(acceptor) => {
            let tls = tokio::time::timeout(shared.read_timeout, acceptor.accept(stream))
                .await
                .map_err(|_| "TLS handshake timed out")??;
            serve_http(tls, shared).await
        }
    }
}

async fn serve_http<S>(
    io: S,
    shared: &Arc<Shared>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc_shared = Arc::clone(shared);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = Arc::clone(&svc_shared);
        async move { Ok::<_, Infallible>(handle(&req, &shared).await) }
    });
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(shared.read_timeout)
        .keep_alive(false)
        .max_buf_size(MAX_REQUEST_HEAD)
        .max_headers(MAX_HEADERS)
        .serve_connection(TokioIo::new(io), service)
        .await?;
    Ok(())
}

async fn handle(req: &Request<Incoming>, shared: &Shared) -> hyper::Response<Full<Bytes>> {
    let authorized = match &shared.auth {
        None => true,
        Some(auth) => auth.check(req.headers().get(header::AUTHORIZATION)),
    };
    let route = route(req.method(), req.uri().path(), authorized);
    let challenge = matches!(&route, Route::Fixed(r) if r.status == 401);
    let response = match route {
        Route::Metrics => {
            let metrics = shared.metrics.clone();
            // Off the runtime's workers: a large registry takes a while to format.
            let body = tokio::task::spawn_blocking(move || metrics.render())
                .await
                .unwrap_or_else(|_| String::new());
            Response {
                status: 200,
                content_type: METRICS_CONTENT_TYPE,
                body,
            }
        }
        Route::Health => health(&shared.metrics),
        Route::Fixed(r) => r,
    };
    to_hyper(response, challenge)
}

fn to_hyper(r: Response, challenge: bool) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder()
        .status(StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static(r.content_type),
        );
    if r.status == 405 {
        builder = builder.header(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    if challenge {
        builder = builder.header(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"strait metrics\", charset=\"UTF-8\""),
        );
    }
    // HEAD: hyper sends the headers (with the length of this body) and no body.
    builder
        .body(Full::new(Bytes::from(r.body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// A response: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    Health,
    Fixed(Response),
}

fn route(method: &Method, path: &str, authorized: bool) -> Route {
    if method != Method::GET && method != Method::HEAD {
        return Route::Fixed(Response {
            status: 405,
            content_type: TEXT,
            body: "method not allowed\n".to_owned(),
        });
    }
    // A query string (`/metrics?name[]=…` from some scrapers) is not part of the path.
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/metrics" if authorized => Route::Metrics,
        "/metrics" => Route::Fixed(Response {
            status: 401,
            content_type: TEXT,
            body: "unauthorized\n".to_owned(),
        }),
        "/health" => Route::Health,
        _ => Route::Fixed(Response {
            status: 404,
            content_type: TEXT,
            body: "not found: try /metrics or /health\n".to_owned(),
        }),
    }
}

fn health(metrics: &Metrics) -> Response {
    match metrics.health() {
        Ok(s) => Response {
            status: 200,
            content_type: TEXT,
            body: format!("{s}\n"),
        },
        Err(s) => Response {
            status: 503,
            content_type: TEXT,
            body: format!("{s}\n"),
        },
    }
}

/// The response to `method path` without auth (pure, for tests). Renders `/metrics` on
/// the calling thread.
pub fn respond(method: &str, path: &str, metrics: &Metrics) -> Response {
    let method = Method::from_bytes(method.as_bytes()).unwrap_or(Method::OPTIONS);
    match route(&method, path, true) {
        Route::Metrics => Response {
            status: 200,
            content_type: METRICS_CONTENT_TYPE,
            body: metrics.render(),
        },
        Route::Health => health(metrics),
        Route::Fixed(r) => r,
    }
}

#[cfg(test)]
mod tests;
