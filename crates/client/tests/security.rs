//! strait-client against the independent TLS / SASL / OAuth servers of
//! `strait_testkit::secure` (Python `ssl`, `scramp`), each already proven with librdkafka in
//! crates/testkit/tests/secure.rs. A real Tansu broker stands behind every front end and
//! advertises the front end's address, so every connection the client opens after Metadata
//! goes through it too. What strait-client writes, librdkafka reads back through the same
//! front end.

use std::path::Path;
use std::time::Duration;

use strait_client::security::{FileTokenProvider, OidcTokenProvider};
use strait_client::*;
use strait_records::Compression;
use strait_testkit::rdkafka::{self, ConsumeOptions};
use strait_testkit::secure::{
    FrontOptions, SaslMechanism, SaslOptions, SecureBroker, TestPki, TlsOptions, TokenEndpoint,
    TokenEndpointOptions,
};
use strait_testkit::{BrokerOptions, TansuBroker};

const USER: &str = "strait-user";
const PASSWORD: &str = "pw-Strait-7d1f";

fn pki() -> TestPki {
    TestPki::generate_temp().expect("test PKI")
}

fn tls(ca: &Path) -> TlsConfig {
    TlsConfig {
        ca: CaRoots::PemFile(ca.to_owned()),
        ..TlsConfig::default()
    }
}

fn config(bootstrap: String, security: Security) -> ClientConfig {
    ClientConfig::new([bootstrap])
        .with_request_timeout(Duration::from_secs(10))
        .with_retry_timeout(Duration::from_secs(10))
        .with_security(security)
}

fn scram512(password: &str) -> SaslConfig {
    SaslConfig::Scram {
        hash: ScramHash::Sha512,
        username: USER.into(),
        password: Secret::new(password),
    }
}

/// Produces `n` records with strait-client over `client`, then reads them back with
/// librdkafka through the same front end (`rd` is librdkafka's client config for it).
async fn write_and_cross_check(
    client: &Client,
    bootstrap: &str,
    topic: &str,
    n: usize,
    rd: &rdkafka::ClientConfig,
) {
    client
        .create_topics(&[NewTopic::new(topic, 2)], Duration::from_secs(10))
        .await
        .expect("create topic");
    let producer = RecordProducer::new(client.clone(), Compression::Lz4)
        .await
        .expect("producer");
    let mut sent = Vec::new();
    for p in 0..2 {
        let recs: Vec<ProducerRecord> = (0..n / 2)
            .map(|i| ProducerRecord::new(format!("k{p}-{i}"), format!("v{p}-{i}")))
            .collect();
        for ack in producer.send(topic, p, &recs).await.expect("send") {
            ack.wait().await.expect("acked");
        }
        sent.extend(recs.iter().map(|r| (r.key.clone(), r.value.clone())));
    }
    let bootstrap = bootstrap.to_owned();
    let topic = topic.to_owned();
    let rd = rd.clone();
    let got = tokio::task::spawn_blocking(move || {
        rdkafka::consume(
            &bootstrap,
            &topic,
            &ConsumeOptions {
                max_time: Duration::from_secs(30),
                client: rd,
                ..ConsumeOptions::count(n)
            },
        )
    })
    .await
    .expect("join")
    .expect("librdkafka consume");
    let mut got: Vec<_> = got
        .iter()
        .map(|r| (r.key.clone(), r.value.clone()))
        .collect();
    got.sort();
    sent.sort();
    assert_eq!(
        got, sent,
        "librdkafka reads exactly what strait-client wrote"
    );
}

fn rd_tls(pki: &TestPki) -> rdkafka::ClientConfig {
    rdkafka::ClientConfig::new()
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", pki.ca_cert.to_string_lossy())
}

#[tokio::test]
async fn tls_every_connection_and_librdkafka_reads_it_back() {
    let pki = pki();
    let s = SecureBroker::start(FrontOptions::tls(&pki)).expect("front");
    let c = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: Some(tls(&pki.ca_cert)),
            sasl: None,
        },
    ))
    .await
    .expect("connect over TLS");
    write_and_cross_check(&c, &s.bootstrap(), "tls-t", 40, &rd_tls(&pki)).await;
    // Bootstrap, control and produce connections all went through the TLS front end.
    assert!(s.front.count("tls_ok") >= 3, "{:?}", s.front.events());
    // A connection dropped mid-handshake (reset, EOF) is not a TLS failure: seen once in a
    // full run on a loaded machine.
    assert_eq!(s.front.tls_refusals(), 0, "{:?}", s.front.events());
}

