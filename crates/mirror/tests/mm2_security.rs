//! Importing the TLS and SASL settings of MirrorMaker 2 properties files.

use std::path::{Path, PathBuf};

use strait_mirror::config::mm2::{UnmappedKey, import_mm2};
use strait_mirror::config::model::ConfigFile;
use strait_mirror::config::security::{SaslMechanism, SecurityProtocol};
use strait_mirror::config::{load_str, parse_str};

/// Two clusters and an enabled flow, plus `extra` lines.
fn props(extra: &str) -> String {
    format!(
        "clusters = a, b\na.bootstrap.servers = a:9093\nb.bootstrap.servers = b:9092\na->b.enabled = true\n{extra}"
    )
}

fn import(extra: &str) -> (String, Vec<UnmappedKey>, ConfigFile) {
    let (toml, unmapped) = import_mm2(&props(extra)).unwrap();
    let file =
        parse_str(&toml, "t", &|_| Some("x".into())).unwrap_or_else(|e| panic!("{e}\n---\n{toml}"));
    (toml, unmapped, file)
}

fn reason(unmapped: &[UnmappedKey], key: &str) -> String {
    let found: Vec<&str> = unmapped
        .iter()
        .filter(|u| u.key == key)
        .map(|u| u.reason.as_str())
        .collect();
    found.join(" | ")
}

/// The variables the importer says to export.
fn exported(unmapped: &[UnmappedKey]) -> String {
    reason(unmapped, "environment")
}

/// A fresh directory for files that validation must be able to read.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strait-mm2-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn plain_and_scram_become_username_and_password_placeholder() {
    for (mech, module, expected) in [
        ("PLAIN", "plain.PlainLoginModule", SaslMechanism::Plain),
        (
            "SCRAM-SHA-256",
            "scram.ScramLoginModule",
            SaslMechanism::ScramSha256,
        ),
        (
            "scram-sha-512",
            "scram.ScramLoginModule",
            SaslMechanism::ScramSha512,
        ),
    ] {
        let (toml, unmapped, file) = import(&format!(
            "a.security.protocol = SASL_SSL\na.sasl.mechanism = {mech}\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.{module} required username=\"mm2\" password=\"pw-{mech}\";\n"
        ));
        assert!(!toml.contains("pw-"), "{toml}");
        let sasl = file.clusters["a"].security.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanism, expected, "{mech}");
        assert_eq!(sasl.username.as_deref(), Some("mm2"));
        assert_eq!(
            sasl.password.as_deref(),
            Some("x"),
            "from ${{A_SASL_PASSWORD}}"
        );
        assert!(toml.contains("password = \"${A_SASL_PASSWORD}\""), "{toml}");
        assert!(
            reason(&unmapped, "a.sasl.jaas.config").contains("A_SASL_PASSWORD"),
            "{unmapped:?}"
        );
        assert!(exported(&unmapped).contains("A_SASL_PASSWORD"));
        assert!(reason(&unmapped, "a.sasl.mechanism").is_empty());
        load_str(&toml, "t", &|_| Some("pw".into())).unwrap_or_else(|e| panic!("{mech}: {e}"));
    }
}

