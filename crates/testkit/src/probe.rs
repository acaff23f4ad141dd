//! A minimal raw Kafka ApiVersions v0 request over `std::net::TcpStream`.
//!
//! Used to tell when a broker is up (and through the fault proxy) without depending on
//! `strait-client`. Everything read off the wire is bounds-checked.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::error::{Error, Result, io};

/// The ApiVersions API key.
const API_VERSIONS: i16 = 18;
/// Largest response we accept (the real one is well under 1 KiB).
const MAX_RESPONSE: usize = 1 << 20;
const CLIENT_ID: &[u8] = b"strait-testkit";

static CORRELATION: AtomicI32 = AtomicI32::new(1);

/// One entry of an ApiVersions response: an API and the versions the broker supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersion {
    /// The API key (0 = Produce, 1 = Fetch, 18 = ApiVersions, ...).
    pub api_key: i16,
    /// Lowest supported version.
    pub min_version: i16,
    /// Highest supported version.
    pub max_version: i16,
}

/// Sends one ApiVersions v0 request to `addr` on a new connection and returns the APIs the
/// broker advertises. Fails unless the response has our correlation id and error code 0.
/// `timeout` bounds the connect and each read and write.
pub fn api_versions(addr: impl ToSocketAddrs, timeout: Duration) -> Result<Vec<ApiVersion>> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(io("resolving the broker address"))?
        .collect();
    let addr = addrs
        .first()
        .ok_or_else(|| Error::Protocol("the broker address resolved to nothing".into()))?;
    let mut stream =
        TcpStream::connect_timeout(addr, timeout).map_err(io(format!("connecting to {addr}")))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(io("setting socket timeouts"))?;
    api_versions_on(&mut stream)
}

/// Sends one ApiVersions v0 request on an existing stream and reads the response.
pub fn api_versions_on(stream: &mut (impl Read + Write)) -> Result<Vec<ApiVersion>> {
    let correlation = CORRELATION.fetch_add(1, Ordering::Relaxed);
    let request = encode_request(correlation);
    stream
        .write_all(&request)
        .map_err(io("writing the ApiVersions request"))?;
    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .map_err(io("reading the ApiVersions response size"))?;
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= MAX_RESPONSE)
        .ok_or_else(|| Error::Protocol(format!("implausible response size {size}")))?;
    let mut body = vec![0u8; size];
    stream
        .read_exact(&mut body)
        .map_err(io("reading the ApiVersions response"))?;
    decode_response(&body, correlation)
}

fn encode_request(correlation: i32) -> Vec<u8> {
    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&API_VERSIONS.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes()); // version 0
    body.extend_from_slice(&correlation.to_be_bytes());
    body.extend_from_slice(&(CLIENT_ID.len() as i16).to_be_bytes());
    body.extend_from_slice(CLIENT_ID);
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.0.len() < N {
            return Err(Error::Protocol("ApiVersions response is truncated".into()));
        }
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }
    fn i16(&mut self) -> Result<i16> {
        self.take::<2>().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Result<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }
}

fn decode_response(body: &[u8], correlation: i32) -> Result<Vec<ApiVersion>> {
    let mut c = Cursor(body);
    let got = c.i32()?;
    if got != correlation {
        return Err(Error::Protocol(format!(
            "correlation id {got}, expected {correlation}"
        )));
    }
    let error_code = c.i16()?;
    if error_code != 0 {
        return Err(Error::Protocol(format!(
            "ApiVersions error code {error_code}"
        )));
    }
    let count = c.i32()?;
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n.saturating_mul(6) <= c.0.len())
        .ok_or_else(|| Error::Protocol(format!("implausible ApiVersions count {count}")))?;
    (0..count)
        .map(|_| {
            Ok(ApiVersion {
                api_key: c.i16()?,
                min_version: c.i16()?,
                max_version: c.i16()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
