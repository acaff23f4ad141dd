//! HTTP basic auth (RFC 7617) for `/metrics`, compared in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hyper::header::HeaderValue;
use subtle::ConstantTimeEq;

use crate::config::resolved::MetricsBasicAuth;

/// The expected `Authorization` header, precomputed. `Debug` shows nothing of it.
#[derive(Clone)]
pub(crate) struct BasicAuth {
    /// `base64(username ":" password)`.
    token: Vec<u8>,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BasicAuth(<redacted>)")
    }
}

impl BasicAuth {
    pub(crate) fn new(creds: &MetricsBasicAuth) -> Self {
        let plain = format!("{}:{}", creds.username, creds.password());
        BasicAuth {
            token: STANDARD.encode(plain.as_bytes()).into_bytes(),
        }
    }

    /// Whether `header` (the request's `Authorization`) carries these credentials. The
    /// scheme is case-insensitive; the credentials are compared in constant time (their
    /// length is not secret).
    pub(crate) fn check(&self, header: Option<&HeaderValue>) -> bool {
        let Some(value) = header else {
            return false;
        };
        let value = value.as_bytes();
        let Some((scheme, rest)) = split_once(value, b' ') else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"basic") {
            return false;
        }
        let token = rest.trim_ascii();
        bool::from(token.ct_eq(&self.token))
    }
}

fn split_once(v: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let i = v.iter().position(|b| *b == sep)?;
    Some((&v[..i], &v[i + 1..]))
}

#[cfg(test)]
mod tests;