#[test]
fn oauthbearer_client_credentials() {
    for handler in [
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
    ] {
        let (toml, unmapped, file) = import(&format!(
            "a.security.protocol = SASL_SSL\na.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.login.callback.handler.class = {handler}\n\
             a.sasl.oauthbearer.token.endpoint.url = https://idp.example.com/oauth2/token\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
               clientId=\"mm2-client\" clientSecret=\"the-client-secret\" scope=\"kafka\" \
               extension_logicalCluster=\"lkc-abc\" extension_identityPoolId=\"pool-1\";\n"
        ));
        assert!(!toml.contains("the-client-secret"), "{toml}");
        assert!(
            toml.contains("client_secret = \"${A_SASL_CLIENT_SECRET}\""),
            "{toml}"
        );
        let sasl = file.clusters["a"].security.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanism, SaslMechanism::OAuthBearer);
        assert_eq!(
            sasl.token_endpoint_url.as_deref(),
            Some("https://idp.example.com/oauth2/token")
        );
        assert_eq!(sasl.client_id.as_deref(), Some("mm2-client"));
        assert_eq!(sasl.scope.as_deref(), Some("kafka"));
        assert_eq!(sasl.extensions["logicalCluster"], "lkc-abc");
        assert_eq!(sasl.extensions["identityPoolId"], "pool-1");
        assert!(sasl.username.is_none() && sasl.password.is_none());
        // The standard callback handler is consumed silently.
        assert!(
            reason(&unmapped, "a.sasl.login.callback.handler.class").is_empty(),
            "{unmapped:?}"
        );
        assert!(exported(&unmapped).contains("A_SASL_CLIENT_SECRET"));
        load_str(&toml, "t", &|_| Some("s".into())).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    }
}