#[tokio::test]
async fn mutual_tls_with_every_key_format() {
    let pki = pki();
    let s = SecureBroker::start(FrontOptions::mutual_tls(&pki)).expect("front");
    for (cert, key, what) in [
        (&pki.client_cert, &pki.client_key, "EC PKCS#8"),
        (&pki.client_cert, &pki.client_key_sec1, "EC SEC1"),
        (
            &pki.client_rsa_cert,
            &pki.client_rsa_key_pkcs1,
            "RSA PKCS#1",
        ),
        (&pki.client_rsa_cert, &pki.client_rsa_key, "RSA PKCS#8"),
        (
            &pki.client_bundle,
            &pki.client_bundle,
            "cert + key in one PEM",
        ),
    ] {
        let mut t = tls(&pki.ca_cert);
        t.client_cert = Some(ClientCert {
            cert_file: cert.clone(),
            key_file: key.clone(),
        });
        let c = Client::connect(config(
            s.bootstrap(),
            Security {
                tls: Some(t),
                sasl: None,
            },
        ))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        c.metadata(None)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // No client certificate, or one from another CA: a clear TLS error, not retried.
    for (cert, what) in [
        (None, "no certificate"),
        (Some(&pki.other_client_cert), "other CA"),
    ] {
        let mut t = tls(&pki.ca_cert);
        t.client_cert = cert.map(|c| ClientCert {
            cert_file: c.clone(),
            key_file: pki.other_client_key.clone(),
        });
        let failed_before = s.front.count("tls_failed");
        let before = failed_before + s.front.count("tls_ok");
        let e = Client::connect(config(
            s.bootstrap(),
            Security {
                tls: Some(t),
                sasl: None,
            },
        ))
        .await
        .expect_err(what);
        assert!(matches!(e.kind(), ErrorKind::Tls(_)), "{what}: {e:?}");
        assert!(!e.is_retriable(), "{what}");
        // Under TLS 1.3 the client may see the refusal before the front has logged it:
        // wait for this attempt's event, so it is neither missed here nor counted as a
        // retry of the next case.
        s.front
            .wait_for("tls_failed", failed_before + 1, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let attempts = s.front.count("tls_failed") + s.front.count("tls_ok") - before;
        assert!(
            attempts <= 1,
            "{what}: refused TLS must not be retried ({attempts} tries)"
        );
    }
    // librdkafka with the same client certificate sees the same cluster.
    let rd = rd_tls(&pki)
        .set(
            "ssl.certificate.location",
            pki.client_cert.to_string_lossy(),
        )
        .set("ssl.key.location", pki.client_key.to_string_lossy());
    let mut t = tls(&pki.ca_cert);
    t.client_cert = Some(ClientCert {
        cert_file: pki.client_cert.clone(),
        key_file: pki.client_key.clone(),
    });
    let c = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: Some(t),
            sasl: None,
        },
    ))
    .await
    .expect("mTLS");
    write_and_cross_check(&c, &s.bootstrap(), "mtls-t", 20, &rd).await;
}

#[tokio::test]
async fn untrusted_expired_and_wrong_host_certificates_fail_fast_and_clearly() {
    let pki = pki();
    let cases = [
        (
            TlsOptions::server(&pki),
            pki.other_ca_cert.clone(),
            "not signed by a trusted CA",
        ),
        (
            TlsOptions::with_cert(&pki.expired_cert, &pki.expired_key),
            pki.ca_cert.clone(),
            "has expired",
        ),
        (
            TlsOptions::with_cert(&pki.wrong_host_cert, &pki.wrong_host_key),
            pki.ca_cert.clone(),
            "is not valid for \"127.0.0.1\"",
        ),
    ];
    for (server, ca, want) in cases {
        let s = SecureBroker::start(FrontOptions {
            tls: Some(server),
            ..FrontOptions::default()
        })
        .expect("front");
        let e = Client::connect(config(
            s.bootstrap(),
            Security {
                tls: Some(tls(&ca)),
                sasl: None,
            },
        ))
        .await
        .expect_err(want);
        assert!(matches!(e.kind(), ErrorKind::Tls(_)), "{want}: {e:?}");
        assert!(e.to_string().contains(want), "{want}: {e}");
        assert!(!e.is_retriable());
        assert_eq!(s.front.count("tls_ok"), 0);
        assert!(
            s.front.count("tls_failed") <= 1,
            "{want}: not retried ({:?})",
            s.front.events()
        );
    }
}

