//! `security.protocol`, `ssl.*` and `sasl.*` → `[clusters.<name>.security]`.
//!
//! Each key is looked up as `A.<key>`, then as the global `<key>` (MM2's default for every
//! cluster). Secrets are never copied: SASL passwords and OAuth client secrets become
//! `${A_SASL_PASSWORD}` / `${A_SASL_CLIENT_SECRET}`; store and key passwords are dropped,
//! since Strait reads unencrypted PEM files and needs them no more once stores are converted.

use std::path::PathBuf;

use super::jaas::parse_jaas;
use super::{Props, literal, placeholders};
use crate::config::security::{SaslMechanism, SaslSpec, SecurityProtocol, TlsSpec};

const INLINE_PEM: &str = "inline PEM: write it to a file and set ca_file/cert_file/key_file";
const STORE_PASSWORD: &str = "not copied, and not needed: Strait reads unencrypted PEM files, so store and \
     key passwords have no use once the stores are converted (keep those files readable by Strait only)";
const NO_HOSTNAME_CHECK: &str = "host name verification is always on in Strait; set `server_name` if brokers are reached under another name";
const MSK_IAM: &str = "AWS MSK IAM: mechanism \"aws-msk-iam\"; credentials come from the default \
     AWS chain (environment, profile, web identity, ECS/EC2 metadata), the region from the \
     environment; needs a strait built with --features msk-iam";
const KERBEROS: &str = "Kerberos (GSSAPI) is not supported";
const OAUTH_HANDLERS: [&str; 2] = [
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];
const MSK_PACKAGE: &str = "software.amazon.msk.auth.iam.";
const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTH_MODULE: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
/// The keys this module maps; a global one no cluster consulted is reported as unused.
const TLS_KEYS: [&str; 11] = [
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
];
const SASL_KEYS: [&str; 5] = [
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.oauthbearer.token.endpoint.url",
];

