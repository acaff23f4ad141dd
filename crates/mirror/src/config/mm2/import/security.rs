//! `security.protocol`, `ssl.*` and `sasl.*` → `[clusters.<name>.security]`.
//!
//! Each key is looked up as `A.<key>`, then as the global `<key>` (MM2's default for every
//! cluster). Secrets are never copied: SASL passwords and OAuth client secrets become
//! `${A_SASL_PASSWORD}` / `${A_SASL_CLIENT_SECRET}`; store and key passwords are dropped,
//! since Strait reads unencrypted PEM files and needs them no more once stores are converted.
//!
//! The TLS steps are here; the SASL steps (mechanism, handler classes, JAAS credentials)
//! are in [`sasl`].

use std::path::PathBuf;

use super::jaas::parse_jaas;
use super::{Props, literal, placeholders};
use crate::config::security::{SaslSpec, SecurityProtocol, TlsSpec};

mod sasl;

const INLINE_PEM: &str = "inline PEM: write it to a file and set ca_file/cert_file/key_file";
const STORE_PASSWORD: &str = "not copied, and not needed: Strait reads unencrypted PEM files, so store and \
     key passwords have no use once the stores are converted (keep those files readable by Strait only)";
const NO_HOSTNAME_CHECK: &str = "host name verification is always on in Strait; set `server_name` if brokers are reached under another name";
const KERBEROS: &str = "Kerberos (GSSAPI) is not supported";
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
        let ca_file = self.trust_store(alias, &stem);
        let (cert_file, key_file) = self.key_store(alias, &stem).unzip();
        self.endpoint_identification(alias);
        let tls = TlsSpec {
            ca_file,
            cert_file,
            key_file,
            ..TlsSpec::default()
        };
        (tls != TlsSpec::default()).then_some(tls)
    }

    /// `ssl.truststore.*`: the CA file (the store itself if PEM, else the PEM file it is to
    /// be converted to, with the steps); the password is reported as not needed.
    fn trust_store(&mut self, alias: &str, stem: &str) -> Option<PathBuf> {
        let location = self.cluster_value(alias, "ssl.truststore.location");
        let kind = self.store_type(alias, "ssl.truststore.type");
        if let Some((k, _)) = self.cluster_value(alias, "ssl.truststore.certificates") {
            self.unmapped(&k, INLINE_PEM);
        }
        let ca_file = location.map(|(k, loc)| {
            let pem = format!("/etc/strait/{stem}-ca.pem");
            match kind.as_str() {
                "PEM" => PathBuf::from(literal(&loc)),
                "JKS" | "PKCS12" => {
                    let (steps, p12) = to_p12(&loc, &kind, &format!("{stem}-truststore.p12"));
                    self.unmapped(
                        &k,
                        format!(
                            "{kind} trust store: Strait reads PEM; convert it with{steps} \
                             `openssl pkcs12 -in {p12} -nokeys -out {pem}`; the TOML's ca_file is {pem}"
                        ),
                    );
                    PathBuf::from(pem)
                }
                other => {
                    self.unmapped(
                        &k,
                        format!(
                            "trust store type {other} cannot be converted here: export its CA certificates as PEM \
                             to {pem} (the TOML's ca_file)"
                        ),
                    );
                    PathBuf::from(pem)
                }
            }
        });
        if let Some((k, _)) = self.cluster_value(alias, "ssl.truststore.password") {
            self.unmapped(&k, STORE_PASSWORD);
        }
        ca_file
    }

    /// `ssl.keystore.*` and `ssl.key.password`: the client certificate and key files; the
    /// passwords are reported as not needed.
    fn key_store(&mut self, alias: &str, stem: &str) -> Option<(PathBuf, PathBuf)> {
        let location = self.cluster_value(alias, "ssl.keystore.location");
        let kind = self.store_type(alias, "ssl.keystore.type");
        let key_password = self.cluster_value(alias, "ssl.key.password");
        for inline in ["ssl.keystore.certificate.chain", "ssl.keystore.key"] {
            if let Some((k, _)) = self.cluster_value(alias, inline) {
                self.unmapped(&k, INLINE_PEM);
            }
        }
        let files = location.map(|(k, loc)| match kind.as_str() {
            "PEM" => self.pem_key_store(alias, stem, &k, &loc, key_password.is_some()),
            _ => self.convert_key_store(stem, &k, &loc, &kind),
        });
        if let Some((k, _)) = self.cluster_value(alias, "ssl.keystore.password") {
            self.unmapped(&k, STORE_PASSWORD);
        }
        if let Some((k, _)) = key_password {
            self.unmapped(&k, STORE_PASSWORD);
        }
        files
    }

    /// A PEM key store at `loc` (key `k`): the certificate and key files, the same file
    /// unless the key is encrypted (then it is to be decrypted, with the step).
    fn pem_key_store(
        &mut self,
        alias: &str,
        stem: &str,
        k: &str,
        loc: &str,
        encrypted: bool,
    ) -> (PathBuf, PathBuf) {
        if encrypted {
            // Kafka's PEM key store holds an encrypted PKCS#8 key when
            // `ssl.key.password` is set; Strait reads unencrypted keys only.
            let key = format!("/etc/strait/{stem}-client.key");
            self.unmapped(
                k,
                format!(
                    "PEM key store with an encrypted key (`ssl.key.password` is set): decrypt the key with \
                     `openssl pkcs8 -in {} -out {key}` (it asks for the key password); the TOML's cert_file \
                     is the key store, its key_file is {key}",
                    sh(loc)
                ),
            );
            return (PathBuf::from(literal(loc)), PathBuf::from(key));
        }
        // Kafka keeps the certificate chain and the key in one PEM file. Strait reads every
        // CERTIFICATE block of cert_file and the (first) private key block of key_file
        // (rustls-pki-types' `PrivateKeyDer::from_pem_slice` skips other blocks), so the
        // same file serves as both.
        let path = literal(loc);
        self.comments.push(format!(
            "clusters.{alias}.security.tls: cert_file and key_file are both the PEM key store {path}; \
             Strait reads the certificate chain and the private key from the same file."
        ));
        (PathBuf::from(&path), PathBuf::from(path))
    }

    /// A JKS, PKCS#12 or other key store at `loc` (key `k`): the PEM certificate and key
    /// files it is to be converted to, with the steps.
    fn convert_key_store(
        &mut self,
        stem: &str,
        k: &str,
        loc: &str,
        kind: &str,
    ) -> (PathBuf, PathBuf) {
        let cert = format!("/etc/strait/{stem}-client.pem");
        let key = format!("/etc/strait/{stem}-client.key");
        if let "JKS" | "PKCS12" = kind {
            let (steps, p12) = to_p12(loc, kind, &format!("{stem}-keystore.p12"));
            self.unmapped(
                k,
                format!(
                    "{kind} key store: Strait reads PEM; convert it with{steps} \
                     `openssl pkcs12 -in {p12} -nokeys -out {cert}` and \
                     `openssl pkcs12 -in {p12} -nocerts -nodes -out {key}`; the TOML's cert_file is {cert}, \
                     its key_file {key}"
                ),
            );
        } else {
            self.unmapped(
                k,
                format!(
                    "key store type {kind} cannot be converted here: export the certificate chain as PEM \
                     to {cert} and the unencrypted private key to {key} (the TOML's cert_file and key_file)"
                ),
            );
        }
        (PathBuf::from(cert), PathBuf::from(key))
    }

    /// `ssl.endpoint.identification.algorithm`: Strait always verifies host names, so an
    /// empty or unknown value is reported.
    fn endpoint_identification(&mut self, alias: &str) {
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
        let keys = self.sasl_keys(alias);
        let parsed = keys.jaas.as_ref().map(|(_, v)| parse_jaas(v));
        let module = match &parsed {
            Some(Ok(j)) => j.module.as_str(),
            _ => "",
        };
        if keys.is_msk_iam(module) {
            return Some(self.msk_iam(alias, &keys));
        }
        let mechanism = self.sasl_mechanism(alias, &keys)?;
        let mut spec = SaslSpec::new(mechanism);
        self.handlers_and_url(&keys, mechanism);
        let Some((jaas_key, _)) = &keys.jaas else {
            self.missing_jaas(alias);
            return Some(spec);
        };
        match &parsed {
            Some(Ok(jaas)) => {
                self.jaas_credentials(alias, jaas_key, jaas, keys.url.as_ref(), &mut spec);
            }
            _ => self.unmapped(
                jaas_key,
                "not a JAAS line Strait can read (`<LoginModule> required key=\"value\" ...;`); \
                 give the credentials in the TOML's sasl table",
            ),
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