#[tokio::test]
async fn tls_client_to_a_plaintext_port_and_plaintext_client_to_a_tls_port() {
    let pki = pki();
    // Apache Kafka closes a connection whose first four bytes (a TLS client hello read as
    // a frame size) exceed socket.request.max.bytes, which gives a TLS error at once;
    // Tansu 0.6 instead waits for the 350 MB "frame", so the handshake deadline ends it.
    let plain = TansuBroker::start_with(BrokerOptions::default()).expect("tansu");
    let mut t = tls(&pki.ca_cert);
    t.handshake_timeout = Duration::from_secs(2);
    let e = Client::connect(
        config(
            plain.bootstrap(),
            Security {
                tls: Some(t),
                sasl: None,
            },
        )
        .with_retry_timeout(Duration::from_secs(1)),
    )
    .await
    .expect_err("TLS to plaintext");
    assert!(e.to_string().contains("TLS listener"), "{e}");

    let s = SecureBroker::start(FrontOptions::tls(&pki)).expect("front");
    let e = Client::connect(
        config(s.bootstrap(), Security::plaintext()).with_retry_timeout(Duration::from_secs(1)),
    )
    .await
    .expect_err("plaintext to TLS");
    assert!(
        e.to_string().contains("if it is a TLS listener"),
        "the error must point at TLS: {e}"
    );
}

#[tokio::test]
async fn sasl_ssl_plain_scram_256_and_scram_512() {
    let pki = pki();
    for (mech, cfg) in [
        (
            SaslMechanism::Plain,
            SaslConfig::Plain {
                username: USER.into(),
                password: Secret::new(PASSWORD),
            },
        ),
        (
            SaslMechanism::ScramSha256,
            SaslConfig::Scram {
                hash: ScramHash::Sha256,
                username: USER.into(),
                password: Secret::new(PASSWORD),
            },
        ),
        (SaslMechanism::ScramSha512, scram512(PASSWORD)),
    ] {
        let sasl = SaslOptions::new(&[mech]).user(USER, PASSWORD);
        let s = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl)).expect("front");
        let c = Client::connect(config(
            s.bootstrap(),
            Security {
                tls: Some(tls(&pki.ca_cert)),
                sasl: Some(cfg.clone()),
            },
        ))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", mech.as_str()));
        let rd = rd_tls(&pki)
            .set("security.protocol", "SASL_SSL")
            .set("sasl.mechanism", mech.as_str())
            .set("sasl.username", USER)
            .set("sasl.password", PASSWORD);
        write_and_cross_check(&c, &s.bootstrap(), "sasl-t", 20, &rd).await;
        let ok: Vec<_> = s
            .front
            .events()
            .expect("events")
            .into_iter()
            .filter(|e| e.event == "auth_ok")
            .collect();
        assert!(ok.len() >= 3, "every connection authenticates: {ok:?}");
        assert!(
            ok.iter()
                .all(|e| e.mechanism.as_deref() == Some(mech.as_str())
                    && e.user.as_deref() == Some(USER))
        );

        // A wrong password and an unknown user: refused once, typed, the secret unseen.
        let before = s.front.count("auth_failed");
        for (bad, what) in [
            (with_password(&cfg, "wrong-pw-91b"), "wrong password"),
            (with_user(&cfg, "nobody"), "unknown user"),
        ] {
            let e = Client::connect(config(
                s.bootstrap(),
                Security {
                    tls: Some(tls(&pki.ca_cert)),
                    sasl: Some(bad),
                },
            ))
            .await
            .expect_err(what);
            assert!(
                matches!(e.kind(), ErrorKind::Authentication(_)),
                "{what}: {e:?}"
            );
            assert!(!e.is_retriable() && e.is_auth_failure());
            let shown = format!("{e} {e:?}");
            assert!(shown.contains(mech.as_str()), "{shown}");
            assert!(
                !shown.contains("wrong-pw-91b") && !shown.contains(PASSWORD),
                "{shown}"
            );
        }
        s.front
            .wait_for("auth_failed", before + 2, Duration::from_secs(5))
            .expect("both refusals logged");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            s.front.count("auth_failed") - before,
            2,
            "each refusal is tried once, never retried"
        );
    }
}

fn with_password(cfg: &SaslConfig, pw: &str) -> SaslConfig {
    match cfg {
        SaslConfig::Plain { username, .. } => SaslConfig::Plain {
            username: username.clone(),
            password: Secret::new(pw),
        },
        SaslConfig::Scram { hash, username, .. } => SaslConfig::Scram {
            hash: *hash,
            username: username.clone(),
            password: Secret::new(pw),
        },
        other => other.clone(),
    }
}

