//! The security lines of `strait check`: the protocol, a TLS handshake with every bootstrap
//! address (protocol, cipher, certificate, expiry), and how SASL went.

use std::time::Duration;

use strait_client::{Error, ErrorKind};
use strait_mirror::config::Cluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Report;

/// A certificate expiring sooner than this gets a `!`.
const EXPIRY_WARNING_DAYS: i64 = 30;

/// A handshake still running after this makes `check` ask whether the port is plaintext.
const SLOW_HANDSHAKE: Duration = Duration::from_secs(1);

/// Whether `addr` answers a plaintext ApiVersions v0 request (size, api key 18, version 0,
/// correlation id 1, client id "strait-check"): then it is a plaintext Kafka listener.
/// Never resolves to `false` before `timeout` unless the peer refused or closed, so it
/// can race the TLS probe.
async fn answers_plaintext_kafka(addr: &str, timeout: Duration) -> bool {
    let ask = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        let client_id = b"strait-check";
        let mut req = Vec::with_capacity(14 + client_id.len());
        let len = 10 + client_id.len() as u32;
        req.extend_from_slice(&len.to_be_bytes());
        req.extend_from_slice(&18i16.to_be_bytes());
        req.extend_from_slice(&0i16.to_be_bytes());
        req.extend_from_slice(&1i32.to_be_bytes());
        req.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
        req.extend_from_slice(client_id);
        s.write_all(&req).await.ok()?;
        let mut head = [0u8; 8];
        s.read_exact(&mut head).await.ok()?;
        Some(head[4..8] == 1i32.to_be_bytes())
    };
    matches!(tokio::time::timeout(timeout, ask).await, Ok(Some(true)))
}

/// `✓ security: SASL_SSL`.
pub(super) fn protocol(cluster: &Cluster, report: &mut Report) {
    report.ok(format!("security: {}", cluster.security.protocol_name()));
}

/// The reason of a TLS or SASL error without the kind's prefix (the line names it).
fn reason(e: &Error) -> String {
    match e.kind() {
        ErrorKind::Tls(m) | ErrorKind::Authentication(m) => m.clone(),
        _ => e.to_string(),
    }
}

/// A TLS handshake with each bootstrap address. False when one failed: the cluster's other
/// checks are then skipped (they would all fail the same way).
pub(super) async fn tls(cluster: &Cluster, report: &mut Report) -> bool {
    let Some(cfg) = &cluster.security.tls else {
        return true;
    };
    let limit = cluster.connect_timeout + cfg.handshake_timeout;
    let mut ok = true;
    for addr in &cluster.bootstrap_servers {
        let probe = strait_client::security::tls::probe(addr, cfg, cluster.connect_timeout);
        let probe = tokio::time::timeout(limit, probe);
        tokio::pin!(probe);
        // A plaintext Kafka listener (Tansu, for one) waits for the rest of the "frame" a
        // TLS ClientHello seems to start, so the handshake would only end at its deadline.
        // When it is slow, ask the address in plaintext: an answer explains at once.
        let slow = tokio::select! {
            r = &mut probe => Some(r),
            _ = tokio::time::sleep(SLOW_HANDSHAKE) => None,
        };
        let result = match slow {
            Some(r) => r,
            None => {
                let plain = answers_plaintext_kafka(addr, cluster.connect_timeout);
                tokio::select! {
                    r = &mut probe => r,
                    true = plain => {
                        report.fail(format!(
                            "TLS: {addr} does not answer the TLS handshake but answers plaintext \
                             Kafka: is this a TLS listener? (security.protocol ssl/sasl_ssl needs \
                             the broker's SSL or SASL_SSL listener port)"
                        ));
                        ok = false;
                        continue;
                    }
                }
            }
        };
        match result {
            Ok(Ok(info)) => {
                let days = info.days_until_expiry();
                let line = format!(
                    "TLS {addr}: {}, {}, certificate {} (issuer {}), expires in {days} day(s)",
                    info.protocol, info.cipher, info.subject, info.issuer
                );
                if days < EXPIRY_WARNING_DAYS {
                    report.warn(format!("{line}: renew it soon"));
                } else {
                    report.ok(line);
                }
            }
            Ok(Err(e)) => {
                report.fail(format!("TLS: {}", reason(&e)));
                ok = false;
            }
            Err(_) => {
                report.fail(format!(
                    "TLS: no TLS handshake with {addr} within {limit:?}"
                ));
                ok = false;
            }
        }
    }
    ok
}

/// The line for a failed connection, by the typed error inside it: `TLS`, `SASL`, or
/// `reachable`.
pub(super) fn connect_failure(e: &anyhow::Error, report: &mut Report) {
    match e.downcast_ref::<Error>().map(|c| (c, c.kind())) {
        Some((c, ErrorKind::Authentication(_))) => report.fail(format!("SASL: {}", reason(c))),
        Some((c, ErrorKind::Tls(_))) => report.fail(format!("TLS: {}", reason(c))),
        Some((c, _)) if c.is_auth_failure() => report.fail(format!("SASL: {c}")),
        _ => report.fail(format!("reachable: {e:#}")),
    }
}

/// `✓ SASL: …` once a connection authenticated (connecting does the SASL exchange).
pub(super) fn sasl_ok(cluster: &Cluster, report: &mut Report) {
    if let Some(s) = &cluster.security.sasl {
        report.ok(format!(
            "SASL: mechanism {} accepted, authenticated as {:?}",
            s.mechanism(),
            s.user()
        ));
    }
}