#[test]
fn oauthbearer_file_url_becomes_token_file() {
    let dir = temp_dir("token");
    let token = write(&dir, "token.jwt", "eyJhbGciOi.x.y\n");
    let (toml, unmapped, file) = import(&format!(
        "security.protocol = SASL_SSL\nsasl.mechanism = OAUTHBEARER\n\
         sasl.oauthbearer.token.endpoint.url = file://{token}\n\
         sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n"
    ));
    for alias in ["a", "b"] {
        let sasl = file.clusters[alias].security.sasl.as_ref().unwrap();
        assert_eq!(
            sasl.token_file.as_deref(),
            Some(Path::new(&token)),
            "{toml}"
        );
        assert!(sasl.token_endpoint_url.is_none());
    }
    assert!(exported(&unmapped).is_empty(), "no secret: {unmapped:?}");
    load_str(&toml, "t", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
}

#[test]
fn aws_msk_iam_maps_to_the_msk_iam_mechanism() {
    for extra in [
        "a.sasl.mechanism = AWS_MSK_IAM\n\
         a.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n\
         a.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n",
        "a.sasl.mechanism = OAUTHBEARER\n\
         a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n\
         a.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n",
    ] {
        let (toml, unmapped, file) = import(&format!("a.security.protocol = SASL_SSL\n{extra}"));
        let sasl = file.clusters["a"].security.sasl.as_ref().expect("sasl");
        assert_eq!(sasl.mechanism, SaslMechanism::AwsMskIam, "{toml}");
        assert!(toml.contains("region = \"${A_AWS_REGION}\""), "{toml}");
        assert!(sasl.region.is_some());
        for key in ["a.sasl.mechanism", "a.sasl.jaas.config"] {
            assert!(
                reason(&unmapped, key).contains("mechanism \"aws-msk-iam\""),
                "{key}: {unmapped:?}"
            );
        }
    }
}

#[test]
fn gssapi_is_unmapped() {
    let jaas = "a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab=\"/k.keytab\" principal=\"mm2@EX.COM\";\n\
                a.sasl.kerberos.service.name = kafka\n";
    for mech in ["a.sasl.mechanism = GSSAPI\n", ""] {
        let (_, unmapped, file) = import(&format!(
            "a.security.protocol = SASL_PLAINTEXT\n{mech}{jaas}"
        ));
        assert!(file.clusters["a"].security.sasl.is_none());
        assert!(
            reason(&unmapped, "a.sasl.mechanism").contains("Kerberos (GSSAPI) is not supported"),
            "{unmapped:?}"
        );
        assert_eq!(
            reason(&unmapped, "a.sasl.jaas.config"),
            "Kerberos (GSSAPI) is not supported"
        );
        assert_eq!(
            reason(&unmapped, "a.sasl.kerberos.service.name"),
            "Kerberos (GSSAPI) is not supported"
        );
    }
}

#[test]
fn cluster_keys_override_global_keys() {
    let (toml, unmapped, file) = import(
        "security.protocol = SASL_SSL\n\
         sasl.mechanism = SCRAM-SHA-256\n\
         sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"global\" password=\"p\";\n\
         b.sasl.mechanism = PLAIN\n\
         b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bee\" password=\"q\";\n",
    );
    let a = &file.clusters["a"].security;
    let b = &file.clusters["b"].security;
    assert_eq!(a.protocol, SecurityProtocol::SaslSsl);
    assert_eq!(b.protocol, SecurityProtocol::SaslSsl);
    let (sa, sb) = (a.sasl.as_ref().unwrap(), b.sasl.as_ref().unwrap());
    assert_eq!(
        (sa.mechanism, sa.username.as_deref()),
        (SaslMechanism::ScramSha256, Some("global"))
    );
    assert_eq!(
        (sb.mechanism, sb.username.as_deref()),
        (SaslMechanism::Plain, Some("bee"))
    );
    assert!(toml.contains("${A_SASL_PASSWORD}") && toml.contains("${B_SASL_PASSWORD}"));
    assert!(exported(&unmapped).contains("A_SASL_PASSWORD"));
    assert!(exported(&unmapped).contains("B_SASL_PASSWORD"));
    for k in ["security.protocol", "sasl.mechanism", "b.sasl.mechanism"] {
        assert!(reason(&unmapped, k).is_empty(), "{k}: {unmapped:?}");
    }
    load_str(&toml, "t", &|_| Some("pw".into())).unwrap();

    // A cluster-level protocol wins over the global one; its keys are then ignored.
    let (toml, unmapped, file) = import(
        "security.protocol = SSL\nb.security.protocol = PLAINTEXT\n\
         b.ssl.truststore.location = /x.pem\nb.ssl.truststore.type = PEM\n",
    );
    assert_eq!(file.clusters["a"].security.protocol, SecurityProtocol::Ssl);
    assert!(file.clusters["a"].security.tls.is_none(), "system roots");
    assert_eq!(
        file.clusters["b"].security.protocol,
        SecurityProtocol::Plaintext
    );
    assert!(
        reason(&unmapped, "b.ssl.truststore.location")
            .contains("ignored, as Kafka does: `security.protocol` is PLAINTEXT")
    );
    load_str(&toml, "t", &|_| None).unwrap();
}

#[test]
fn global_security_keys_no_cluster_uses_are_reported() {
    let (_, unmapped, _) =
        import("ssl.truststore.location = /x.jks\nsasl.mechanism = PLAIN\nssl.cipher.suites = X\n");
    assert!(reason(&unmapped, "ssl.truststore.location").contains("no cluster"));
    assert!(reason(&unmapped, "sasl.mechanism").contains("no cluster"));
    assert!(reason(&unmapped, "ssl.cipher.suites").contains("TLS 1.3 or 1.2"));
}

#[test]
fn client_overrides_of_security_keys_are_unmapped() {
    let (_, unmapped, _) = import(
        "a.security.protocol = SSL\na.consumer.ssl.truststore.location = /c.pem\n\
         producer.security.protocol = SSL\nb.admin.sasl.mechanism = PLAIN\n",
    );
    for k in [
        "a.consumer.ssl.truststore.location",
        "producer.security.protocol",
        "b.admin.sasl.mechanism",
    ] {
        assert!(
            reason(&unmapped, k).contains("one security setting per cluster"),
            "{k}: {unmapped:?}"
        );
    }
}

#[test]
fn pem_stores_are_used_directly() {
    let dir = temp_dir("pem");
    let ca = write(
        &dir,
        "ca.pem",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    );
    let ks = write(
        &dir,
        "client.pem",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
    );
    let (toml, unmapped, file) = import(&format!(
        "a.security.protocol = SSL\n\
         a.ssl.truststore.type = PEM\na.ssl.truststore.location = {ca}\n\
         a.ssl.keystore.type = PEM\na.ssl.keystore.location = {ks}\n\
         a.ssl.endpoint.identification.algorithm = https\n"
    ));
    let tls = file.clusters["a"].security.tls.as_ref().unwrap();
    assert_eq!(tls.ca_file.as_deref(), Some(Path::new(&ca)));
    assert_eq!(tls.cert_file.as_deref(), Some(Path::new(&ks)));
    assert_eq!(
        tls.key_file.as_deref(),
        Some(Path::new(&ks)),
        "one PEM file holds chain and key"
    );
    assert!(
        toml.contains("cert_file and key_file are both the PEM key store"),
        "{toml}"
    );
    assert!(unmapped.is_empty(), "{unmapped:?}");
    load_str(&toml, "t", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
}

#[test]
fn pem_keystore_with_encrypted_key_needs_decrypting() {
    let (toml, unmapped, file) = import(
        "a.security.protocol = SSL\na.ssl.keystore.type = PEM\na.ssl.keystore.location = /etc/kafka/client.pem\n\
         a.ssl.key.password = k3y-pw\n",
    );
    assert!(!toml.contains("k3y-pw"));
    let tls = file.clusters["a"].security.tls.as_ref().unwrap();
    assert_eq!(
        tls.cert_file.as_deref(),
        Some(Path::new("/etc/kafka/client.pem"))
    );
    assert_eq!(
        tls.key_file.as_deref(),
        Some(Path::new("/etc/strait/a-client.key"))
    );
    assert!(
        reason(&unmapped, "a.ssl.keystore.location")
            .contains("`openssl pkcs8 -in /etc/kafka/client.pem -out /etc/strait/a-client.key`")
    );
    assert!(reason(&unmapped, "a.ssl.key.password").contains("not copied"));
}

#[test]
fn jks_and_pkcs12_stores_get_placeholders_and_conversion_commands() {
    for (ty, trust_steps, key_steps) in [
        (
            "",
            "`keytool -importkeystore -srckeystore /etc/kafka/ts.jks -destkeystore a-truststore.p12 -deststoretype PKCS12` then \
             `openssl pkcs12 -in a-truststore.p12 -nokeys -out /etc/strait/a-ca.pem`",
            "`keytool -importkeystore -srckeystore /etc/kafka/ks.jks -destkeystore a-keystore.p12 -deststoretype PKCS12` then \
             `openssl pkcs12 -in a-keystore.p12 -nokeys -out /etc/strait/a-client.pem` and \
             `openssl pkcs12 -in a-keystore.p12 -nocerts -nodes -out /etc/strait/a-client.key`",
        ),
        (
            "JKS",
            "`keytool -importkeystore -srckeystore /etc/kafka/ts.jks -destkeystore a-truststore.p12 -deststoretype PKCS12` then \
             `openssl pkcs12 -in a-truststore.p12 -nokeys -out /etc/strait/a-ca.pem`",
            "`keytool -importkeystore -srckeystore /etc/kafka/ks.jks -destkeystore a-keystore.p12 -deststoretype PKCS12` then \
             `openssl pkcs12 -in a-keystore.p12 -nokeys -out /etc/strait/a-client.pem` and \
             `openssl pkcs12 -in a-keystore.p12 -nocerts -nodes -out /etc/strait/a-client.key`",
        ),
        (
            "PKCS12",
            "convert it with `openssl pkcs12 -in /etc/kafka/ts.jks -nokeys -out /etc/strait/a-ca.pem`",
            "convert it with `openssl pkcs12 -in /etc/kafka/ks.jks -nokeys -out /etc/strait/a-client.pem` and \
             `openssl pkcs12 -in /etc/kafka/ks.jks -nocerts -nodes -out /etc/strait/a-client.key`",
        ),
    ] {
        let types = if ty.is_empty() {
            String::new()
        } else {
            format!("a.ssl.truststore.type = {ty}\na.ssl.keystore.type = {ty}\n")
        };
        let (toml, unmapped, file) = import(&format!(
            "a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";\n\
             {types}a.ssl.truststore.location = /etc/kafka/ts.jks\na.ssl.truststore.password = ts-pw\n\
             a.ssl.keystore.location = /etc/kafka/ks.jks\na.ssl.keystore.password = ks-pw\na.ssl.key.password = key-pw\n"
        ));
        let tls = file.clusters["a"].security.tls.as_ref().unwrap();
        assert_eq!(
            tls.ca_file.as_deref(),
            Some(Path::new("/etc/strait/a-ca.pem"))
        );
        assert_eq!(
            tls.cert_file.as_deref(),
            Some(Path::new("/etc/strait/a-client.pem"))
        );
        assert_eq!(
            tls.key_file.as_deref(),
            Some(Path::new("/etc/strait/a-client.key"))
        );
        let trust = reason(&unmapped, "a.ssl.truststore.location");
        assert!(trust.contains(trust_steps), "{ty}: {trust}");
        let key = reason(&unmapped, "a.ssl.keystore.location");
        assert!(key.contains(key_steps), "{ty}: {key}");
        for k in [
            "a.ssl.truststore.password",
            "a.ssl.keystore.password",
            "a.ssl.key.password",
        ] {
            assert!(reason(&unmapped, k).contains("not copied"), "{k}");
        }
        for pw in ["ts-pw", "ks-pw", "key-pw"] {
            assert!(!toml.contains(pw) && !format!("{unmapped:?}").contains(pw));
        }
        // Until the files are converted, validation names exactly them.
        let err = load_str(&toml, "t", &|_| Some("pw".into()))
            .unwrap_err()
            .to_string();
        for f in ["a-ca.pem", "a-client.pem", "a-client.key"] {
            assert!(err.contains(f), "{err}");
        }
    }
}

#[test]
fn inline_pem_is_unmapped() {
    let (_, unmapped, file) = import(
        "a.security.protocol = SSL\na.ssl.truststore.type = PEM\na.ssl.keystore.type = PEM\n\
         a.ssl.truststore.certificates = -----BEGIN CERTIFICATE----- MIIB -----END CERTIFICATE-----\n\
         a.ssl.keystore.certificate.chain = -----BEGIN CERTIFICATE----- MIIC -----END CERTIFICATE-----\n\
         a.ssl.keystore.key = -----BEGIN PRIVATE KEY----- MIIE -----END PRIVATE KEY-----\n",
    );
    assert!(file.clusters["a"].security.tls.is_none());
    for k in [
        "a.ssl.truststore.certificates",
        "a.ssl.keystore.certificate.chain",
        "a.ssl.keystore.key",
    ] {
        assert_eq!(
            reason(&unmapped, k),
            "inline PEM: write it to a file and set ca_file/cert_file/key_file"
        );
    }
    let key = unmapped
        .iter()
        .find(|u| u.key == "a.ssl.keystore.key")
        .unwrap();
    assert_eq!(key.value, "<redacted>");
}

#[test]
fn disabled_host_name_verification_is_unmapped() {
    let (toml, unmapped, _) =
        import("a.security.protocol = SSL\na.ssl.endpoint.identification.algorithm =\n");
    assert_eq!(
        reason(&unmapped, "a.ssl.endpoint.identification.algorithm"),
        "host name verification is always on in Strait; set `server_name` if brokers are reached under another name"
    );
    load_str(&toml, "t", &|_| None).unwrap();
}

#[test]
fn no_secret_appears_anywhere_in_the_output() {
    let text = props(
        "a.security.protocol = SASL_SSL\n\
         a.sasl.mechanism = SCRAM-SHA-512\n\
         a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"SECRET-1\" tokenauth=\"SECRET-13\";\n\
         a.ssl.truststore.location = /ts.jks\na.ssl.truststore.password = SECRET-2\n\
         a.ssl.keystore.location = /ks.p12\na.ssl.keystore.type = PKCS12\na.ssl.keystore.password = SECRET-3\n\
         a.ssl.key.password = SECRET-4\n\
         b.security.protocol = SASL_SSL\nb.sasl.mechanism = OAUTHBEARER\n\
         b.sasl.oauthbearer.token.endpoint.url = https://idp/token\n\
         b.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=\"c\" clientSecret=\"SECRET-5\" extra=\"SECRET-6\";\n\
         b.ssl.keystore.type = PEM\nb.ssl.keystore.key = -----BEGIN PRIVATE KEY----- SECRET-7 -----END PRIVATE KEY-----\n\
         b.ssl.key.password = SECRET-8\n\
         a.consumer.sasl.jaas.config = x required password=\"SECRET-9\";\n\
         a.producer.ssl.key.password = SECRET-10\n\
         sasl.jaas.config = broken password=\"SECRET-11\n\
         some.unknown.password = SECRET-12\n\
         b.sasl.login.callback.handler.class = com.example.Handler\n\
         value.converter.basic.auth.user.info = KEY:SECRET-14\n\
         a.value.converter.schema.registry.basic.auth.user.info = KEY:SECRET-15\n\
         b.confluent.api.key = SECRET-16\n\
         a.aws.secret.access.key = SECRET-17\n\
         bearer.auth.token = SECRET-18\n",
    );
    let result = import_mm2(&text).unwrap();
    let (toml, unmapped) = &result;
    let everything = format!(
        "{toml}\n{unmapped:?}\n{result:?}\n{}",
        unmapped
            .iter()
            .map(|u| format!("{} = {}: {}", u.key, u.value, u.reason))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for i in 1..=18 {
        let secret = format!("SECRET-{i}");
        // `SECRET-1` must not match inside `SECRET-10`.
        let found = everything.match_indices(&secret).any(|(at, _)| {
            !everything[at + secret.len()..].starts_with(|c: char| c.is_ascii_digit())
        });
        assert!(!found, "{secret} leaked:\n{everything}");
    }
    let env = exported(unmapped);
    assert!(
        env.contains("A_SASL_PASSWORD") && env.contains("B_SASL_CLIENT_SECRET"),
        "{env}"
    );
    // A malformed JAAS line: nothing from it is quoted.
    let (_, unmapped) = import_mm2(&props(
        "a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\na.sasl.jaas.config = Mod required password=\"SECRET-X\n",
    ))
    .unwrap();
    assert!(!format!("{unmapped:?}").contains("SECRET-X"));
    assert!(reason(&unmapped, "a.sasl.jaas.config").contains("not a JAAS line"));
}

/// Secret-bearing keys a real MM2 file can carry: Kafka client TLS and SASL, Connect
/// converters and Schema Registry, config provider parameters, REST listener TLS, cloud
/// credentials.
const SECRET_CATALOGUE: &[&str] = &[
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "basic.auth.user.info",
    "schema.registry.basic.auth.user.info",
    "value.converter.basic.auth.user.info",
    "key.converter.schema.registry.basic.auth.user.info",
    "value.converter.schema.registry.ssl.keystore.password",
    "bearer.auth.token",
    "bearer.auth.client.secret",
    "confluent.api.key",
    "confluent.api.secret",
    "aws.access.key.id",
    "aws.secret.access.key",
    "aws.session.token",
    "config.providers.vault.param.vault.token",
    "config.providers.aws.param.aws.secret.access.key",
    "listeners.https.ssl.keystore.password",
    "listeners.https.ssl.key.password",
    "rest.ssl.truststore.password",
    "some.vendor.apikey",
    "some.vendor.client.credential",
];

/// Every prefix MM2 reads a key under.
const SECRET_PREFIXES: &[&str] = &[
    "",
    "a.",
    "b.",
    "a.consumer.",
    "a.producer.",
    "b.admin.",
    "a->b.",
    "a->b.producer.",
    "a->b.consumer.",
    "producer.override.",
    "consumer.",
];

/// The catalogue under every prefix, each value a marker `S3CR3T-<n>` in one of the
/// shapes a secret comes in; returns the properties and the markers.
fn secret_catalogue() -> (String, Vec<String>) {
    let mut text = String::from(
        "a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
         b.security.protocol = SSL\nb.ssl.keystore.type = PEM\nb.ssl.keystore.location = /ks.pem\n",
    );
    let mut markers = Vec::new();
    for prefix in SECRET_PREFIXES {
        for key in SECRET_CATALOGUE {
            let marker = format!("S3CR3T-{}", markers.len());
            let value = match markers.len() % 5 {
                0 => marker.clone(),
                1 => format!("user:{marker}"),
                2 => format!(
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"{marker}\";"
                ),
                3 => format!("-----BEGIN PRIVATE KEY----- {marker} -----END PRIVATE KEY-----"),
                _ => format!("Mod required password=\"{marker}"),
            };
            text.push_str(&format!("{prefix}{key} = {value}\n"));
            markers.push(marker);
        }
    }
    (text, markers)
}

/// The markers found in `text` (`S3CR3T-1` not matching inside `S3CR3T-10`).
fn leaked<'m>(text: &str, markers: &'m [String]) -> Vec<&'m String> {
    markers
        .iter()
        .filter(|m| {
            text.match_indices(m.as_str())
                .any(|(at, _)| !text[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect()
}

#[test]
fn the_secret_key_catalogue_never_reaches_messages_errors_or_the_toml() {
    let (text, markers) = secret_catalogue();
    let result = import_mm2(&props(&text)).unwrap();
    let (toml, unmapped) = &result;
    let everything = format!(
        "{toml}\n{result:?}\n{}",
        unmapped
            .iter()
            .map(|u| format!("{} = {}: {}", u.key, u.value, u.reason))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The keys were read and reported: the test is not passing on an empty output.
    assert!(
        everything.contains("ssl.keystore.certificate.chain"),
        "{everything}"
    );
    assert!(unmapped.len() > 20, "{unmapped:#?}");
    let found = leaked(&everything, &markers);
    assert!(
        found.is_empty(),
        "{} of {} leaked, e.g. {:?}",
        found.len(),
        markers.len(),
        found.first()
    );

    // The import refused after reading every key: the error says nothing of them.
    for refusal in [
        "topics = ${file:/etc/mm2/f.properties:topics}\n",
        "replication.policy.class = com.example.Policy\n",
        "refresh.topics.enabled = false\n",
    ] {
        let Err(e) = import_mm2(&props(&format!("{text}{refusal}"))) else {
            panic!("{refusal}: accepted");
        };
        let shown = format!("{e}\n{e:?}");
        assert!(leaked(&shown, &markers).is_empty(), "{shown}");
    }
}

#[test]
fn key_named_values_are_redacted_unless_known_plain() {
    let (_, unmapped, _) = import(
        "x.custom.signing.key.id = S3CR3T-K\nkey.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
         odd.setting = com.sun.security.auth.module.Krb5LoginModule required keyTab=\"/k\";\n",
    );
    let value = |k: &str| {
        unmapped
            .iter()
            .find(|u| u.key == k)
            .map(|u| u.value.clone())
    };
    assert_eq!(
        value("x.custom.signing.key.id").as_deref(),
        Some("<redacted>")
    );
    assert_eq!(
        value("key.converter").as_deref(),
        Some("org.apache.kafka.connect.converters.ByteArrayConverter")
    );
    assert_eq!(
        value("odd.setting").as_deref(),
        Some("<redacted>"),
        "a JAAS line under any key"
    );
}
