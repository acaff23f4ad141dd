//! `[clusters.<name>.security]`: how every connection to a cluster is secured — TLS
//! (server verification, mutual TLS) and SASL (PLAIN, SCRAM, OAUTHBEARER with a token
//! file or OIDC client credentials, AWS MSK IAM). The file's form, the resolved form and
//! its checks ([`resolve`]).
//!
//! Secrets (passwords, client secrets) are [`Secret`]s from the moment they are read:
//! `Debug` shows `<redacted>`, and no problem message quotes them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strait_client::Secret;

mod sasl;

use self::sasl::sasl;
use super::problem::{KeyPath, Problem, TIMEOUT_BOUNDS, duration_out_of_range};
use super::units::HumanDuration;

/// Connection security (`[clusters.<name>.security]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecuritySpec {
    /// Kafka's `security.protocol`.
    pub protocol: SecurityProtocol,
    /// TLS settings (`[clusters.<name>.security.tls]`); with `ssl`/`sasl_ssl` and no table,
    /// the system's CA roots are used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSpec>,
    /// SASL settings (`[clusters.<name>.security.sasl]`); required by `sasl_*` protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl: Option<SaslSpec>,
}

/// Kafka's `security.protocol` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityProtocol {
    /// No TLS, no SASL.
    #[default]
    #[serde(alias = "PLAINTEXT")]
    Plaintext,
    /// TLS.
    #[serde(alias = "SSL")]
    Ssl,
    /// SASL without TLS.
    #[serde(alias = "SASL_PLAINTEXT")]
    SaslPlaintext,
    /// SASL over TLS.
    #[serde(alias = "SASL_SSL")]
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether connections use TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Plaintext => "plaintext",
            Self::Ssl => "ssl",
            Self::SaslPlaintext => "sasl_plaintext",
            Self::SaslSsl => "sasl_ssl",
        })
    }
}

/// TLS settings (PEM files).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSpec {
    /// CA bundle (PEM) used to verify the brokers; unset: the system's roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM), for mutual TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// Client private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC), for mutual TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// Name to verify instead of the broker host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// How long a TLS handshake may take; default 10s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake_timeout: Option<HumanDuration>,
}

/// SASL settings. Which keys apply depends on `mechanism`: `username` + `password` for
/// PLAIN and SCRAM; for OAUTHBEARER either `token_file`, or `token_endpoint_url` +
/// `client_id` + `client_secret` (OIDC client credentials, KIP-768); `region` for AWS MSK
/// IAM. Its `Debug` shows whether a password or client secret is set, never its value.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaslSpec {
    /// The SASL mechanism.
    pub mechanism: SaslMechanism,
    /// User name (PLAIN, SCRAM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Password (PLAIN, SCRAM); write `"${ENV_VAR}"` to keep it out of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// OAUTHBEARER: a file holding the token (a JWT), re-read when the token nears expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// OAUTHBEARER: the OAuth 2.0 token endpoint (`https://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_url: Option<String>,
    /// OAUTHBEARER: the client id sent to the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// OAUTHBEARER: the client secret; write `"${ENV_VAR}"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// OAUTHBEARER: the scope asked of the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// OAUTHBEARER: CA bundle (PEM) for the token endpoint; unset: the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_ca_file: Option<PathBuf>,
    /// OAUTHBEARER: SASL extensions sent with the token (KIP-342), such as Confluent
    /// Cloud's `logicalCluster` and `identityPoolId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, String>,
    /// AWS MSK IAM: the cluster's AWS region, such as `eu-west-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

impl std::fmt::Debug for SaslSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let masked = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("SaslSpec")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &masked(&self.password))
            .field("token_file", &self.token_file)
            .field("token_endpoint_url", &self.token_endpoint_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &masked(&self.client_secret))
            .field("scope", &self.scope)
            .field("token_endpoint_ca_file", &self.token_endpoint_ca_file)
            .field("extensions", &self.extensions.keys().collect::<Vec<_>>())
            .field("region", &self.region)
            .finish()
    }
}

impl SaslSpec {
    /// A spec for `mechanism` with every optional key unset.
    pub fn new(mechanism: SaslMechanism) -> Self {
        SaslSpec {
            mechanism,
            username: None,
            password: None,
            token_file: None,
            token_endpoint_url: None,
            client_id: None,
            client_secret: None,
            scope: None,
            token_endpoint_ca_file: None,
            extensions: BTreeMap::new(),
            region: None,
        }
    }
}

/// SASL mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    /// `PLAIN`.
    #[serde(rename = "plain", alias = "PLAIN")]
    Plain,
    /// `SCRAM-SHA-256`.
    #[serde(rename = "scram-sha-256", alias = "SCRAM-SHA-256")]
    ScramSha256,
    /// `SCRAM-SHA-512`.
    #[serde(rename = "scram-sha-512", alias = "SCRAM-SHA-512")]
    ScramSha512,
    /// `OAUTHBEARER`.
    #[serde(rename = "oauthbearer", alias = "OAUTHBEARER")]
    OAuthBearer,
    /// AWS MSK IAM ("SASL/IAM"): a SigV4-signed token sent as OAUTHBEARER. Needs a strait
    /// built with `--features msk-iam`.
    #[serde(rename = "aws-msk-iam", alias = "AWS_MSK_IAM")]
    AwsMskIam,
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
            Self::AwsMskIam => "AWS_MSK_IAM",
        })
    }
}

