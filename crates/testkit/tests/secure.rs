//! The TLS / SASL / OAuth servers of `strait_testkit::secure`, proven with librdkafka
//! (confluent-kafka) against a real Tansu broker behind the front end: records produced
//! through it come back through it, and what must be refused is refused.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use strait_testkit::rdkafka::{self, ClientConfig, ConsumeOptions, ProduceOptions};
use strait_testkit::secure::{
    FrontOptions, SaslMechanism, SaslOptions, SecureBroker, SecureFront, TestPki, TlsOptions,
    TlsVersion, TokenEndpoint, TokenEndpointOptions,
};
use strait_testkit::{DataGen, RecordSpec, probe};

const USER: &str = "alice";
const PASSWORD: &str = "alice-pw-1";
/// How long a refusal may take to be reported (librdkafka reports it on the first try).
const REFUSAL: Duration = Duration::from_secs(10);

fn pki() -> TestPki {
    TestPki::generate_temp().expect("generate the test PKI")
}

fn path(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

fn ssl_client(pki: &TestPki) -> ClientConfig {
    ClientConfig::new()
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", path(&pki.ca_cert))
}

fn sasl_client(protocol: &str, mechanism: SaslMechanism, user: &str, pw: &str) -> ClientConfig {
    ClientConfig::new()
        .set("security.protocol", protocol)
        .set("sasl.mechanism", mechanism.as_str())
        .set("sasl.username", user)
        .set("sasl.password", pw)
}

/// Creates `topic`, produces `n` records and consumes them back, all through `bootstrap`
/// with `client`; asserts what came back is what went in.
fn round_trip(bootstrap: &str, topic: &str, n: usize, client: &ClientConfig) {
    rdkafka::create_topic_with(bootstrap, topic, 2, &[], client).expect("create the topic");
    let records = DataGen::new(n as u64).records(n, &RecordSpec::default());
    let produce = ProduceOptions {
        timeout: Duration::from_secs(30),
        client: client.clone(),
        ..ProduceOptions::default()
    };
    let delivered = rdkafka::produce(bootstrap, topic, &records, &produce).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()), "{delivered:?}");
    let consume = ConsumeOptions {
        max_time: Duration::from_secs(30),
        client: client.clone(),
        ..ConsumeOptions::count(n)
    };
    let got = rdkafka::consume(bootstrap, topic, &consume).expect("consume");
    assert_same(&records, &got);
}

fn assert_same(sent: &[strait_testkit::TestRecord], got: &[rdkafka::ConsumedRecord]) {
    assert_eq!(got.len(), sent.len(), "record count");
    let mut a: Vec<_> = sent
        .iter()
        .map(|r| (r.key.clone(), r.value.clone()))
        .collect();
    let mut b: Vec<_> = got
        .iter()
        .map(|r| (r.key.clone(), r.value.clone()))
        .collect();
    a.sort();
    b.sort();
    assert!(a == b, "consumed records differ from produced ones");
}

fn refused(bootstrap: &str, client: &ClientConfig, code: &str) -> rdkafka::ConnectCheck {
    let started = Instant::now();
    let check = rdkafka::check_connect(bootstrap, client, REFUSAL).expect("run check-connect");
    assert!(!check.ok, "connection should have been refused");
    assert!(
        check.has(code),
        "expected a {code} error, got:\n{}",
        check.describe()
    );
    assert!(started.elapsed() < REFUSAL + Duration::from_secs(5));
    check
}

/// The `error` of the front end's `tls_failed` events, one line each.
fn tls_failures(front: &SecureFront) -> String {
    front
        .events()
        .expect("events")
        .into_iter()
        .filter(|e| e.event == "tls_failed")
        .filter_map(|e| e.error)
        .collect::<Vec<_>>()
        .join("\n")
}

fn event_users(front: &SecureFront, event: &str) -> Vec<(Option<String>, Option<String>)> {
    front
        .events()
        .expect("events")
        .into_iter()
        .filter(|e| e.event == event)
        .map(|e| (e.mechanism, e.user))
        .collect()
}

// ------------------------------------------------------------------------------- TLS

