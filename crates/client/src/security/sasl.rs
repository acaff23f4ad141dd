//! The SASL exchange on one connection (KIP-152): SaslHandshake v1 naming the mechanism,
//! then SaslAuthenticate rounds carrying the mechanism's messages. Run once the connection
//! has negotiated its versions, and again in band for re-authentication (KIP-368).

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::config::SaslConfig;
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
    let hs =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(sasl.mechanism()));
    let resp = conn
        .call_gated(&hs, hs_version, timeout, gate)
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
    let round = |bytes: Vec<u8>| {
        let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
        async move {
            let r: SaslAuthenticateResponse = conn
                .call_gated(&req, auth_version, timeout, gate)
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
    };
    let last = match sasl {
        SaslConfig::Plain { username, password } => {
            let mut msg = Vec::with_capacity(username.len() + password.expose().len() + 2);
            msg.push(0);
            msg.extend_from_slice(username.as_bytes());
            msg.push(0);
            msg.extend_from_slice(password.expose().as_bytes());
            round(msg).await?
        }
        SaslConfig::Scram {
            hash,
            username,
            password,
        } => {
            let mut scram = ScramClient::new(*hash, username, password.clone());
            let first = round(scram.client_first()).await?;
            let fin = scram
                .server_first(&first.auth_bytes)
                .map_err(|e| fail(sasl, who, e))?;
            let last = round(fin).await?;
            scram
                .server_final(&last.auth_bytes)
                .map_err(|e| fail(sasl, who, e))?;
            last
        }
        SaslConfig::OAuthBearer {
            provider,
            extensions,
        } => {
            let token = provider.token().await.map_err(|e| fail(sasl, who, e))?;
            let r = round(oauth::client_first(&token, extensions)).await?;
            if !r.auth_bytes.is_empty() {
                // RFC 7628 §3.2.2: an error challenge; answer with %x01 and the broker
                // then fails the exchange. Report the server's status either way.
                let status = String::from_utf8_lossy(&r.auth_bytes).into_owned();
                let _ = round(vec![1]).await;
                return Err(fail(
                    sasl,
                    who,
                    format!("the broker refused the token: {status}"),
                ));
            }
            r
        }
    };
    Ok((last.session_lifetime_ms > 0)
        .then(|| Duration::from_millis(last.session_lifetime_ms as u64)))
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
mod tests {
    use std::sync::Arc;

    use kafka_protocol::messages::{MetadataRequest, MetadataResponse, RequestHeader};
    use tokio::io::DuplexStream;

    use super::*;
    use crate::connection::tests::{connected, read_request, write_response};

    #[test]
    fn reauthentication_happens_before_expiry() {
        let l = Duration::from_secs(100);
        assert_eq!(reauth_after(l, 0.0), Duration::from_secs(85));
        assert_eq!(reauth_after(l, 1.0), Duration::from_secs(95));
        assert_eq!(reauth_after(l, 7.0), Duration::from_secs(95));
        assert!(reauth_after(l, 0.5) < l);
    }

    #[test]
    fn a_tiny_session_lifetime_never_makes_a_tight_reauthentication_loop() {
        assert_eq!(
            reauth_after(Duration::from_millis(1), 0.5),
            MIN_REAUTH_INTERVAL
        );
        assert_eq!(reauth_after(Duration::ZERO, 0.0), MIN_REAUTH_INTERVAL);
    }

    const SASL_RANGES: &[(ApiKey, i16, i16)] = &[
        (ApiKey::Metadata, 0, 12),
        (ApiKey::SaslHandshake, 0, 1),
        (ApiKey::SaslAuthenticate, 0, 2),
    ];

    fn plain(password: &str) -> SaslConfig {
        SaslConfig::Plain {
            username: "alice".into(),
            password: crate::security::config::Secret::new(password),
        }
    }

    async fn expect_api(srv: &mut DuplexStream, api: ApiKey) -> RequestHeader {
        let (h, _) = read_request(srv).await.unwrap();
        assert_eq!(
            ApiKey::try_from(h.request_api_key).unwrap(),
            api,
            "frames must reach the broker in this order"
        );
        h
    }

    #[tokio::test]
    async fn reauthentication_runs_behind_in_flight_requests_and_holds_new_ones() {
        use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
        let (c, mut srv) = connected(SASL_RANGES).await;
        let c = Arc::new(c);
        let in_flight = {
            let c = c.clone();
            tokio::spawn(async move {
                c.call_negotiated(&MetadataRequest::default(), Duration::from_secs(5))
                    .await
            })
        };
        let h_a = expect_api(&mut srv, ApiKey::Metadata).await;
        let reauth = {
            let c = c.clone();
            tokio::spawn(async move {
                reauthenticate(&c, &plain("pw"), "b:9093", Duration::from_secs(5)).await
            })
        };
        let h_hs = expect_api(&mut srv, ApiKey::SaslHandshake).await;
        // A request made while the re-authentication runs waits at the gate.
        let later = {
            let c = c.clone();
            tokio::spawn(async move {
                c.call_negotiated(&MetadataRequest::default(), Duration::from_secs(5))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The broker answers in order: the request in flight first, then the handshake.
        write_response(&mut srv, &h_a, &MetadataResponse::default()).await;
        let hs = SaslHandshakeResponse::default()
            .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]);
        write_response(&mut srv, &h_hs, &hs).await;
        let h_auth = expect_api(&mut srv, ApiKey::SaslAuthenticate).await;
        let auth = SaslAuthenticateResponse::default().with_session_lifetime_ms(60_000);
        write_response(&mut srv, &h_auth, &auth).await;
        let h_b = expect_api(&mut srv, ApiKey::Metadata).await;
        write_response(&mut srv, &h_b, &MetadataResponse::default()).await;
        assert!(
            in_flight.await.unwrap().is_ok(),
            "in-flight request not failed"
        );
        assert_eq!(
            reauth.await.unwrap().unwrap(),
            Some(Duration::from_secs(60))
        );
        assert!(later.await.unwrap().is_ok());
        assert!(!c.is_closed());
    }

    #[tokio::test]
    async fn refused_credentials_are_typed_not_retriable_and_never_show_the_secret() {
        use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
        let (c, mut srv) = connected(SASL_RANGES).await;
        let c = Arc::new(c);
        let auth = {
            let c = c.clone();
            tokio::spawn(async move {
                reauthenticate(
                    &c,
                    &plain("hunter2-secret"),
                    "b:9093",
                    Duration::from_secs(5),
                )
                .await
            })
        };
        let h = expect_api(&mut srv, ApiKey::SaslHandshake).await;
        write_response(&mut srv, &h, &SaslHandshakeResponse::default()).await;
        let h = expect_api(&mut srv, ApiKey::SaslAuthenticate).await;
        let r = SaslAuthenticateResponse::default()
            .with_error_code(58)
            .with_error_message(Some(StrBytes::from_static_str(
                "Authentication failed: Invalid username or password",
            )));
        write_response(&mut srv, &h, &r).await;
        let e = auth.await.unwrap().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Authentication(_)), "{e:?}");
        assert!(!e.is_retriable() && e.is_auth_failure());
        let shown = format!("{e} {e:?}");
        assert!(shown.contains("PLAIN") && shown.contains("alice") && shown.contains("b:9093"));
        assert!(shown.contains("Invalid username or password"), "{shown}");
        assert!(!shown.contains("hunter2-secret"), "{shown}");
    }

    #[tokio::test]
    async fn a_mechanism_the_broker_does_not_enable_lists_what_it_offers() {
        use kafka_protocol::messages::SaslHandshakeResponse;
        let (c, mut srv) = connected(SASL_RANGES).await;
        let c = Arc::new(c);
        let auth = {
            let c = c.clone();
            tokio::spawn(async move {
                reauthenticate(&c, &plain("x"), "b:9093", Duration::from_secs(5)).await
            })
        };
        let h = expect_api(&mut srv, ApiKey::SaslHandshake).await;
        let r = SaslHandshakeResponse::default()
            .with_error_code(33)
            .with_mechanisms(vec![StrBytes::from_static_str("SCRAM-SHA-512")]);
        write_response(&mut srv, &h, &r).await;
        let e = auth.await.unwrap().unwrap_err();
        assert!(
            e.to_string()
                .contains("does not enable PLAIN (it offers: SCRAM-SHA-512)"),
            "{e}"
        );
        assert!(!e.is_retriable());
    }
}