impl Props {
    /// The `tls` table of cluster `alias`, or `None` for the system's CA roots.
    pub(super) fn tls(&mut self, alias: &str, protocol: SecurityProtocol) -> Option<TlsSpec> {
        if !protocol.uses_tls() {
            self.ignore_cluster_keys(alias, "ssl.", protocol, "TLS");
            return None;
        }
        let stem = file_stem(alias);
        let mut tls = TlsSpec::default();

        let location = self.cluster_value(alias, "ssl.truststore.location");
        let kind = self.store_type(alias, "ssl.truststore.type");
        if let Some((k, _)) = self.cluster_value(alias, "ssl.truststore.certificates") {
            self.unmapped(&k, INLINE_PEM);
        }
        if let Some((k, loc)) = location {
            let pem = format!("/etc/strait/{stem}-ca.pem");
            match kind.as_str() {
                "PEM" => tls.ca_file = Some(PathBuf::from(literal(&loc))),
                "JKS" | "PKCS12" => {
                    let (steps, p12) = to_p12(&loc, &kind, &format!("{stem}-truststore.p12"));
                    self.unmapped(
                        &k,
                        format!(
                            "{kind} trust store: Strait reads PEM; convert it with{steps} \
                             `openssl pkcs12 -in {p12} -nokeys -out {pem}`; the TOML's ca_file is {pem}"
                        ),
                    );
                    tls.ca_file = Some(PathBuf::from(pem));
                }
                other => {
                    self.unmapped(
                        &k,
                        format!(
                            "trust store type {other} cannot be converted here: export its CA certificates as PEM \
                             to {pem} (the TOML's ca_file)"
                        ),
                    );
                    tls.ca_file = Some(PathBuf::from(pem));
                }
            }
        }
        if let Some((k, _)) = self.cluster_value(alias, "ssl.truststore.password") {
            self.unmapped(&k, STORE_PASSWORD);
        }

        let location = self.cluster_value(alias, "ssl.keystore.location");
        let kind = self.store_type(alias, "ssl.keystore.type");
        let key_password = self.cluster_value(alias, "ssl.key.password");
        for inline in ["ssl.keystore.certificate.chain", "ssl.keystore.key"] {
            if let Some((k, _)) = self.cluster_value(alias, inline) {
                self.unmapped(&k, INLINE_PEM);
            }
        }
        if let Some((k, loc)) = location {
            let cert = format!("/etc/strait/{stem}-client.pem");
            let key = format!("/etc/strait/{stem}-client.key");
            match kind.as_str() {
                "PEM" if key_password.is_some() => {
                    // Kafka's PEM key store holds an encrypted PKCS#8 key when
                    // `ssl.key.password` is set; Strait reads unencrypted keys only.
                    self.unmapped(
                        &k,
                        format!(
                            "PEM key store with an encrypted key (`ssl.key.password` is set): decrypt the key with \
                             `openssl pkcs8 -in {} -out {key}` (it asks for the key password); the TOML's cert_file \
                             is the key store, its key_file is {key}",
                            sh(&loc)
                        ),
                    );
                    tls.cert_file = Some(PathBuf::from(literal(&loc)));
                    tls.key_file = Some(PathBuf::from(key));
                }
                "PEM" => {
                    // Kafka keeps the certificate chain and the key in one PEM file. Strait
                    // reads every CERTIFICATE block of cert_file and the (first) private key
                    // block of key_file (rustls-pki-types' `PrivateKeyDer::from_pem_slice`
                    // skips other blocks), so the same file serves as both.
                    let path = literal(&loc);
                    self.comments.push(format!(
                        "clusters.{alias}.security.tls: cert_file and key_file are both the PEM key store {path}; \
                         Strait reads the certificate chain and the private key from the same file."
                    ));
                    tls.cert_file = Some(PathBuf::from(&path));
                    tls.key_file = Some(PathBuf::from(path));
                }
                "JKS" | "PKCS12" => {
                    let (steps, p12) = to_p12(&loc, &kind, &format!("{stem}-keystore.p12"));
                    self.unmapped(
                        &k,
                        format!(
                            "{kind} key store: Strait reads PEM; convert it with{steps} \
                             `openssl pkcs12 -in {p12} -nokeys -out {cert}` and \
                             `openssl pkcs12 -in {p12} -nocerts -nodes -out {key}`; the TOML's cert_file is {cert}, \
                             its key_file {key}"
                        ),
                    );
                    tls.cert_file = Some(PathBuf::from(cert));
                    tls.key_file = Some(PathBuf::from(key));
                }
                other => {
                    self.unmapped(
                        &k,
                        format!(
                            "key store type {other} cannot be converted here: export the certificate chain as PEM \
                             to {cert} and the unencrypted private key to {key} (the TOML's cert_file and key_file)"
                        ),
                    );
                    tls.cert_file = Some(PathBuf::from(cert));
                    tls.key_file = Some(PathBuf::from(key));
                }
            }
        }
        if let Some((k, _)) = self.cluster_value(alias, "ssl.keystore.password") {
            self.unmapped(&k, STORE_PASSWORD);
        }
        if let Some((k, _)) = key_password {
            self.unmapped(&k, STORE_PASSWORD);
        }

        if let Some((k, v)) = self.cluster_value(alias, "ssl.endpoint.identification.algorithm") {
            if v.is_empty() {
                self.unmapped(&k, NO_HOSTNAME_CHECK);
            } else if !v.eq_ignore_ascii_case("https") {
                self.unmapped(
                    &k,
                    "unknown algorithm; Strait always verifies host names (set `server_name` to verify another name)",
                );
            }
        }
        (tls != TlsSpec::default()).then_some(tls)
    }