#[test]
fn tls_round_trip_and_both_versions() {
    let pki = pki();
    let secure = SecureBroker::start(FrontOptions::tls(&pki)).expect("start");
    round_trip(&secure.bootstrap(), "tls", 50, &ssl_client(&pki));
    let events = secure.front.events().unwrap();
    assert!(events.iter().any(|e| e.event == "tls_ok"));
    assert_eq!(
        secure.front.tls_refusals(),
        0,
        "{:?}",
        secure.front.events()
    );

    // The same cert with TLS pinned to 1.2, then to 1.3: librdkafka negotiates either.
    for (version, name) in [(TlsVersion::V1_2, "TLSv1.2"), (TlsVersion::V1_3, "TLSv1.3")] {
        let front = SecureFront::start(
            secure.broker.addr(),
            FrontOptions {
                tls: Some(TlsOptions::server(&pki).only(version)),
                ..FrontOptions::default()
            },
        )
        .expect("start a pinned front end");
        let check = rdkafka::check_connect(&front.bootstrap(), &ssl_client(&pki), REFUSAL)
            .expect("check-connect");
        assert!(check.ok, "{name}: {}", check.describe());
        let ok = front.events().unwrap();
        let ok = ok
            .iter()
            .find(|e| e.event == "tls_ok")
            .expect("a tls_ok event");
        assert_eq!(ok.other.get("version").and_then(|v| v.as_str()), Some(name));
    }
}

#[test]
fn mutual_tls_needs_a_client_cert_from_the_ca() {
    let pki = pki();
    let secure = SecureBroker::start(FrontOptions::mutual_tls(&pki)).expect("start");
    let bs = secure.bootstrap();
    // EC key, PKCS#8.
    let client = ssl_client(&pki)
        .set("ssl.certificate.location", path(&pki.client_cert))
        .set("ssl.key.location", path(&pki.client_key));
    round_trip(&bs, "mtls", 40, &client);
    let subjects: Vec<_> = secure
        .front
        .events()
        .unwrap()
        .into_iter()
        .filter(|e| e.event == "tls_ok")
        .filter_map(|e| e.other.get("client_subject").cloned())
        .collect();
    assert!(
        subjects.iter().all(|s| s
            .as_str()
            .is_some_and(|s| s.contains("commonName=strait-client"))),
        "{subjects:?}"
    );

    // The other key forms librdkafka (OpenSSL) reads: RSA PKCS#1, EC SEC1.
    for (cert, key) in [
        (&pki.client_rsa_cert, &pki.client_rsa_key_pkcs1),
        (&pki.client_cert, &pki.client_key_sec1),
    ] {
        let c = ssl_client(&pki)
            .set("ssl.certificate.location", path(cert))
            .set("ssl.key.location", path(key));
        let check = rdkafka::check_connect(&bs, &c, REFUSAL).expect("check-connect");
        assert!(check.ok, "{}: {}", key.display(), check.describe());
    }

    // No client certificate: refused during the handshake. With TLS 1.3 librdkafka
    // reports no _SSL error for it (the server's alert arrives after the client considers
    // the handshake done), only that all brokers are down; the front end says why.
    refused(&bs, &ssl_client(&pki), "_ALL_BROKERS_DOWN");
    assert!(
        tls_failures(&secure.front).contains("PEER_DID_NOT_RETURN_A_CERTIFICATE"),
        "{}",
        tls_failures(&secure.front)
    );
    // A client certificate from an unrelated CA: refused too.
    let other = ssl_client(&pki)
        .set("ssl.certificate.location", path(&pki.other_client_cert))
        .set("ssl.key.location", path(&pki.other_client_key));
    refused(&bs, &other, "_ALL_BROKERS_DOWN");
    assert!(
        tls_failures(&secure.front).contains("CERTIFICATE_VERIFY_FAILED"),
        "{}",
        tls_failures(&secure.front)
    );
}

