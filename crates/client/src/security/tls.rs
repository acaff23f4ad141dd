//! TLS with rustls (ring provider): trust anchors, client certificates, the handshake
//! with a deadline, and what `strait check` shows about a broker's certificate.

use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::config::{CaRoots, TlsConfig};
use crate::error::{Error, ErrorKind, Result, describe_rustls};

/// A prepared TLS client: the rustls config is built once per client.
#[derive(Clone)]
pub(crate) struct Connector {
    inner: TlsConnector,
    server_name: Option<String>,
    handshake_timeout: Duration,
}

fn tls_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Tls(msg.into()))
}

fn read_file(what: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| tls_err(format!("cannot read {what} {}: {e}", path.display())))
}

/// Parses every certificate in a PEM file.
fn load_certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_file(what, path)?;
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_reader_iter(&mut BufReader::new(&pem[..]))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| {
                tls_err(format!(
                    "{what} {}: not a PEM certificate file: {e}",
                    path.display()
                ))
            })?;
    if certs.is_empty() {
        return Err(tls_err(format!(
            "{what} {}: no `BEGIN CERTIFICATE` block found",
            path.display()
        )));
    }
    Ok(certs)
}

/// Reads a PEM private key: PKCS#8, PKCS#1 (RSA) or SEC1 (EC). The key's bytes never
/// appear in an error.
fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let pem = read_file("private key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| {
        tls_err(format!(
            "private key {}: no PKCS#8, PKCS#1 (RSA) or SEC1 (EC) PEM key found \
             (encrypted keys are not supported: decrypt with `openssl pkcs8 -in KEY -out KEY.pem`)",
            path.display()
        ))
    })
}

fn roots(ca: &CaRoots) -> Result<rustls::RootCertStore> {
    let mut store = rustls::RootCertStore::empty();
    match ca {
        CaRoots::PemFile(path) => {
            for c in load_certs("CA file", path)? {
                store
                    .add(c)
                    .map_err(|e| tls_err(format!("CA file {}: {e}", path.display())))?;
            }
        }
        CaRoots::System => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                // One unparsable system certificate must not disable TLS altogether.
                let _ = store.add(c);
            }
            if store.is_empty() {
                return Err(tls_err(
                    "no CA certificates found in the system trust store; set `tls.ca_file`",
                ));
            }
        }
    }
    Ok(store)
}

impl Connector {
    pub(crate) fn new(cfg: &TlsConfig) -> Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| tls_err(format!("TLS setup: {e}")))?
            .with_root_certificates(roots(&cfg.ca)?);
        let config = match &cfg.client_cert {
            None => builder.with_no_client_auth(),
            Some(cc) => {
                let chain = load_certs("client certificate", &cc.cert_file)?;
                let key = load_key(&cc.key_file)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    tls_err(format!(
                        "client certificate {} and key {} do not form a usable pair: {e}",
                        cc.cert_file.display(),
                        cc.key_file.display()
                    ))
                })?
            }
        };
        if let Some(n) = &cfg.server_name {
            ServerName::try_from(n.clone())
                .map_err(|_| tls_err(format!("server_name {n:?} is not a valid DNS name or IP")))?;
        }
        Ok(Connector {
            inner: TlsConnector::from(Arc::new(config)),
            server_name: cfg.server_name.clone(),
            handshake_timeout: cfg.handshake_timeout,
        })
    }

    /// The TLS handshake over `tcp`, verifying the certificate for the host of `addr`
    /// (or the configured server name), within the handshake deadline.
    pub(crate) async fn connect<S>(&self, tcp: S, addr: &str) -> Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let host = self
            .server_name
            .clone()
            .unwrap_or_else(|| host_of(addr).to_owned());
        let name = ServerName::try_from(host.clone())
            .map_err(|_| tls_err(format!("{addr}: {host:?} is not a valid DNS name or IP")))?;
        match tokio::time::timeout(self.handshake_timeout, self.inner.connect(name, tcp)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(handshake_error(addr, &host, e)),
            Err(_) => Err(Error::new(ErrorKind::Timeout).message(format!(
                "TLS handshake with {addr} did not finish within {:?} (is this a TLS \
                 listener? A plaintext listener may wait for more bytes instead of answering)",
                self.handshake_timeout
            ))),
        }
    }
}

/// The host part of `host:port` (IPv6 `[::1]:9093` → `::1`).
pub(crate) fn host_of(addr: &str) -> &str {
    let h = match addr.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => addr,
    };
    h.trim_start_matches('[').trim_end_matches(']')
}

/// Turns a failed handshake into a clear, non-retriable error.
fn handshake_error(addr: &str, host: &str, e: std::io::Error) -> Error {
    use std::io::ErrorKind as Io;
    let reason = if let Some(r) = e.get_ref().and_then(|r| r.downcast_ref::<rustls::Error>()) {
        describe_rustls(r, host)
    } else if matches!(
        e.kind(),
        Io::UnexpectedEof | Io::ConnectionReset | Io::BrokenPipe
    ) {
        "the broker closed the connection during the TLS handshake: is this a TLS listener \
         (security.protocol SSL/SASL_SSL)? A plaintext Kafka listener drops a TLS client \
         hello"
            .to_owned()
    } else {
        e.to_string()
    };
    tls_err(format!("TLS handshake with {addr} failed: {reason}"))
}

/// What a TLS handshake showed about a broker (for `strait check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsInfo {
    /// `TLSv1.3` or `TLSv1.2`.
    pub protocol: String,
    /// The negotiated cipher suite.
    pub cipher: String,
    /// Subject of the broker's certificate.
    pub subject: String,
    /// Issuer of the broker's certificate.
    pub issuer: String,
    /// End of validity, seconds since the Unix epoch.
    pub not_after_unix: i64,
}

impl TlsInfo {
    /// Whole days until the certificate expires (negative once expired).
    pub fn days_until_expiry(&self) -> i64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        (self.not_after_unix - now).div_euclid(86_400)
    }
}

pub(crate) fn info<S>(s: &TlsStream<S>) -> TlsInfo {
    let (_, conn) = s.get_ref();
    let protocol = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_owned(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_owned(),
        Some(v) => format!("{v:?}"),
        None => "unknown".to_owned(),
    };
    let cipher = conn
        .negotiated_cipher_suite()
        .map(|c| format!("{:?}", c.suite()))
        .unwrap_or_default();
    let (subject, issuer, not_after_unix) = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|der| x509_parser::parse_x509_certificate(der).ok())
        .map(|(_, cert)| {
            (
                cert.subject().to_string(),
                cert.issuer().to_string(),
                cert.validity().not_after.timestamp(),
            )
        })
        .unwrap_or_default();
    TlsInfo {
        protocol,
        cipher,
        subject,
        issuer,
        not_after_unix,
    }
}

/// Connects to `addr` and completes a TLS handshake only (no Kafka traffic), returning
/// what the handshake showed. Used by `strait check`.
pub async fn probe(addr: &str, cfg: &TlsConfig, connect_timeout: Duration) -> Result<TlsInfo> {
    let connector = Connector::new(cfg)?;
    let tcp = match tokio::time::timeout(connect_timeout, TcpStream::connect(addr)).await {
        Ok(r) => r.map_err(|e| Error::from(e).message(addr.to_owned()))?,
        Err(_) => {
            return Err(Error::new(ErrorKind::Timeout).message(format!("connecting to {addr}")));
        }
    };
    let s = connector.connect(tcp, addr).await?;
    Ok(info(&s))
}

#[cfg(test)]
mod tests;