/// Connection security, resolved: what every connection to the cluster uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Security {
    /// TLS, or `None` for plaintext TCP.
    pub tls: Option<strait_client::TlsConfig>,
    /// SASL, or `None`.
    pub sasl: Option<Sasl>,
}

/// SASL credentials, resolved. Secrets are [`Secret`]s: `Debug` shows `<redacted>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sasl {
    /// PLAIN.
    Plain {
        /// User name.
        username: String,
        /// Password.
        password: Secret,
    },
    /// SCRAM-SHA-256 / SCRAM-SHA-512.
    Scram {
        /// Which hash.
        hash: strait_client::ScramHash,
        /// User name.
        username: String,
        /// Password.
        password: Secret,
    },
    /// OAUTHBEARER with a token file.
    OAuthTokenFile {
        /// The file.
        path: std::path::PathBuf,
        /// SASL extensions.
        extensions: Vec<(String, String)>,
    },
    /// OAUTHBEARER with OIDC client credentials.
    OAuthOidc {
        /// `https://` token endpoint.
        url: String,
        /// Client id.
        client_id: String,
        /// Client secret.
        client_secret: Secret,
        /// Scope, if any.
        scope: Option<String>,
        /// Trust anchors for the token endpoint.
        ca: strait_client::CaRoots,
        /// SASL extensions.
        extensions: Vec<(String, String)>,
    },
    /// AWS MSK IAM: a SigV4-signed token (credentials from the AWS default chain), sent
    /// as OAUTHBEARER. Connecting needs a strait built with `--features msk-iam`.
    AwsMskIam {
        /// The cluster's AWS region.
        region: String,
    },
}

impl Sasl {
    /// Kafka's mechanism name, as operators configure it: `AWS_MSK_IAM` for MSK IAM (the
    /// name in MSK's client settings), though its SaslHandshake says `OAUTHBEARER`.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::Scram {
                hash: strait_client::ScramHash::Sha256,
                ..
            } => "SCRAM-SHA-256",
            Sasl::Scram { .. } => "SCRAM-SHA-512",
            Sasl::OAuthTokenFile { .. } | Sasl::OAuthOidc { .. } => "OAUTHBEARER",
            Sasl::AwsMskIam { .. } => "AWS_MSK_IAM",
        }
    }

    /// The user (or token source) as shown in `check` and errors: never a secret.
    pub fn user(&self) -> String {
        match self {
            Sasl::Plain { username, .. } | Sasl::Scram { username, .. } => username.clone(),
            Sasl::OAuthTokenFile { path, .. } => format!("token file {}", path.display()),
            Sasl::OAuthOidc { client_id, url, .. } => format!("client id {client_id:?} at {url}"),
            Sasl::AwsMskIam { region } => format!("AWS MSK IAM (region {region})"),
        }
    }
}

impl Security {
    /// Kafka's `security.protocol` name.
    pub fn protocol_name(&self) -> &'static str {
        strait_client::security::protocol_name(self.tls.is_some(), self.sasl.is_some())
    }

    /// The client's security settings (builds OAUTHBEARER token providers).
    pub fn to_client(&self) -> Result<strait_client::Security, strait_client::Error> {
        let sasl = self.sasl.as_ref().map(sasl_config).transpose()?;
        Ok(strait_client::Security {
            tls: self.tls.clone(),
            sasl,
        })
    }
}

/// A SASL mechanism's client settings (an OAUTHBEARER one with its token provider): one
/// arm per mechanism.
fn sasl_config(sasl: &Sasl) -> Result<strait_client::SaslConfig, strait_client::Error> {
    use strait_client::SaslConfig as C;
    use strait_client::security::{FileTokenProvider, OidcTokenProvider};
    match sasl {
        Sasl::Plain { username, password } => Ok(C::Plain {
            username: username.clone(),
            password: password.clone(),
        }),
        Sasl::Scram {
            hash,
            username,
            password,
        } => Ok(C::Scram {
            hash: *hash,
            username: username.clone(),
            password: password.clone(),
        }),
        Sasl::OAuthTokenFile { path, extensions } => Ok(C::OAuthBearer {
            provider: std::sync::Arc::new(FileTokenProvider::new(path)),
            extensions: extensions.clone(),
        }),
        Sasl::OAuthOidc {
            url,
            client_id,
            client_secret,
            scope,
            ca,
            extensions,
        } => Ok(C::OAuthBearer {
            provider: std::sync::Arc::new(OidcTokenProvider::new(
                url,
                client_id.clone(),
                client_secret.clone(),
                scope.clone(),
                ca.clone(),
            )?),
            extensions: extensions.clone(),
        }),
        #[cfg(feature = "msk-iam")]
        Sasl::AwsMskIam { region } => Ok(C::OAuthBearer {
            provider: std::sync::Arc::new(strait_client::security::MskIamTokenProvider::new(
                region.clone(),
            )),
            extensions: Vec::new(),
        }),
        // Validation refuses this mechanism in a build without the feature; a config
        // resolved by hand still gets a clear error.
        #[cfg(not(feature = "msk-iam"))]
        Sasl::AwsMskIam { .. } => Err(strait_client::Error::new(
            strait_client::ErrorKind::InvalidInput(
                "mechanism aws-msk-iam needs a strait built with --features msk-iam".into(),
            ),
        )),
    }
}