#[test]
fn untrusted_ca_expired_cert_and_wrong_host_are_refused() {
    let pki = pki();
    // librdkafka forgets the bootstrap address once Metadata names the brokers, so a
    // connection that must work needs a broker advertising its front end (SecureBroker);
    // a refused one never gets that far, so a bare SecureFront will do.
    let tls_with = |cert: &std::path::Path, key: &std::path::Path| FrontOptions {
        tls: Some(TlsOptions::with_cert(cert, key)),
        ..FrontOptions::default()
    };
    let good = SecureBroker::start(tls_with(&pki.server_cert, &pki.server_key)).expect("start");
    let wrong_host =
        SecureBroker::start(tls_with(&pki.wrong_host_cert, &pki.wrong_host_key)).expect("start");
    let expired = SecureFront::start(
        good.broker.addr(),
        tls_with(&pki.expired_cert, &pki.expired_key),
    )
    .expect("start");

    // Control: the right CA and cert connect.
    let check = rdkafka::check_connect(&good.bootstrap(), &ssl_client(&pki), REFUSAL).unwrap();
    assert!(check.ok, "{}", check.describe());

    // librdkafka's message is the same "certificate verify failed" for all three; the
    // alert it sends names the reason, and the front end logs it.
    // Trusting only the unrelated CA:
    let other_ca = ClientConfig::new()
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", path(&pki.other_ca_cert));
    let c = refused(&good.bootstrap(), &other_ca, "_SSL");
    assert!(
        c.describe().contains("certificate verify failed"),
        "{}",
        c.describe()
    );
    let why = tls_failures(&good.front);
    assert!(why.contains("UNKNOWN_CA"), "{why}");

    let c = refused(&expired.bootstrap(), &ssl_client(&pki), "_SSL");
    assert!(
        c.describe().contains("certificate verify failed"),
        "{}",
        c.describe()
    );
    let why = tls_failures(&expired);
    assert!(why.contains("CERTIFICATE_EXPIRED"), "{why}");

    // librdkafka checks the host name (ssl.endpoint.identification.algorithm=https is
    // the default since 2.0): 127.0.0.1 is not wrong.example.
    let c = refused(&wrong_host.bootstrap(), &ssl_client(&pki), "_SSL");
    assert!(
        c.describe().contains("certificate verify failed"),
        "{}",
        c.describe()
    );
    let why = tls_failures(&wrong_host.front);
    eprintln!("wrong host, the front end saw: {why}");
    assert!(why.contains("ALERT"), "{why}");
    // ...and with host name checking off the same cert is accepted: the CA is right.
    let lax = ssl_client(&pki).set("ssl.endpoint.identification.algorithm", "none");
    let check = rdkafka::check_connect(&wrong_host.bootstrap(), &lax, REFUSAL).unwrap();
    assert!(check.ok, "{}", check.describe());
}

// ------------------------------------------------------------------------------- SASL

fn sasl_ssl(mechanism: SaslMechanism, topic: &str) {
    let pki = pki();
    let sasl = SaslOptions::new(&[mechanism])
        .user(USER, PASSWORD)
        .user("bob", "bob-pw");
    let secure = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl)).expect("start");
    let bs = secure.bootstrap();
    let tls = ClientConfig::new().set("ssl.ca.location", path(&pki.ca_cert));
    let good = tls
        .clone()
        .merge(&sasl_client("SASL_SSL", mechanism, USER, PASSWORD));
    round_trip(&bs, topic, 40, &good);
    let oks = event_users(&secure.front, "auth_ok");
    assert!(!oks.is_empty());
    assert!(
        oks.iter()
            .all(|(m, u)| m.as_deref() == Some(mechanism.as_str()) && u.as_deref() == Some(USER)),
        "{oks:?}"
    );
    assert_eq!(secure.front.count("auth_failed"), 0);

    // Wrong password, and a user that does not exist: _AUTHENTICATION, at once.
    let wrong = tls
        .clone()
        .merge(&sasl_client("SASL_SSL", mechanism, USER, "not-it"));
    refused(&bs, &wrong, "_AUTHENTICATION");
    let unknown = tls.merge(&sasl_client("SASL_SSL", mechanism, "mallory", PASSWORD));
    refused(&bs, &unknown, "_AUTHENTICATION");
    let failed = event_users(&secure.front, "auth_failed");
    assert!(
        failed.iter().any(|(_, u)| u.as_deref() == Some(USER)),
        "{failed:?}"
    );
    assert!(
        failed.iter().any(|(_, u)| u.as_deref() == Some("mallory")),
        "{failed:?}"
    );
}

#[test]
fn sasl_ssl_plain() {
    sasl_ssl(SaslMechanism::Plain, "sasl-plain");
}

#[test]
fn sasl_ssl_scram_sha_256() {
    sasl_ssl(SaslMechanism::ScramSha256, "scram-256");
}

#[test]
fn sasl_ssl_scram_sha_512() {
    sasl_ssl(SaslMechanism::ScramSha512, "scram-512");
}

