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
    let hs =
        SaslHandshakeResponse::default().with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]);
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
