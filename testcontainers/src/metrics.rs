//! A member's own view, from its `/metrics` (Prometheus text): `GET /metrics` on
//! `127.0.0.1:<port>` and one sample of a series by name and `flow` label.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The body of `GET /metrics` on `127.0.0.1:port`; empty while nothing answers.
pub fn scrape(port: u16) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: strait\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The value of series `name{flow="<flow>"}` in `text` (a scrape), if present.
pub fn sample(text: &str, name: &str, flow: &str) -> Option<f64> {
    let prefix = format!("{name}{{flow=\"{flow}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests;