#[test]
fn sasl_plaintext_scram_and_the_front_end_protocol() {
    let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512, SaslMechanism::ScramSha256])
        .user(USER, PASSWORD);
    let secure = SecureBroker::start(FrontOptions::sasl_plaintext(sasl)).expect("start");
    let bs = secure.bootstrap();
    let client = sasl_client("SASL_PLAINTEXT", SaslMechanism::ScramSha256, USER, PASSWORD);
    round_trip(&bs, "sasl-plaintext", 40, &client);

    // Before authentication, ApiVersions is answered and advertises the SASL APIs...
    let versions = probe::api_versions(secure.front.addr(), Duration::from_secs(5)).unwrap();
    let range = |key: i16| {
        versions
            .iter()
            .find(|v| v.api_key == key)
            .map(|v| (v.min_version, v.max_version))
    };
    assert_eq!(range(17), Some((0, 1)), "SaslHandshake");
    assert_eq!(range(36), Some((0, 2)), "SaslAuthenticate");
    // ...and anything else (Metadata v1 here) closes the connection.
    let mut s = TcpStream::connect(secure.front.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = Vec::new();
    req.extend_from_slice(&3i16.to_be_bytes()); // Metadata
    req.extend_from_slice(&1i16.to_be_bytes());
    req.extend_from_slice(&42i32.to_be_bytes());
    req.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
    req.extend_from_slice(&(-1i32).to_be_bytes()); // all topics
    s.write_all(&(req.len() as i32).to_be_bytes()).unwrap();
    s.write_all(&req).unwrap();
    let mut buf = [0u8; 4];
    assert!(
        matches!(s.read(&mut buf), Ok(0) | Err(_)),
        "the connection should be closed"
    );
    secure
        .front
        .wait_for("refused", 1, Duration::from_secs(5))
        .unwrap();
}

// ------------------------------------------------------------------------------- OAuth

#[test]
fn oauthbearer_oidc_client_credentials() {
    let pki = pki();
    let endpoint =
        TokenEndpoint::start(TokenEndpointOptions::new(&pki).client("strait-app", "app-secret-1"))
            .expect("token endpoint");
    let sasl = SaslOptions::new(&[SaslMechanism::OAuthBearer]).oauth_secret(endpoint.secret());
    let secure = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl)).expect("start");
    let bs = secure.bootstrap();
    // librdkafka's OIDC fetch is its own HTTPS client (libcurl): it verifies the
    // endpoint with https.ca.location, not ssl.ca.location.
    let oidc = |secret: &str| {
        ClientConfig::new()
            .set("security.protocol", "SASL_SSL")
            .set("ssl.ca.location", path(&pki.ca_cert))
            .set("sasl.mechanism", "OAUTHBEARER")
            .set("sasl.oauthbearer.method", "oidc")
            .set("sasl.oauthbearer.client.id", "strait-app")
            .set("sasl.oauthbearer.client.secret", secret)
            .set("sasl.oauthbearer.token.endpoint.url", endpoint.url())
            .set("sasl.oauthbearer.scope", "kafka")
            .set("https.ca.location", path(&pki.ca_cert))
    };
    round_trip(&bs, "oidc", 40, &oidc("app-secret-1"));
    assert!(endpoint.count("token_issued") >= 1);
    let oks = event_users(&secure.front, "auth_ok");
    assert!(!oks.is_empty());
    assert!(
        oks.iter().all(|(m, u)| m.as_deref() == Some("OAUTHBEARER")
            && u.as_deref() == Some("strait-app")),
        "{oks:?}"
    );

    // A wrong client secret: the endpoint answers 401 and librdkafka never gets a token.
    let check = rdkafka::check_connect(&bs, &oidc("wrong"), Duration::from_secs(6)).unwrap();
    assert!(!check.ok, "{}", check.describe());
    assert!(endpoint.count("token_refused") >= 1);
    // librdkafka: "_AUTHENTICATION: Failed to acquire SASL OAUTHBEARER token:
    // {"error": "invalid_client"}", and it never offers the front end a token.
    assert!(check.has("_AUTHENTICATION"), "{}", check.describe());
    assert!(
        check.describe().contains("invalid_client"),
        "{}",
        check.describe()
    );
    assert_eq!(secure.front.count("auth_failed"), 0);
}