/// Checks `spec` (at `at`, a cluster's `security` table: protocol, TLS files, SASL
/// credentials per mechanism); every problem goes to `problems`.
pub fn resolve(spec: &SecuritySpec, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<Security> {
    let before = problems.len();
    let p = spec.protocol;
    if !p.uses_tls() && spec.tls.is_some() {
        problems.push(
            Problem::new(
                at.key("tls"),
                format!("TLS settings are given but protocol is \"{p}\""),
            )
            .expected("protocol = \"ssl\" or \"sasl_ssl\", or no `tls` table"),
        );
    }
    if !p.uses_sasl() && spec.sasl.is_some() {
        problems.push(
            Problem::new(
                at.key("sasl"),
                format!("SASL settings are given but protocol is \"{p}\""),
            )
            .expected("protocol = \"sasl_plaintext\" or \"sasl_ssl\", or no `sasl` table"),
        );
    }
    let tls = if p.uses_tls() {
        Some(tls(
            at.key("tls"),
            spec.tls.as_ref().cloned().unwrap_or_default(),
            problems,
        ))
    } else {
        None
    };
    let sasl = match (p.uses_sasl(), &spec.sasl) {
        (true, Some(s)) => sasl(at.key("sasl"), s, p.uses_tls(), problems),
        (true, None) => {
            problems.push(
                Problem::new(
                    at.key("sasl"),
                    format!("protocol \"{p}\" needs SASL settings"),
                )
                .expected("a `sasl` table with `mechanism` and its credentials"),
            );
            None
        }
        (false, _) => None,
    };
    (problems.len() == before).then_some(Security { tls, sasl })
}

/// The PEM files of `spec` that cannot be opened, each a problem at its key. Not part of
/// [`resolve`], which only looks at the config: the loader asks this of a config that
/// will run ([`super::load`](mod@super::load)), and `config validate --offline` does not.
pub fn unreadable_files(spec: &SecuritySpec, at: &KeyPath) -> Vec<Problem> {
    let none = None;
    let tls = spec.tls.as_ref().filter(|_| spec.protocol.uses_tls());
    let sasl = spec.sasl.as_ref().filter(|_| spec.protocol.uses_sasl());
    let oidc_ca = sasl
        .filter(|s| s.token_endpoint_url.is_some() && s.token_file.is_none())
        .map_or(&none, |s| &s.token_endpoint_ca_file);
    let (ca, cert, key) = tls.map_or((&none, &none, &none), |t| {
        (&t.ca_file, &t.cert_file, &t.key_file)
    });
    [
        (at.key("tls").key("ca_file"), ca),
        (at.key("tls").key("cert_file"), cert),
        (at.key("tls").key("key_file"), key),
        (at.key("sasl").key("token_endpoint_ca_file"), oidc_ca),
    ]
    .into_iter()
    .filter_map(|(at, path)| {
        let path = path.as_ref()?;
        let e = std::fs::File::open(path).err()?;
        Some(
            Problem::new(at, format!("cannot read {}: {e}", path.display()))
                .expected("a readable PEM file"),
        )
    })
    .collect()
}

fn tls(at: KeyPath, spec: TlsSpec, problems: &mut Vec<Problem>) -> strait_client::TlsConfig {
    let client_cert = match (&spec.cert_file, &spec.key_file) {
        (Some(c), Some(k)) => Some(strait_client::ClientCert {
            cert_file: c.clone(),
            key_file: k.clone(),
        }),
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            let missing = if spec.cert_file.is_none() {
                "cert_file"
            } else {
                "key_file"
            };
            problems.push(
                Problem::new(
                    at.key(missing),
                    "mutual TLS needs both a certificate and a key",
                )
                .expected("`cert_file` and `key_file` together, or neither"),
            );
            None
        }
    };
    let handshake_timeout = spec
        .handshake_timeout
        .map(|d| {
            problems.extend(duration_out_of_range(
                at.key("handshake_timeout"),
                d,
                TIMEOUT_BOUNDS,
            ));
            d.0
        })
        .unwrap_or(Duration::from_secs(10));
    strait_client::TlsConfig {
        ca: spec
            .ca_file
            .clone()
            .map(strait_client::CaRoots::PemFile)
            .unwrap_or_default(),
        client_cert,
        server_name: spec.server_name.clone(),
        handshake_timeout,
    }
}

#[cfg(test)]
mod tests;
