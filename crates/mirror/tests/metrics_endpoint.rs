//! The `/metrics` endpoint under hostile clients, with basic auth and with TLS, on real
//! sockets on 127.0.0.1. No assertion here is about speed: every wait is bounded by a
//! generous guard that only turns a hang into a failure.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use strait_mirror::Metrics;
use strait_mirror::config::load_str;
use strait_mirror::config::model::ConfigFile;
use strait_mirror::config::resolved::{MetricsBasicAuth, MetricsEndpoint, MetricsTls};
use strait_mirror::metrics::http::MetricsServer;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const GUARD: Duration = Duration::from_secs(60);

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().expect("addr")
}

/// A registry big enough (about 1 MB of text) that a response does not fit in socket
/// buffers: a client that never reads really blocks the write.
fn big_metrics() -> Metrics {
    let m = Metrics::new();
    for t in 0..100 {
        for p in 0..60 {
            let h = m.partition("flow", &format!("topic-with-a-long-name-{t}"), p);
            h.acked(1, 100, 0.01);
            h.lag(5, 0.5);
        }
    }
    m
}

async fn request<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, req: &str) -> String {
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    // A server that closes without reading everything may reset: keep what was read.
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn get(addr: SocketAddr, path: &str, auth: Option<(&str, &str)>) -> String {
    let s = TcpStream::connect(addr).await.expect("connect");
    request(s, &http_get(path, auth)).await
}

fn http_get(path: &str, auth: Option<(&str, &str)>) -> String {
    let auth = auth
        .map(|(u, p)| {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            format!("Authorization: Basic {token}\r\n")
        })
        .unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n")
}

/// Scrapes until a 200 (a full slot table closes new connections at once), within GUARD.
async fn scrape_until_ok(addr: SocketAddr) -> String {
    let started = Instant::now();
    loop {
        if let Ok(s) = TcpStream::connect(addr).await {
            let r = request(s, &http_get("/metrics", None)).await;
            if r.starts_with("HTTP/1.1 200 ") {
                return r;
            }
        }
        assert!(started.elapsed() < GUARD, "no successful scrape");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < GUARD, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_non_reading_clients_are_capped_and_dropped_while_scrapes_succeed() {
    const MAX: usize = 16;
    const IDLE: usize = 300;
    const NON_READERS: usize = 20;
    let endpoint = MetricsEndpoint {
        max_connections: MAX,
        read_timeout: Duration::from_millis(500),
        write_timeout: Duration::from_millis(500),
        ..MetricsEndpoint::plain(local())
    };
    let server = MetricsServer::start(endpoint, big_metrics())
        .await
        .expect("start");
    let addr = server.local_addr();
    let before = open_fds();

    // Connections that send a request and never read the (1 MB) response.
    let mut hostile = Vec::new();
    for _ in 0..NON_READERS {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        let _ = s.write_all(http_get("/metrics", None).as_bytes()).await;
        hostile.push(s);
    }
    // Connections that never send anything.
    for _ in 0..IDLE {
        hostile.push(TcpStream::connect(addr).await.expect("connect"));
    }
    assert!(server.connections() <= MAX, "{}", server.connections());
    // Our own client ends hold IDLE + NON_READERS descriptors; the server holds at most
    // MAX more (plus a few for the runtime). Without the cap it would hold one per client.
    let during = open_fds();
    assert!(
        during <= before + IDLE + NON_READERS + MAX + 16,
        "{before} descriptors before, {during} during the flood"
    );

    // A well-behaved scraper gets through while every hostile socket stays open.
    let r = scrape_until_ok(addr).await;
    assert!(r.contains("strait_records_replicated_total{"), "{r}");

    // Deadlines: every hostile connection is dropped by the server though none of the
    // clients closed or read anything.
    wait_for("the server to drop every hostile connection", || {
        server.connections() == 0
    })
    .await;
    drop(hostile);
    let r = scrape_until_ok(addr).await;
    assert!(r.contains("strait_lag_offsets{"), "{r}");
}

#[tokio::test]
async fn a_request_head_that_never_ends_is_cut_at_the_read_deadline() {
    let endpoint = MetricsEndpoint {
        read_timeout: Duration::from_millis(300),
        ..MetricsEndpoint::plain(local())
    };
    let server = MetricsServer::start(endpoint, Metrics::new())
        .await
        .expect("start");
    let mut s = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    // Half a request line, then one header byte at a time, slower than the deadline.
    s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        .await
        .expect("write");
    let slowloris = async {
        let mut out = Vec::new();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if s.write_all(b"a").await.is_err() {
                break;
            }
            let mut buf = [0u8; 512];
            match tokio::time::timeout(Duration::from_millis(1), s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        out
    };
    let out = tokio::time::timeout(GUARD, slowloris)
        .await
        .expect("the server closes a slow request head");
    let text = String::from_utf8_lossy(&out);
    assert!(!text.contains(" 200 "), "{text}");
    wait_for("the slot to be released", || server.connections() == 0).await;
}

#[tokio::test]
async fn basic_auth_protects_metrics_and_leaves_health_open() {
    let metrics = Metrics::new();
    metrics.partition("f", "t", 0).acked(7, 0, 0.0);
    let endpoint = MetricsEndpoint {
        basic_auth: Some(MetricsBasicAuth::new("prom", "pa:ss-wörd")),
        ..MetricsEndpoint::plain(local())
    };
    let server = MetricsServer::start(endpoint, metrics.clone())
        .await
        .expect("start");
    let addr = server.local_addr();

    let r = get(addr, "/metrics", None).await;
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains("www-authenticate: basic realm="),
        "{r}"
    );
    assert!(!r.contains("strait_"), "{r}");
    let r = get(addr, "/metrics", Some(("prom", "wrong"))).await;
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");
    let r = get(addr, "/metrics", Some(("other", "pa:ss-wörd"))).await;
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");
    let r = get(addr, "/metrics", Some(("prom", "pa:ss-wörd"))).await;
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
    assert!(r.contains("strait_records_replicated_total{"), "{r}");

    // /health needs no credentials (probes cannot send them).
    let r = get(addr, "/health", None).await;
    assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
    assert!(r.ends_with("no flow started yet\n"), "{r}");
    metrics.set_flow_state("f", strait_mirror::metrics::FlowState::Running);
    let r = get(addr, "/health", None).await;
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
}

struct Pki {
    dir: std::path::PathBuf,
    ca_der: rustls::pki_types::CertificateDer<'static>,
    files: MetricsTls,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A test CA and a server certificate for `localhost` and 127.0.0.1, as PEM files.
fn pki(tag: &str) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("params");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let dir = std::env::temp_dir().join(format!("strait-metrics-tls-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cert_file = dir.join("cert.pem");
    let key_file = dir.join("key.pem");
    std::fs::write(&cert_file, cert.pem()).expect("write cert");
    std::fs::write(&key_file, key.serialize_pem()).expect("write key");
    Pki {
        dir,
        ca_der: ca.der().clone(),
        files: MetricsTls {
            cert_file,
            key_file,
        },
    }
}

fn tls_client(ca: &rustls::pki_types::CertificateDer<'static>) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn https_scrape_with_a_test_ca_works_and_plaintext_does_not() {
    let pki = pki("ok");
    let metrics = Metrics::new();
    metrics.partition("f", "t", 3).acked(11, 0, 0.0);
    let endpoint = MetricsEndpoint {
        tls: Some(pki.files.clone()),
        basic_auth: Some(MetricsBasicAuth::new("prom", "secret")),
        ..MetricsEndpoint::plain(local())
    };
    let server = MetricsServer::start(endpoint, metrics)
        .await
        .expect("start");
    let addr = server.local_addr();
    let connector = tls_client(&pki.ca_der);

    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let r = request(tls, &http_get("/metrics", Some(("prom", "secret")))).await;
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
    assert!(
        r.contains("strait_records_replicated_total{flow=\"f\",topic=\"t\",partition=\"3\"} 11"),
        "{r}"
    );
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("ip");
    let tls = connector.connect(name, tcp).await.expect("TLS by IP");
    let r = request(tls, &http_get("/metrics", None)).await;
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");

    // Plain HTTP to the TLS port gets no HTTP response.
    let r = tokio::time::timeout(GUARD, get(addr, "/metrics", Some(("prom", "secret"))))
        .await
        .expect("closed");
    assert!(!r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(!r.contains("strait_"), "{r}");
}

#[tokio::test]
async fn unreadable_tls_files_fail_the_start_naming_the_file() {
    let pki = pki("bad");
    std::fs::write(&pki.files.key_file, "not a key").expect("write");
    let endpoint = MetricsEndpoint {
        tls: Some(pki.files.clone()),
        ..MetricsEndpoint::plain(local())
    };
    let err = MetricsServer::start(endpoint, Metrics::new())
        .await
        .expect_err("bad key");
    let msg = err.to_string();
    assert!(msg.contains("key.pem"), "{msg}");
    let endpoint = MetricsEndpoint {
        tls: Some(MetricsTls {
            cert_file: pki.dir.join("missing.pem"),
            key_file: pki.files.key_file.clone(),
        }),
        ..MetricsEndpoint::plain(local())
    };
    let err = MetricsServer::start(endpoint, Metrics::new())
        .await
        .expect_err("missing cert");
    assert!(err.to_string().contains("missing.pem"), "{err}");
}

const FLOW: &str = r#"[clusters.a]
bootstrap_servers = "127.0.0.1:1"
[clusters.b]
bootstrap_servers = "127.0.0.1:2"
[[flows]]
source = "a"
target = "b"
"#;

#[test]
fn metrics_keys_resolve_and_the_password_never_shows_in_debug() {
    let text = format!(
        "{FLOW}[metrics]\nlisten = \"127.0.0.1:9999\"\nmax_connections = 8\n\
         read_timeout = \"2s\"\nwrite_timeout = \"3s\"\n\
         tls_cert_file = \"/etc/strait/cert.pem\"\ntls_key_file = \"/etc/strait/key.pem\"\n\
         basic_auth_username = \"prom\"\nbasic_auth_password = \"${{PW}}\"\n"
    );
    let lookup = |v: &str| (v == "PW").then(|| "hunter2-very-secret".to_owned());
    let config = load_str(&text, "test", &lookup).expect("valid");
    let m = config.metrics.as_ref().expect("enabled");
    assert_eq!(m.listen.port(), 9999);
    assert_eq!(config.metrics_listen, Some(m.listen));
    assert_eq!(m.max_connections, 8);
    assert_eq!(m.read_timeout, Duration::from_secs(2));
    assert_eq!(m.write_timeout, Duration::from_secs(3));
    assert_eq!(
        m.tls.as_ref().map(|t| t.key_file.clone()),
        Some("/etc/strait/key.pem".into())
    );
    let auth = m.basic_auth.as_ref().expect("auth");
    assert_eq!(
        (auth.username.as_str(), auth.password()),
        ("prom", "hunter2-very-secret")
    );
    let debug = format!("{config:?} {config:#?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("prom"), "{debug}");

    let substituted = text.replace("${PW}", "hunter2-very-secret");
    let file: ConfigFile = toml::from_str(&substituted).expect("model");
    let debug = format!("{file:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[test]
fn metrics_defaults_and_bad_values() {
    let config = load_str(FLOW, "test", &|_| None).expect("valid");
    let m = config.metrics.as_ref().expect("on by default");
    assert_eq!(m.max_connections, 64);
    assert_eq!(m.read_timeout, Duration::from_secs(5));
    assert_eq!(m.write_timeout, Duration::from_secs(10));
    assert!(m.tls.is_none() && m.basic_auth.is_none());

    let text = format!(
        "{FLOW}[metrics]\nmax_connections = 0\nread_timeout = \"0s\"\n\
         tls_cert_file = \"c.pem\"\nbasic_auth_password = \"topsecret\"\n"
    );
    let err = load_str(&text, "test", &|_| None)
        .expect_err("invalid")
        .to_string();
    for key in [
        "metrics.max_connections",
        "metrics.read_timeout",
        "metrics.tls_key_file",
        "metrics.basic_auth_username",
    ] {
        assert!(err.contains(key), "{key}: {err}");
    }
    assert!(!err.contains("topsecret"), "{err}");
}

/// Replication runs to completion while the endpoint is flooded with idle and
/// non-reading connections, and a scrape during the flood reports its progress.
#[test]
fn replication_completes_while_the_metrics_endpoint_is_flooded() {
    use strait_testkit::config::{SYNC_OFF, two_cluster_flow};
    use strait_testkit::rdkafka::{self, ProduceOptions};
    use strait_testkit::{DataGen, RecordSpec, TansuCluster};

    const RECORDS: usize = 2000;
    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "flood", 3, &[]).expect("topic");
    let mut data = DataGen::new(11);
    let mut records = Vec::new();
    for p in 0..3 {
        let spec = RecordSpec {
            partition: Some(p),
            ..RecordSpec::default()
        };
        records.extend(data.records(RECORDS / 3 + usize::from(p < 2), &spec));
    }
    records.truncate(RECORDS);
    rdkafka::produce(&src, "flood", &records, &ProduceOptions::default()).expect("produce");

    let text = format!(
        "{}[flows.topics]\ninclude = [\"flood\"]\n{SYNC_OFF}[engine]\nfetch_max_wait = \"100ms\"\n",
        two_cluster_flow(&src, &dst, "5s")
    );
    let cfg = load_str(&text, "test config", &|_| None).expect("valid config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let engine = strait_mirror::Engine::new(cfg);
    runtime.block_on(async {
        let endpoint = MetricsEndpoint {
            max_connections: 8,
            ..MetricsEndpoint::plain(local())
        };
        let server = MetricsServer::start(endpoint, engine.metrics().clone())
            .await
            .expect("start");
        let addr = server.local_addr();
        let mut hostile = Vec::new();
        for _ in 0..10 {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            let _ = s.write_all(http_get("/metrics", None).as_bytes()).await;
            hostile.push(s);
        }
        for _ in 0..300 {
            hostile.push(TcpStream::connect(addr).await.expect("connect"));
        }
        let summary = tokio::time::timeout(GUARD * 3, engine.run_once())
            .await
            .expect("replication finishes during the flood")
            .expect("run_once");
        assert_eq!(summary.records(), RECORDS as u64);
        // The hostile sockets are still open; a scrape still gets through.
        let r = scrape_until_ok(addr).await;
        let total: f64 = r
            .lines()
            .filter(|l| l.starts_with("strait_records_replicated_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert_eq!(total, RECORDS as f64, "{r}");
        drop(hostile);
    });
}
