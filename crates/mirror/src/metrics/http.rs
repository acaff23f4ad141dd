//! A minimal HTTP/1.1 responder for `/metrics` and `/health`.
//!
//! One request per connection (`Connection: close`), GET/HEAD only, headers capped at
//! 8 KiB and read within 5 s: enough for Prometheus and load-balancer probes, with nothing
//! a slow or hostile client can pin for long.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::Metrics;
use crate::error::MirrorError;

const MAX_REQUEST_HEAD: usize = 8 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The running server; stopped when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves in the background.
    pub async fn start(addr: SocketAddr, metrics: Metrics) -> Result<Self, MirrorError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| MirrorError::MetricsListen { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MirrorError::MetricsListen { addr, source })?;
        let task = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let metrics = metrics.clone();
                        tokio::spawn(async move {
                            if let Err(e) = serve(stream, &metrics).await {
                                tracing::debug!(error = %e, "metrics connection");
                            }
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: back off, keep serving.
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Ok(MetricsServer { addr, task })
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

/// The response to `method path` (pure, for tests).
pub fn respond(method: &str, path: &str, metrics: &Metrics) -> Response {
    const TEXT: &str = "text/plain; charset=utf-8";
    if method != "GET" && method != "HEAD" {
        return Response {
            status: 405,
            content_type: TEXT,
            body: "method not allowed\n".to_owned(),
        };
    }
    // Ignore a query string (`/metrics?name[]=…` from some scrapers).
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/metrics" => Response {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: metrics.render(),
        },
        "/health" => match metrics.health() {
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
        },
        _ => Response {
            status: 404,
            content_type: TEXT,
            body: "not found: try /metrics or /health\n".to_owned(),
        },
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "",
    }
}

async fn serve(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let head = tokio::time::timeout(READ_TIMEOUT, async {
        let mut chunk = [0u8; 1024];
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok::<_, std::io::Error>(Some(end));
            }
            if buf.len() > MAX_REQUEST_HEAD {
                return Ok(None);
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .unwrap_or(Ok(None))?;
    let (method, response) = match head {
        Some(end) => {
            let head = String::from_utf8_lossy(&buf[..end]);
            let mut words = head.lines().next().unwrap_or("").split_whitespace();
            let method = words.next().unwrap_or("").to_owned();
            let path = words.next().unwrap_or("");
            let r = respond(&method, path, metrics);
            (method, r)
        }
        None => (
            String::new(),
            Response {
                status: 400,
                content_type: "text/plain; charset=utf-8",
                body: "bad request\n".to_owned(),
            },
        ),
    };
    let header = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    if method != "HEAD" {
        stream.write_all(response.body.as_bytes()).await?;
    }
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::FlowState;

    async fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(request.as_bytes()).await.expect("write");
        s.shutdown().await.expect("shutdown");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn serves_metrics_and_health_over_tcp() {
        let metrics = Metrics::new();
        metrics.records_replicated("f", "t", 1, 42);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), metrics.clone())
            .await
            .expect("bind");
        let addr = server.local_addr();

        let r = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"), "{r}");
        assert!(
            r.contains(
                "strait_records_replicated_total{flow=\"f\",topic=\"t\",partition=\"1\"} 42\n"
            ),
            "{r}"
        );

        let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{r}");
        assert!(r.ends_with("no flow started yet\n"), "{r}");
        metrics.set_flow_state("f", FlowState::Running);
        let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        metrics.set_flow_state("f", FlowState::Failed("boom".into()));
        let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
        assert!(r.ends_with("flow f: failed: boom\n"), "{r}");

        let r = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n").await;
        assert!(r.ends_with("\r\n\r\n"), "HEAD has no body: {r}");
        let r = get(addr, "GET /nope HTTP/1.1\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
        let r = get(addr, "garbage-without-end").await;
        assert!(r.is_empty() || r.starts_with("HTTP/1.1 400 "), "{r}");
    }

    #[test]
    fn respond_rejects_other_methods_and_ignores_query() {
        let m = Metrics::new();
        assert_eq!(respond("POST", "/metrics", &m).status, 405);
        assert_eq!(respond("GET", "/metrics?x=1", &m).status, 200);
    }

    #[tokio::test]
    async fn bind_failure_names_the_address() {
        let first = MetricsServer::start("127.0.0.1:0".parse().unwrap(), Metrics::new())
            .await
            .unwrap();
        let err = MetricsServer::start(first.local_addr(), Metrics::new())
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("cannot listen on {}", first.local_addr())),
            "{err}"
        );
    }
}
