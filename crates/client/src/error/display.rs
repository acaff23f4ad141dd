//! How an error reads: `Display` for [`ErrorKind`] and [`Error`] (the kind, then the
//! call's context), `Debug`, and the wording of rustls failures (what to check).

use std::fmt;

use super::{Error, ErrorKind};

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(k) => write!(f, "i/o error: {k}"),
            ErrorKind::ConnectionClosed => f.write_str("connection closed"),
            ErrorKind::Timeout => f.write_str("request timed out"),
            ErrorKind::Kafka(e) => write!(f, "broker error {e} ({})", e.code()),
            ErrorKind::UnsupportedVersion { api, broker, ours } => match broker {
                Some((lo, hi)) => write!(
                    f,
                    "broker supports {api:?} v{lo}..v{hi}, this client needs v{}..v{}",
                    ours.0, ours.1
                ),
                None => write!(f, "broker does not support {api:?} (UNSUPPORTED)"),
            },
            ErrorKind::Protocol(m) => write!(f, "protocol error: {m}"),
            ErrorKind::Encode(m) => write!(f, "cannot encode request: {m}"),
            ErrorKind::InvalidInput(m) => write!(f, "invalid input: {m}"),
            ErrorKind::NoBrokerAvailable => f.write_str("no broker available"),
            ErrorKind::ProducerFenced(m) => write!(f, "producer must be re-initialised: {m}"),
            ErrorKind::NotSent(m) => write!(f, "not sent: {m}"),
            ErrorKind::Fenced(m) => write!(f, "transactional producer fenced: {m}"),
            ErrorKind::TransactionAbortable(m) => {
                write!(f, "transaction must be aborted: {m}")
            }
            ErrorKind::TransactionFatal(m) => write!(f, "transactional producer failed: {m}"),
            ErrorKind::Tls(m) => write!(f, "TLS error: {m}"),
            ErrorKind::Authentication(m) => write!(f, "authentication failed: {m}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner.kind)?;
        let c = &self.inner.ctx;
        if let Some(m) = &c.message {
            write!(f, ": {m}")?;
        }
        if let Some(a) = c.api {
            write!(f, " [api {a:?}]")?;
        }
        if let Some(b) = c.broker {
            write!(f, " [broker {b}]")?;
        }
        match (&c.topic, c.partition) {
            (Some(t), Some(p)) => write!(f, " [{t}-{p}]")?,
            (Some(t), None) => write!(f, " [topic {t}]")?,
            _ => {}
        }
        if let Some(o) = c.offset {
            write!(f, " [offset {o}]")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("context", &self.inner.ctx)
            .field("source", &self.inner.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

/// A TLS error that surfaced on a read or write after the handshake.
pub(super) fn describe_after_handshake(e: &rustls::Error) -> String {
    format!(
        "the TLS session failed: {}",
        describe_rustls(e, "the broker")
    )
}

/// What a rustls failure means, in words that say what to check (`host`: the name the
/// broker's certificate was verified against).
pub(crate) fn describe_rustls(e: &rustls::Error, host: &str) -> String {
    use rustls::{CertificateError as C, Error as R};
    match e {
        R::InvalidCertificate(C::UnknownIssuer) => {
            "the broker's certificate is not signed by a trusted CA (check `tls.ca_file`)".into()
        }
        R::InvalidCertificate(C::Expired) | R::InvalidCertificate(C::ExpiredContext { .. }) => {
            "the broker's certificate has expired".into()
        }
        R::InvalidCertificate(C::NotValidForName)
        | R::InvalidCertificate(C::NotValidForNameContext { .. }) => format!(
            "the broker's certificate is not valid for {host:?} (set `tls.server_name` if the \
             broker is reached under another name)"
        ),
        R::InvalidMessage(_) | R::InappropriateMessage { .. } => {
            format!("the peer did not answer with TLS ({e}): is this a plaintext listener?")
        }
        R::AlertReceived(a) => format!(
            "the broker refused the handshake ({a:?}): a missing or untrusted client \
             certificate for mutual TLS, or no common protocol version"
        ),
        other => other.to_string(),
    }
}