fn with_user(cfg: &SaslConfig, user: &str) -> SaslConfig {
    match cfg {
        SaslConfig::Plain { password, .. } => SaslConfig::Plain {
            username: user.into(),
            password: password.clone(),
        },
        SaslConfig::Scram { hash, password, .. } => SaslConfig::Scram {
            hash: *hash,
            username: user.into(),
            password: password.clone(),
        },
        other => other.clone(),
    }
}

#[tokio::test]
async fn sasl_plaintext_scram_and_a_mechanism_the_broker_lacks() {
    let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512]).user(USER, PASSWORD);
    let s = SecureBroker::start(FrontOptions::sasl_plaintext(sasl)).expect("front");
    let c = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: None,
            sasl: Some(scram512(PASSWORD)),
        },
    ))
    .await
    .expect("SASL_PLAINTEXT SCRAM");
    c.metadata(None).await.expect("metadata");
    let e = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: None,
            sasl: Some(SaslConfig::Plain {
                username: USER.into(),
                password: Secret::new(PASSWORD),
            }),
        },
    ))
    .await
    .expect_err("PLAIN is not enabled");
    assert!(e.to_string().contains("does not enable PLAIN"), "{e}");
    assert!(e.to_string().contains("SCRAM-SHA-512"), "{e}");
}

#[tokio::test]
async fn oauthbearer_token_file_and_oidc_client_credentials() {
    let pki = pki();
    let endpoint = TokenEndpoint::start(
        TokenEndpointOptions::new(&pki).client("strait-svc", "oidc-secret-5c2"),
    )
    .expect("token endpoint");
    let sasl = SaslOptions::new(&[SaslMechanism::OAuthBearer]).oauth_secret(endpoint.secret());
    let s = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl)).expect("front");
    let security = |provider: std::sync::Arc<dyn security::TokenProvider>| Security {
        tls: Some(tls(&pki.ca_cert)),
        sasl: Some(SaslConfig::OAuthBearer {
            provider,
            extensions: vec![("logicalCluster".into(), "lkc-test".into())],
        }),
    };

    // A token file, as a sidecar would write it.
    let file = pki.dir.join("kafka-token");
    endpoint
        .mint_token_file(&file, "file-principal", Duration::from_secs(600))
        .expect("mint");
    let c = Client::connect(config(
        s.bootstrap(),
        security(std::sync::Arc::new(FileTokenProvider::new(&file))),
    ))
    .await
    .expect("token file");
    c.metadata(None).await.expect("metadata");
    // An expired token in the file: refused with the reason, not retried.
    endpoint
        .mint_expired_token_file(&file, "file-principal")
        .expect("mint expired");
    let e = Client::connect(config(
        s.bootstrap(),
        security(std::sync::Arc::new(FileTokenProvider::new(&file))),
    ))
    .await
    .expect_err("expired token");
    assert!(matches!(e.kind(), ErrorKind::Authentication(_)), "{e:?}");

    // OIDC client credentials against the token endpoint, verified with the test CA.
    let oidc = OidcTokenProvider::new(
        &endpoint.url(),
        "strait-svc",
        Secret::new("oidc-secret-5c2"),
        Some("kafka".into()),
        CaRoots::PemFile(pki.ca_cert.clone()),
    )
    .expect("provider");
    let c = Client::connect(config(s.bootstrap(), security(std::sync::Arc::new(oidc))))
        .await
        .expect("OIDC");
    let rd = rd_tls(&pki)
        .set("security.protocol", "SASL_SSL")
        .set("sasl.mechanism", "OAUTHBEARER")
        .set("sasl.oauthbearer.method", "oidc")
        .set("sasl.oauthbearer.client.id", "strait-svc")
        .set("sasl.oauthbearer.client.secret", "oidc-secret-5c2")
        .set("sasl.oauthbearer.token.endpoint.url", endpoint.url())
        .set("https.ca.location", pki.ca_cert.to_string_lossy());
    write_and_cross_check(&c, &s.bootstrap(), "oauth-t", 20, &rd).await;
    // One token serves every connection until it nears expiry.
    assert!(s.front.count("auth_ok") >= 3);

    // A wrong client secret: the endpoint refuses, the error says so, the secret unseen.
    let bad = OidcTokenProvider::new(
        &endpoint.url(),
        "strait-svc",
        Secret::new("not-the-secret-77"),
        None,
        CaRoots::PemFile(pki.ca_cert.clone()),
    )
    .expect("provider");
    let e = Client::connect(config(s.bootstrap(), security(std::sync::Arc::new(bad))))
        .await
        .expect_err("wrong client secret");
    let shown = format!("{e} {e:?}");
    assert!(shown.contains("invalid_client"), "{shown}");
    assert!(!shown.contains("not-the-secret-77"), "{shown}");
}