    /// `ssl.*store.type`, upper-cased; Kafka's default is JKS.
    fn store_type(&mut self, alias: &str, key: &str) -> String {
        self.cluster_value(alias, key)
            .map(|(_, v)| v.to_ascii_uppercase())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "JKS".to_owned())
    }

    /// `A.ssl.*` / `A.sasl.*` keys of a cluster whose protocol does not use them.
    fn ignore_cluster_keys(
        &mut self,
        alias: &str,
        family: &str,
        protocol: SecurityProtocol,
        what: &str,
    ) {
        let prefix = format!("{alias}.{family}");
        let keys: Vec<String> = self
            .order
            .iter()
            .filter(|k| k.starts_with(&prefix) && !self.used.contains(*k))
            .cloned()
            .collect();
        let name = protocol.to_string().to_ascii_uppercase();
        for k in keys {
            self.unmapped(
                &k,
                format!("ignored, as Kafka does: `security.protocol` is {name}, without {what}"),
            );
        }
    }

    /// The `sasl` table of cluster `alias`.
    pub(super) fn sasl(&mut self, alias: &str, protocol: SecurityProtocol) -> Option<SaslSpec> {
        if !protocol.uses_sasl() {
            self.ignore_cluster_keys(alias, "sasl.", protocol, "SASL");
            return None;
        }
        let mech = self.cluster_value(alias, "sasl.mechanism");
        let jaas = self.cluster_value(alias, "sasl.jaas.config");
        let handler = self.cluster_value(alias, "sasl.login.callback.handler.class");
        // MSK's docs set `software.amazon.msk.auth.iam.IAMClientCallbackHandler` here.
        let client_handler = self.cluster_value(alias, "sasl.client.callback.handler.class");
        let url = self.cluster_value(alias, "sasl.oauthbearer.token.endpoint.url");
        let mech_key = mech
            .as_ref()
            .map_or_else(|| format!("{alias}.sasl.mechanism"), |(k, _)| k.clone());
        let mech_name = mech
            .as_ref()
            .map_or_else(|| "GSSAPI".to_owned(), |(_, v)| v.to_ascii_uppercase());
        let parsed = jaas.as_ref().map(|(_, v)| parse_jaas(v));
        let module = match &parsed {
            Some(Ok(j)) => j.module.clone(),
            _ => String::new(),
        };
        let present: Vec<String> = [&mech, &jaas, &handler, &client_handler, &url]
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect();

        let msk = mech_name == "AWS_MSK_IAM"
            || module.starts_with(MSK_PACKAGE)
            || [&handler, &client_handler]
                .into_iter()
                .flatten()
                .any(|(_, h)| h.starts_with(MSK_PACKAGE));
        if msk {
            for k in &present {
                self.unmapped(k, MSK_IAM);
            }
            let mut spec = SaslSpec::new(SaslMechanism::AwsMskIam);
            spec.region =
                Some(self.env_placeholder(alias, "AWS_REGION", "AWS region of the MSK cluster"));
            return Some(spec);
        }
        let mechanism = match mech_name.as_str() {
            "PLAIN" => SaslMechanism::Plain,
            "SCRAM-SHA-256" => SaslMechanism::ScramSha256,
            "SCRAM-SHA-512" => SaslMechanism::ScramSha512,
            "OAUTHBEARER" => SaslMechanism::OAuthBearer,
            "GSSAPI" => {
                let reason = if mech.is_none() {
                    format!("missing: Kafka's default mechanism is GSSAPI; {KERBEROS}")
                } else {
                    KERBEROS.to_owned()
                };
                self.unmapped(&mech_key, reason);
                for k in &present {
                    self.unmapped(k, KERBEROS);
                }
                return None;
            }
            _ => {
                self.unmapped(
                    &mech_key,
                    "unknown SASL mechanism; Strait supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER",
                );
                for k in present.iter().filter(|k| **k != mech_key) {
                    self.unmapped(k, "its SASL mechanism is not supported");
                }
                return None;
            }
        };
        let mut spec = SaslSpec::new(mechanism);

        if let Some((k, h)) = &handler {
            let standard =
                mechanism == SaslMechanism::OAuthBearer && OAUTH_HANDLERS.contains(&h.as_str());
            if !standard {
                self.unmapped(
                    k,
                    "custom login callback handlers cannot be loaded; Strait has its own login for each mechanism",
                );
            }
        }
        if let Some((k, _)) = &client_handler {
            self.unmapped(
                k,
                "custom SASL client callback handlers cannot be loaded; Strait has its own login for \
                 PLAIN, SCRAM-SHA-256/512, OAUTHBEARER and AWS MSK IAM",
            );
        }
        if let Some((k, _)) = url
            .as_ref()
            .filter(|_| mechanism != SaslMechanism::OAuthBearer)
        {
            self.unmapped(k, "applies to OAUTHBEARER only");
        }

        let Some((jaas_key, _)) = jaas else {
            let jaas_key = format!("{alias}.sasl.jaas.config");
            if !self.map.contains_key(&jaas_key) {
                self.note(
                    &jaas_key,
                    "",
                    "missing: JAAS login files (`java.security.auth.login.config`) are not read; \
                     give the credentials in the TOML's sasl table",
                );
            }
            return Some(spec);
        };
        let jaas = match parsed {
            Some(Ok(j)) => j,
            _ => {
                self.unmapped(
                    &jaas_key,
                    "not a JAAS line Strait can read (`<LoginModule> required key=\"value\" ...;`); \
                     give the credentials in the TOML's sasl table",
                );
                return Some(spec);
            }
        };
        let expected = match mechanism {
            SaslMechanism::Plain => PLAIN_MODULE,
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => SCRAM_MODULE,
            SaslMechanism::OAuthBearer | SaslMechanism::AwsMskIam => OAUTH_MODULE,
        };
        let mut remarks: Vec<String> = Vec::new();
        if jaas.module != expected {
            remarks.push(format!(
                "the login module is not {expected}, which {mechanism} needs; its options were read anyway"
            ));
        }
        if jaas.more_modules {
            remarks.push("only the first login module was read".to_owned());
        }
        let mut unknown: Vec<&str> = Vec::new();

        if mechanism == SaslMechanism::OAuthBearer {
            for (name, value) in &jaas.options {
                if let Some(ext) = name.strip_prefix("extension_") {
                    spec.extensions.insert(ext.to_owned(), literal(value));
                } else if !["clientId", "clientSecret", "scope"].contains(&name.as_str()) {
                    unknown.push(name);
                }
            }
            let client_id = jaas.option("clientId");
            let has_secret = jaas.option("clientSecret").is_some();
            let scope = jaas.option("scope");
            match &url {
                Some((_, u)) if u.to_ascii_lowercase().starts_with("file:") => {
                    // Kafka reads the token from the file a `file:` URL names.
                    let path = u["file:".len()..].trim_start_matches("//");
                    let path = if path.starts_with('/') {
                        path.to_owned()
                    } else {
                        format!("/{path}")
                    };
                    spec.token_file = Some(PathBuf::from(literal(&path)));
                    if client_id.is_some() || has_secret || scope.is_some() {
                        remarks.push(
                            "token read from the file of the `file:` token endpoint URL (token_file); clientId, \
                             clientSecret and scope do not apply to it and were dropped"
                                .to_owned(),
                        );
                    }
                }
                Some((_, u)) => {
                    spec.token_endpoint_url = Some(literal(u));
                    spec.client_id = client_id.map(literal);
                    spec.scope = scope.map(literal);
                    if let Some(reference) = jaas.option("clientSecret").and_then(whole_reference) {
                        spec.client_secret = Some(reference.to_owned());
                        remarks.push(
                            "client id imported; the client secret is the variable its `${…}` reference became"
                                .to_owned(),
                        );
                    } else if has_secret {
                        spec.client_secret = Some(self.env_placeholder(
                            alias,
                            "SASL_CLIENT_SECRET",
                            "OAuth client secret",
                        ));
                        remarks.push(format!(
                            "client id imported; the client secret is read from the environment variable {}",
                            super::env_name(alias, "SASL_CLIENT_SECRET")
                        ));
                    }
                }
                None => remarks.push(
                    "no `sasl.oauthbearer.token.endpoint.url`: Kafka then makes unsecured development tokens, \
                     which Strait does not; set `token_file` or `token_endpoint_url` in the sasl table"
                        .to_owned(),
                ),
            }
        } else {
            unknown.extend(
                jaas.options
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .filter(|n| !["username", "password"].contains(n)),
            );
            match jaas.option("username") {
                Some(u) => spec.username = Some(literal(u)),
                None => remarks.push("no username=\"...\" option found".to_owned()),
            }
            if let Some(reference) = jaas.option("password").and_then(whole_reference) {
                spec.password = Some(reference.to_owned());
                remarks.push(
                    "username imported; the password is the variable its `${…}` reference became"
                        .to_owned(),
                );
            } else {
                spec.password = Some(self.env_placeholder(alias, "SASL_PASSWORD", "SASL password"));
                remarks.push(format!(
                    "username imported; the password is read from the environment variable {}",
                    super::env_name(alias, "SASL_PASSWORD")
                ));
            }
        }
        if !unknown.is_empty() {
            remarks.push(format!("JAAS options not imported: {}", unknown.join(", ")));
        }
        self.used.insert(jaas_key.clone());
        for r in remarks {
            self.unmapped(&jaas_key, r);
        }
        Some(spec)
    }
}

