//! The SASL exchange on one connection (KIP-152): SaslHandshake v1 naming the mechanism,
//! then SaslAuthenticate rounds carrying the mechanism's messages. Run once the connection
//! has negotiated its versions, and again in band for re-authentication (KIP-368).

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::config::{SaslConfig, ScramHash, Secret, TokenProvider};
use super::oauth;
use super::scram::ScramClient;
use crate::connection::{Connection, Gate};
use crate::error::{Error, ErrorKind, Result};

/// Who is authenticating where, for messages (never a secret).
struct Who<'a> {
    broker: i32,
    addr: &'a str,
}

fn fail(sasl: &SaslConfig, who: &Who<'_>, reason: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Authentication(format!(
        "SASL {} authentication of {:?} at {} failed: {reason}",
        sasl.mechanism(),
        sasl.user(),
        who.addr
    )))
    .broker(who.broker)
}

/// Authenticates a connection to the broker at `addr` that has just negotiated its
/// versions. Returns the session lifetime the broker granted, if any.
pub(crate) async fn authenticate(
    conn: &Connection,
    cfg: &SaslConfig,
    addr: &str,
    timeout: Duration,
) -> Result<Option<Duration>> {
    let who = Who {
        broker: conn.broker_id(),
        addr,
    };
    exchange(conn, cfg, &who, timeout, Gate::Pass).await
}

/// Re-authenticates in band (KIP-368) without failing requests in flight: holds the
/// connection's gate so new requests wait, and runs the exchange behind the requests
/// already queued (the broker answers in order). Returns the new session lifetime.
pub(crate) async fn reauthenticate(
    conn: &Connection,
    cfg: &SaslConfig,
    addr: &str,
    timeout: Duration,
) -> Result<Option<Duration>> {
    let _exclusive = conn.hold_gate().await;
    let who = Who {
        broker: conn.broker_id(),
        addr,
    };
    exchange(conn, cfg, &who, timeout, Gate::Held).await
}

/// Runs the whole exchange. Returns the session lifetime the broker granted, if any.
async fn exchange(
    conn: &Connection,
    sasl: &SaslConfig,
    who: &Who<'_>,
    timeout: Duration,
    gate: Gate,
) -> Result<Option<Duration>> {
    let (hs_version, auth_version) = pick_versions(conn, sasl, who)?;
    handshake(conn, sasl, who, hs_version, timeout, gate).await?;
    let rounds = Rounds {
        conn,
        sasl,
        who,
        version: auth_version,
        timeout,
        gate,
    };
    let last = match sasl {
        SaslConfig::Plain { username, password } => {
            rounds.send(plain_message(username, password)).await?
        }
        SaslConfig::Scram {
            hash,
            username,
            password,
        } => scram_rounds(&rounds, *hash, username, password).await?,
        SaslConfig::OAuthBearer {
            provider,
            extensions,
        } => oauth_rounds(&rounds, provider.as_ref(), extensions).await?,
    };
    Ok((last.session_lifetime_ms > 0)
        .then(|| Duration::from_millis(last.session_lifetime_ms as u64)))
}

/// The SaslHandshake and SaslAuthenticate versions to use, or why the broker offers none.
fn pick_versions(conn: &Connection, sasl: &SaslConfig, who: &Who<'_>) -> Result<(i16, i16)> {
    let versions = conn.versions();
    let hs_version = versions.pick(ApiKey::SaslHandshake).map_err(|_| {
        fail(
            sasl,
            who,
            "the broker does not offer SaslHandshake v1 (is this a SASL listener?)",
        )
    })?;
    let auth_version = versions
        .pick(ApiKey::SaslAuthenticate)
        .map_err(|_| fail(sasl, who, "the broker does not offer SaslAuthenticate"))?;
    Ok((hs_version, auth_version))
}

/// Sends SaslHandshake naming the mechanism; fails, listing what the broker offers, if the
/// broker does not enable it.
async fn handshake(
    conn: &Connection,
    sasl: &SaslConfig,
    who: &Who<'_>,
    version: i16,
    timeout: Duration,
    gate: Gate,
) -> Result<()> {
    let hs =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(sasl.mechanism()));
    let resp = conn
        .call_gated(&hs, version, timeout, gate)
        .await
        .map_err(|e| transport(sasl, who, e))?;
    if resp.error_code != 0 {
        let offered: Vec<&str> = resp.mechanisms.iter().map(|m| m.as_str()).collect();
        return Err(fail(
            sasl,
            who,
            format!(
                "the broker does not enable {} (it offers: {})",
                sasl.mechanism(),
                if offered.is_empty() {
                    "none".to_owned()
                } else {
                    offered.join(", ")
                }
            ),
        ));
    }
    Ok(())
}

