//! Whether a Docker engine answers, asked the way the Docker CLI would: `GET /_ping` on
//! `DOCKER_HOST` (`unix://…` or `tcp://…`) or, without it, on `/var/run/docker.sock`.
//! [`require`] turns "no" into a test failure that says what is missing: a scenario that
//! cannot run must not pass.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
const TIMEOUT: Duration = Duration::from_secs(5);

/// Panics (fails the test) unless a Docker engine answers [`ping`].
pub fn require() {
    if let Err(why) = ping() {
        panic!("{}", missing(&why));
    }
}

/// The failure message of [`require`].
fn missing(why: &str) -> String {
    format!(
        "this scenario needs a Docker engine that can pull apache/kafka, and none answered \
         ({why}). Run it with scripts/test-kafka on a machine with one (set DOCKER_HOST if \
         it is not on {DEFAULT_SOCKET})."
    )
}

/// `Ok` when the engine at `DOCKER_HOST` (or the default socket) answers `/_ping` with
/// 200; otherwise what went wrong.
pub fn ping() -> Result<(), String> {
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| format!("unix://{DEFAULT_SOCKET}"));
    ping_host(&host)
}

/// [`ping`] of the engine at `host` (`unix://PATH` or `tcp://HOST:PORT`).
pub fn ping_host(host: &str) -> Result<(), String> {
    let answer = if let Some(path) = host.strip_prefix("unix://") {
        let mut s = UnixStream::connect(path).map_err(|e| format!("{path}: {e}"))?;
        s.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        exchange(&mut s)
    } else if let Some(addr) = host.strip_prefix("tcp://") {
        let addr = addr
            .to_socket_addrs()
            .map_err(|e| format!("DOCKER_HOST={host}: {e}"))?
            .next()
            .ok_or_else(|| format!("DOCKER_HOST={host}: no address"))?;
        let mut s =
            TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("{host}: {e}"))?;
        if std::env::var_os("DOCKER_TLS_VERIFY").is_some() {
            // A TLS engine: the connection is as far as this check goes.
            return Ok(());
        }
        s.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        exchange(&mut s)
    } else {
        return Err(format!(
            "DOCKER_HOST={host}: only unix:// and tcp:// are understood"
        ));
    };
    let answer = answer.map_err(|e| format!("{host}: {e}"))?;
    let status = answer.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(format!("{host} answered /_ping with {status:?}"))
    }
}

fn exchange(stream: &mut (impl Read + Write)) -> std::io::Result<String> {
    stream.write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")?;
    let mut buf = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests;