/// Why an unused `ssl.*` / `sasl.*` key has no equivalent; `suffix` is the key without a
/// flow prefix, `cluster_suffix` the key without its first segment (`A.`).
pub(super) fn reason(suffix: &str, cluster_suffix: &str) -> Option<&'static str> {
    let security =
        |k: &str| k.starts_with("ssl.") || k.starts_with("sasl.") || k == "security.protocol";
    let client_override = [suffix, cluster_suffix].iter().any(|s| {
        ["consumer.", "producer.", "admin."]
            .iter()
            .any(|c| s.strip_prefix(c).is_some_and(security))
    });
    if client_override {
        return Some(
            "Strait uses one security setting per cluster for all its connections; set `A.<key>` (or the \
             global `<key>`) instead of a consumer/producer/admin override",
        );
    }
    // A global key that no cluster consulted: no cluster's protocol uses it.
    if TLS_KEYS.contains(&suffix) {
        return Some(
            "not used: no cluster has `security.protocol` SSL or SASL_SSL (Kafka ignores it too)",
        );
    }
    if SASL_KEYS.contains(&suffix) {
        return Some(
            "not used: no cluster has `security.protocol` SASL_PLAINTEXT or SASL_SSL (Kafka ignores it too)",
        );
    }
    let k = [suffix, cluster_suffix]
        .into_iter()
        .find(|s| s.starts_with("ssl.") || s.starts_with("sasl."))?;
    Some(match k {
        "ssl.protocol" | "ssl.enabled.protocols" | "ssl.cipher.suites" => {
            "Strait negotiates TLS 1.3 or 1.2 with rustls' default cipher suites; this TLS setting is not configurable"
        }
        "ssl.provider"
        | "ssl.keymanager.algorithm"
        | "ssl.trustmanager.algorithm"
        | "ssl.secure.random.implementation"
        | "ssl.engine.factory.class" => {
            "Java security providers and classes do not apply: Strait uses rustls"
        }
        _ if k.starts_with("ssl.") => {
            "this TLS setting has no equivalent in `[clusters.<name>.security.tls]` (ca_file, cert_file, key_file, \
             server_name, handshake_timeout)"
        }
        _ if k.starts_with("sasl.kerberos.") => KERBEROS,
        "sasl.client.callback.handler.class" => "custom callback handler classes cannot be loaded",
        _ => "this SASL setting has no equivalent in `[clusters.<name>.security.sasl]`",
    })
}

/// A JAAS option value that is one `${…}` reference and nothing else (a secret with
/// literal parts around a reference is not copied: the literal part is secret too).
fn whole_reference(value: &str) -> Option<&str> {
    let inner = value
        .strip_prefix(placeholders::OPEN)?
        .strip_suffix(placeholders::CLOSE)?;
    (!inner.contains([placeholders::OPEN, placeholders::CLOSE])).then_some(value)
}

/// For a store at `location` of type `kind`: the `keytool` step turning a JKS store into
/// the PKCS#12 file `p12` (text to put after "convert it with"; empty for a PKCS#12
/// store), and the PKCS#12 file for openssl to read, quoted for the shell.
fn to_p12(location: &str, kind: &str, p12: &str) -> (String, String) {
    if kind == "PKCS12" {
        return (String::new(), sh(location));
    }
    (
        format!(
            " `keytool -importkeystore -srckeystore {} -destkeystore {} -deststoretype PKCS12` then",
            sh(location),
            sh(p12)
        ),
        sh(p12),
    )
}

/// A path quoted for a POSIX shell when it needs it.
fn sh(path: &str) -> String {
    if !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@=,".contains(c))
    {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// An alias as a file-name part.
fn file_stem(alias: &str) -> String {
    alias
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