#[test]
fn oauthbearer_token_file() {
    let pki = pki();
    let endpoint = TokenEndpoint::start(TokenEndpointOptions::new(&pki)).expect("endpoint");
    let sasl = SaslOptions::new(&[SaslMechanism::OAuthBearer]).oauth_secret(endpoint.secret());
    let secure = SecureBroker::start(FrontOptions::sasl_plaintext(sasl)).expect("start");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token.jwt");
    let base = ClientConfig::new().set("security.protocol", "SASL_PLAINTEXT");

    endpoint
        .mint_token_file(&file, "file-user", Duration::from_secs(600))
        .unwrap();
    round_trip(
        &secure.bootstrap(),
        "token-file",
        20,
        &base.clone().oauth_token_file(&file),
    );
    assert!(
        event_users(&secure.front, "auth_ok")
            .iter()
            .all(|(_, u)| u.as_deref() == Some("file-user"))
    );

    // An expired token, then one signed with another key: refused by the front end.
    let expired = dir.path().join("expired.jwt");
    endpoint
        .mint_expired_token_file(&expired, "file-user")
        .unwrap();
    refused(
        &secure.bootstrap(),
        &base.clone().oauth_token_file(&expired),
        "_AUTHENTICATION",
    );
    let other = TokenEndpoint::start(TokenEndpointOptions::new(&pki)).expect("endpoint 2");
    let forged = dir.path().join("forged.jwt");
    other
        .mint_token_file(&forged, "file-user", Duration::from_secs(600))
        .unwrap();
    refused(
        &secure.bootstrap(),
        &base.oauth_token_file(&forged),
        "_AUTHENTICATION",
    );
    let reasons: Vec<_> = secure
        .front
        .events()
        .unwrap()
        .into_iter()
        .filter(|e| e.event == "auth_failed")
        .filter_map(|e| e.reason)
        .collect();
    assert!(reasons.iter().any(|r| r.contains("expired")), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("signature")),
        "{reasons:?}"
    );
}

// ------------------------------------------------------------------------------- KIP-368

#[test]
fn reauthentication_keeps_traffic_flowing() {
    let pki = pki();
    let sasl = SaslOptions::new(&[SaslMechanism::ScramSha256]).user(USER, PASSWORD);
    let options =
        FrontOptions::sasl_ssl(&pki, sasl).with_session_lifetime(Duration::from_millis(2500));
    let secure = SecureBroker::start(options).expect("start");
    let bs = secure.bootstrap();
    let client = ClientConfig::new()
        .set("ssl.ca.location", path(&pki.ca_cert))
        .merge(&sasl_client(
            "SASL_SSL",
            SaslMechanism::ScramSha256,
            USER,
            PASSWORD,
        ));
    rdkafka::create_topic_with(&bs, "reauth", 2, &[], &client).unwrap();
    let records = DataGen::new(5).records(60, &RecordSpec::default());

    // One producer busy for ~7.5 s (a record every 125 ms) and a consumer reading
    // alongside it until 3 s of silence: both connections live through several sessions.
    let (delivered, got) = std::thread::scope(|s| {
        let producer = s.spawn(|| {
            let opts = ProduceOptions {
                pace: Some(Duration::from_millis(125)),
                linger_ms: 0,
                timeout: Duration::from_secs(40),
                client: client.clone(),
                ..ProduceOptions::default()
            };
            rdkafka::produce(&bs, "reauth", &records, &opts)
        });
        let consumer = s.spawn(|| {
            let opts = ConsumeOptions {
                idle: Duration::from_secs(3),
                max_time: Duration::from_secs(40),
                client: client.clone(),
                ..ConsumeOptions::default()
            };
            rdkafka::consume(&bs, "reauth", &opts)
        });
        (
            producer.join().expect("producer thread"),
            consumer.join().expect("consumer thread"),
        )
    });
    let delivered = delivered.expect("produce across re-authentications");
    assert!(delivered.iter().all(|d| d.error.is_none()));
    assert_same(&records, &got.expect("consume across re-authentications"));

    let reauths = secure.front.count("reauth_ok");
    eprintln!(
        "re-authentications: {reauths}, sessions expired: {}, connections: {}",
        secure.front.count("session_expired"),
        secure.front.count("accepted")
    );
    assert!(reauths >= 2, "only {reauths} re-authentications");
    assert_eq!(secure.front.count("reauth_failed"), 0);
    assert_eq!(secure.front.count("auth_failed"), 0);
    let oks = event_users(&secure.front, "reauth_ok");
    assert!(oks.iter().all(|(_, u)| u.as_deref() == Some(USER)));
}
