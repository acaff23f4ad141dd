use super::*;
use crate::metrics::FlowState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    // The server may reset a connection it rejected: keep what was read.
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn serves_metrics_and_health_over_tcp() {
    let metrics = Metrics::new();
    metrics.records_replicated("f", "t", 1, 42);
    let server = MetricsServer::start(
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        metrics.clone(),
    )
    .await
    .expect("bind");
    let addr = server.local_addr();

    let r = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains(&format!("content-type: {METRICS_CONTENT_TYPE}")),
        "{r}"
    );
    assert!(r.to_ascii_lowercase().contains("connection: close"), "{r}");
    assert!(
        r.contains("strait_records_replicated_total{flow=\"f\",topic=\"t\",partition=\"1\"} 42\n"),
        "{r}"
    );

    let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{r}");
    assert!(r.ends_with("no flow started yet\n"), "{r}");
    metrics.set_flow_state("f", FlowState::Running);
    let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.ends_with("ok: 1 flow(s) running\n"), "{r}");
    metrics.set_flow_state("f", FlowState::Failed("boom".into()));
    let r = get(addr, "GET /health HTTP/1.1\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
    assert!(r.ends_with("flow f: failed: boom\n"), "{r}");

    let r = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.ends_with("\r\n\r\n"), "HEAD has no body: {r}");
    let r = get(addr, "GET /nope HTTP/1.1\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
    let r = get(
        addr,
        "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 405 "), "{r}");
    assert!(r.to_ascii_lowercase().contains("allow: get, head"), "{r}");
    let r = get(addr, "garbage-without-end\r\n\r\n").await;
    assert!(r.is_empty() || r.starts_with("HTTP/1.1 400 "), "{r}");
}

#[test]
fn respond_rejects_other_methods_and_ignores_query() {
    let m = Metrics::new();
    assert_eq!(respond("POST", "/metrics", &m).status, 405);
    assert_eq!(respond("GET", "/metrics?x=1", &m).status, 200);
    assert_eq!(respond("GET", "/health", &m).status, 503);
    assert_eq!(respond("GET", "/", &m).status, 404);
}

#[tokio::test]
async fn bind_failure_names_the_address() {
    let first = MetricsServer::start("127.0.0.1:0".parse::<SocketAddr>().unwrap(), Metrics::new())
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