#[tokio::test]
async fn reauthentication_keeps_producing_and_fetching_with_nothing_lost() {
    let pki = pki();
    let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512]).user(USER, PASSWORD);
    let s = SecureBroker::start(
        FrontOptions::sasl_ssl(&pki, sasl).with_session_lifetime(Duration::from_millis(1500)),
    )
    .expect("front");
    let c = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: Some(tls(&pki.ca_cert)),
            sasl: Some(scram512(PASSWORD)),
        },
    ))
    .await
    .expect("connect");
    c.create_topics(&[NewTopic::new("reauth-t", 1)], Duration::from_secs(10))
        .await
        .expect("create");
    let producer = RecordProducer::new(c.clone(), Compression::None)
        .await
        .expect("producer");
    let mut consumer =
        PartitionConsumer::new(c.clone(), "reauth-t", 0, 0).with_options(FetchOptions {
            max_wait: Duration::from_millis(100),
            ..FetchOptions::default()
        });
    let mut read = Vec::new();
    let mut sent = 0usize;
    // Six seconds of traffic: each connection re-authenticates three or four times.
    let until = tokio::time::Instant::now() + Duration::from_secs(6);
    while tokio::time::Instant::now() < until {
        let recs: Vec<ProducerRecord> = (0..5)
            .map(|i| ProducerRecord::new(format!("k{}", sent + i), "v"))
            .collect();
        for ack in producer.send("reauth-t", 0, &recs).await.expect("send") {
            ack.wait().await.expect("ack across re-authentication");
        }
        sent += recs.len();
        read.extend(
            consumer
                .poll()
                .await
                .expect("fetch across re-authentication"),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while read.len() < sent {
        read.extend(consumer.poll().await.expect("fetch"));
    }
    let keys: Vec<String> = read
        .iter()
        .map(|r| String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned())
        .collect();
    let want: Vec<String> = (0..sent).map(|i| format!("k{i}")).collect();
    assert_eq!(keys, want, "every record, in order, once");
    let reauths = s.front.count("reauth_ok");
    assert!(
        reauths >= 6,
        "re-authenticated {reauths} times: {:?}",
        s.front.events()
    );
    assert_eq!(s.front.count("reauth_failed"), 0);
    assert_eq!(s.front.count("session_expired"), 0, "no session ran out");
}

#[tokio::test]
async fn tls_1_2_and_tls_1_3_both_connect() {
    use strait_testkit::secure::TlsVersion;
    let pki = pki();
    for v in [TlsVersion::V1_2, TlsVersion::V1_3] {
        let s = SecureBroker::start(FrontOptions {
            tls: Some(TlsOptions::server(&pki).only(v)),
            ..FrontOptions::default()
        })
        .expect("front");
        let info = security::tls::probe(&s.bootstrap(), &tls(&pki.ca_cert), Duration::from_secs(5))
            .await
            .expect("handshake");
        let want = match v {
            TlsVersion::V1_2 => "TLSv1.2",
            TlsVersion::V1_3 => "TLSv1.3",
        };
        assert_eq!(info.protocol, want);
        assert!(
            info.subject.contains("localhost"),
            "the server certificate is CN=localhost: {}",
            info.subject
        );
        assert!(info.days_until_expiry() > 0);
        let c = Client::connect(config(
            s.bootstrap(),
            Security {
                tls: Some(tls(&pki.ca_cert)),
                sasl: None,
            },
        ))
        .await
        .expect("connect");
        c.metadata(None).await.expect("metadata");
    }
}

#[tokio::test]
async fn server_name_verifies_a_broker_reached_under_another_name() {
    let pki = pki();
    let s = SecureBroker::start(FrontOptions {
        tls: Some(TlsOptions::with_cert(
            &pki.wrong_host_cert,
            &pki.wrong_host_key,
        )),
        ..FrontOptions::default()
    })
    .expect("front");
    // The certificate names only wrong.example: verified as that name, it is accepted.
    let mut t = tls(&pki.ca_cert);
    t.server_name = Some("wrong.example".into());
    let c = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: Some(t),
            sasl: None,
        },
    ))
    .await
    .expect("server_name override");
    c.metadata(None).await.expect("metadata");
    // Any other name still fails: verification is never off.
    let mut t = tls(&pki.ca_cert);
    t.server_name = Some("other.example".into());
    let e = Client::connect(config(
        s.bootstrap(),
        Security {
            tls: Some(t),
            sasl: None,
        },
    ))
    .await
    .expect_err("wrong name");
    assert!(
        e.to_string().contains("is not valid for \"other.example\""),
        "{e}"
    );
}