/// What each SaslAuthenticate round of one exchange is sent with.
struct Rounds<'a> {
    conn: &'a Connection,
    sasl: &'a SaslConfig,
    who: &'a Who<'a>,
    version: i16,
    timeout: Duration,
    gate: Gate,
}

impl Rounds<'_> {
    /// Sends one SaslAuthenticate round carrying `bytes`; a broker error fails the exchange.
    async fn send(&self, bytes: Vec<u8>) -> Result<SaslAuthenticateResponse> {
        let (sasl, who) = (self.sasl, self.who);
        let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
        let r: SaslAuthenticateResponse = self
            .conn
            .call_gated(&req, self.version, self.timeout, self.gate)
            .await
            .map_err(|e| transport(sasl, who, e))?;
        if r.error_code != 0 {
            let msg = r
                .error_message
                .as_ref()
                .map(|m| m.as_str().to_owned())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| format!("error code {}", r.error_code));
            return Err(fail(sasl, who, format!("the broker refused it: {msg}")));
        }
        Ok(r)
    }
}

/// The PLAIN message (RFC 4616): no authorization id, then the user and the password.
fn plain_message(username: &str, password: &Secret) -> Vec<u8> {
    let mut msg = Vec::with_capacity(username.len() + password.expose().len() + 2);
    msg.push(0);
    msg.extend_from_slice(username.as_bytes());
    msg.push(0);
    msg.extend_from_slice(password.expose().as_bytes());
    msg
}

/// The two SCRAM rounds (RFC 5802), checking the server's proof. Returns the last answer.
async fn scram_rounds(
    rounds: &Rounds<'_>,
    hash: ScramHash,
    username: &str,
    password: &Secret,
) -> Result<SaslAuthenticateResponse> {
    let (sasl, who) = (rounds.sasl, rounds.who);
    let mut scram = ScramClient::new(hash, username, password.clone());
    let first = rounds.send(scram.client_first()).await?;
    let fin = scram
        .server_first(&first.auth_bytes)
        .map_err(|e| fail(sasl, who, e))?;
    let last = rounds.send(fin).await?;
    scram
        .server_final(&last.auth_bytes)
        .map_err(|e| fail(sasl, who, e))?;
    Ok(last)
}

/// The OAUTHBEARER round (RFC 7628) with a token from `provider`. Returns its answer.
async fn oauth_rounds(
    rounds: &Rounds<'_>,
    provider: &dyn TokenProvider,
    extensions: &[(String, String)],
) -> Result<SaslAuthenticateResponse> {
    let (sasl, who) = (rounds.sasl, rounds.who);
    let token = provider.token().await.map_err(|e| fail(sasl, who, e))?;
    let r = rounds.send(oauth::client_first(&token, extensions)).await?;
    if !r.auth_bytes.is_empty() {
        // RFC 7628 §3.2.2: an error challenge; answer with %x01 and the broker
        // then fails the exchange. Report the server's status either way.
        let status = String::from_utf8_lossy(&r.auth_bytes).into_owned();
        let _ = rounds.send(vec![1]).await;
        return Err(fail(
            sasl,
            who,
            format!("the broker refused the token: {status}"),
        ));
    }
    Ok(r)
}

/// A network or protocol failure in the middle of the exchange keeps its kind (a dropped
/// connection is retriable), with the mechanism and user added.
fn transport(sasl: &SaslConfig, who: &Who<'_>, e: Error) -> Error {
    if matches!(e.kind(), ErrorKind::Kafka(_)) {
        return fail(sasl, who, e);
    }
    e.message(format!(
        "during SASL {} authentication of {:?} at {}",
        sasl.mechanism(),
        sasl.user(),
        who.addr
    ))
}

/// The least time between two re-authentications of one connection, however short the
/// session lifetime a broker grants: a lifetime of 1 ms must not become a tight loop of
/// SASL exchanges (the broker closes an expired session; the connection is then made anew
/// with the connect backoff).
pub(crate) const MIN_REAUTH_INTERVAL: Duration = Duration::from_secs(1);

/// When to re-authenticate a session of `lifetime`: at 85–95 % of it (as the Java client),
/// jittered so that many connections do not re-authenticate at once, and never sooner than
/// [`MIN_REAUTH_INTERVAL`].
pub(crate) fn reauth_after(lifetime: Duration, jitter: f64) -> Duration {
    lifetime
        .mul_f64(0.85 + 0.10 * jitter.clamp(0.0, 1.0))
        .max(MIN_REAUTH_INTERVAL)
}

#[cfg(test)]
mod tests;
