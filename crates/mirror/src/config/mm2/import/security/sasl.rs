//! The steps of [`Props::sasl`]: the `sasl.*` keys read, the mechanism chosen (AWS MSK IAM
//! recognised by any of its class names), the callback handler keys reported, and the
//! credentials taken from the `sasl.jaas.config` line.

use std::path::PathBuf;

use super::super::jaas::Jaas;
use super::super::{Props, literal};
use super::{KERBEROS, whole_reference};
use crate::config::security::{SaslMechanism, SaslSpec};

const MSK_IAM: &str = "AWS MSK IAM: mechanism \"aws-msk-iam\"; credentials come from the default \
     AWS chain (environment, profile, web identity, ECS/EC2 metadata), the region from the \
     environment; needs a strait built with --features msk-iam";
const OAUTH_HANDLERS: [&str; 2] = [
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];
const MSK_PACKAGE: &str = "software.amazon.msk.auth.iam.";
const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTH_MODULE: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// The `sasl.*` keys of one cluster: for each, the key it was found under and its value.
pub(super) struct SaslKeys {
    /// `sasl.mechanism`.
    pub mech: Option<(String, String)>,
    /// `sasl.jaas.config`.
    pub jaas: Option<(String, String)>,
    /// `sasl.login.callback.handler.class`.
    pub handler: Option<(String, String)>,
    /// `sasl.client.callback.handler.class` (MSK's docs set
    /// `software.amazon.msk.auth.iam.IAMClientCallbackHandler` here).
    pub client_handler: Option<(String, String)>,
    /// `sasl.oauthbearer.token.endpoint.url`.
    pub url: Option<(String, String)>,
}

impl SaslKeys {
    /// The key `sasl.mechanism` was found under, or the cluster's own if it is missing.
    fn mechanism_key(&self, alias: &str) -> String {
        self.mech
            .as_ref()
            .map_or_else(|| format!("{alias}.sasl.mechanism"), |(k, _)| k.clone())
    }

    /// The mechanism's name, upper-cased; Kafka's default is GSSAPI.
    fn mechanism_name(&self) -> String {
        self.mech
            .as_ref()
            .map_or_else(|| "GSSAPI".to_owned(), |(_, v)| v.to_ascii_uppercase())
    }

    /// The keys that were found, in the order they were looked up.
    fn present(&self) -> Vec<String> {
        [
            &self.mech,
            &self.jaas,
            &self.handler,
            &self.client_handler,
            &self.url,
        ]
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect()
    }

    /// Whether the mechanism, the JAAS login `module` or a handler class names AWS MSK IAM.
    pub fn is_msk_iam(&self, module: &str) -> bool {
        self.mechanism_name() == "AWS_MSK_IAM"
            || module.starts_with(MSK_PACKAGE)
            || [&self.handler, &self.client_handler]
                .into_iter()
                .flatten()
                .any(|(_, h)| h.starts_with(MSK_PACKAGE))
    }
}

impl Props {
    /// Looks up the `sasl.*` keys of cluster `alias`.
    pub(super) fn sasl_keys(&mut self, alias: &str) -> SaslKeys {
        SaslKeys {
            mech: self.cluster_value(alias, "sasl.mechanism"),
            jaas: self.cluster_value(alias, "sasl.jaas.config"),
            handler: self.cluster_value(alias, "sasl.login.callback.handler.class"),
            client_handler: self.cluster_value(alias, "sasl.client.callback.handler.class"),
            url: self.cluster_value(alias, "sasl.oauthbearer.token.endpoint.url"),
        }
    }

    /// The AWS MSK IAM spec, its region an environment variable; every `sasl.*` key is
    /// reported with how MSK IAM works in Strait.
    pub(super) fn msk_iam(&mut self, alias: &str, keys: &SaslKeys) -> SaslSpec {
        for k in &keys.present() {
            self.unmapped(k, MSK_IAM);
        }
        let mut spec = SaslSpec::new(SaslMechanism::AwsMskIam);
        spec.region =
            Some(self.env_placeholder(alias, "AWS_REGION", "AWS region of the MSK cluster"));
        spec
    }

    /// The mechanism `sasl.mechanism` names; `None`, with every `sasl.*` key reported, if
    /// Strait does not support it (Kerberos or unknown).
    pub(super) fn sasl_mechanism(&mut self, alias: &str, keys: &SaslKeys) -> Option<SaslMechanism> {
        let mech_key = keys.mechanism_key(alias);
        let present = keys.present();
        match keys.mechanism_name().as_str() {
            "PLAIN" => Some(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Some(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Some(SaslMechanism::ScramSha512),
            "OAUTHBEARER" => Some(SaslMechanism::OAuthBearer),
            "GSSAPI" => {
                let reason = if keys.mech.is_none() {
                    format!("missing: Kafka's default mechanism is GSSAPI; {KERBEROS}")
                } else {
                    KERBEROS.to_owned()
                };
                self.unmapped(&mech_key, reason);
                for k in &present {
                    self.unmapped(k, KERBEROS);
                }
                None
            }
            _ => {
                self.unmapped(
                    &mech_key,
                    "unknown SASL mechanism; Strait supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER",
                );
                for k in present.iter().filter(|k| **k != mech_key) {
                    self.unmapped(k, "its SASL mechanism is not supported");
                }
                None
            }
        }
    }

    /// Reports callback handler classes Strait cannot load, and a token endpoint URL set
    /// for a mechanism other than OAUTHBEARER.
    pub(super) fn handlers_and_url(&mut self, keys: &SaslKeys, mechanism: SaslMechanism) {
        if let Some((k, h)) = &keys.handler {
            let standard =
                mechanism == SaslMechanism::OAuthBearer && OAUTH_HANDLERS.contains(&h.as_str());
            if !standard {
                self.unmapped(
                    k,
                    "custom login callback handlers cannot be loaded; Strait has its own login for each mechanism",
                );
            }
        }
        if let Some((k, _)) = &keys.client_handler {
            self.unmapped(
                k,
                "custom SASL client callback handlers cannot be loaded; Strait has its own login for \
                 PLAIN, SCRAM-SHA-256/512, OAUTHBEARER and AWS MSK IAM",
            );
        }
        if let Some((k, _)) = keys
            .url
            .as_ref()
            .filter(|_| mechanism != SaslMechanism::OAuthBearer)
        {
            self.unmapped(k, "applies to OAUTHBEARER only");
        }
    }

    /// Notes a missing `sasl.jaas.config`: login files are not read.
    pub(super) fn missing_jaas(&mut self, alias: &str) {
        let jaas_key = format!("{alias}.sasl.jaas.config");
        if !self.map.contains_key(&jaas_key) {
            self.note(
                &jaas_key,
                "",
                "missing: JAAS login files (`java.security.auth.login.config`) are not read; \
                 give the credentials in the TOML's sasl table",
            );
        }
    }

    /// Copies the credentials of the JAAS line at `jaas_key` into `spec` (secrets become
    /// environment variables), and reports on the key what was changed or left out.
    pub(super) fn jaas_credentials(
        &mut self,
        alias: &str,
        jaas_key: &str,
        jaas: &Jaas,
        url: Option<&(String, String)>,
        spec: &mut SaslSpec,
    ) {
        let mut remarks = module_remarks(jaas, spec.mechanism);
        let unknown = if spec.mechanism == SaslMechanism::OAuthBearer {
            self.oauth_options(alias, jaas, url, spec, &mut remarks)
        } else {
            self.user_options(alias, jaas, spec, &mut remarks)
        };
        if !unknown.is_empty() {
            remarks.push(format!("JAAS options not imported: {}", unknown.join(", ")));
        }
        self.used.insert(jaas_key.to_owned());
        for r in remarks {
            self.unmapped(jaas_key, r);
        }
    }

    /// OAUTHBEARER's JAAS options (extensions, client id, secret and scope) and its token
    /// source; returns the options not imported.
    fn oauth_options<'j>(
        &mut self,
        alias: &str,
        jaas: &'j Jaas,
        url: Option<&(String, String)>,
        spec: &mut SaslSpec,
        remarks: &mut Vec<String>,
    ) -> Vec<&'j str> {
        let mut unknown = Vec::new();
        for (name, value) in &jaas.options {
            if let Some(ext) = name.strip_prefix("extension_") {
                spec.extensions.insert(ext.to_owned(), literal(value));
            } else if !["clientId", "clientSecret", "scope"].contains(&name.as_str()) {
                unknown.push(name.as_str());
            }
        }
        match url {
            Some((_, u)) if u.to_ascii_lowercase().starts_with("file:") => {
                token_file(jaas, u, spec, remarks);
            }
            Some((_, u)) => self.oidc_client(alias, jaas, u, spec, remarks),
            None => remarks.push(
                "no `sasl.oauthbearer.token.endpoint.url`: Kafka then makes unsecured development tokens, \
                 which Strait does not; set `token_file` or `token_endpoint_url` in the sasl table"
                    .to_owned(),
            ),
        }
        unknown
    }

    /// The OIDC token endpoint `url` with the JAAS line's client id, secret and scope; the
    /// secret becomes an environment variable unless it is one `${…}` reference.
    fn oidc_client(
        &mut self,
        alias: &str,
        jaas: &Jaas,
        url: &str,
        spec: &mut SaslSpec,
        remarks: &mut Vec<String>,
    ) {
        spec.token_endpoint_url = Some(literal(url));
        spec.client_id = jaas.option("clientId").map(literal);
        spec.scope = jaas.option("scope").map(literal);
        if let Some(reference) = jaas.option("clientSecret").and_then(whole_reference) {
            spec.client_secret = Some(reference.to_owned());
            remarks.push(
                "client id imported; the client secret is the variable its `${…}` reference became"
                    .to_owned(),
            );
        } else if jaas.option("clientSecret").is_some() {
            spec.client_secret =
                Some(self.env_placeholder(alias, "SASL_CLIENT_SECRET", "OAuth client secret"));
            remarks.push(format!(
                "client id imported; the client secret is read from the environment variable {}",
                super::super::env_name(alias, "SASL_CLIENT_SECRET")
            ));
        }
    }

    /// PLAIN's and SCRAM's JAAS options: the username, and the password as an environment
    /// variable unless it is one `${…}` reference; returns the options not imported.
    fn user_options<'j>(
        &mut self,
        alias: &str,
        jaas: &'j Jaas,
        spec: &mut SaslSpec,
        remarks: &mut Vec<String>,
    ) -> Vec<&'j str> {
        let unknown = jaas
            .options
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !["username", "password"].contains(n))
            .collect();
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
                super::super::env_name(alias, "SASL_PASSWORD")
            ));
        }
        unknown
    }
}

/// Remarks on the login module: not the one `mechanism` needs, or not the only one.
fn module_remarks(jaas: &Jaas, mechanism: SaslMechanism) -> Vec<String> {
    let expected = match mechanism {
        SaslMechanism::Plain => PLAIN_MODULE,
        SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => SCRAM_MODULE,
        SaslMechanism::OAuthBearer | SaslMechanism::AwsMskIam => OAUTH_MODULE,
    };
    let mut remarks = Vec::new();
    if jaas.module != expected {
        remarks.push(format!(
            "the login module is not {expected}, which {mechanism} needs; its options were read anyway"
        ));
    }
    if jaas.more_modules {
        remarks.push("only the first login module was read".to_owned());
    }
    remarks
}

/// The token file a `file:` token endpoint URL names (Kafka reads the token from it);
/// client id, secret and scope do not apply and are dropped.
fn token_file(jaas: &Jaas, url: &str, spec: &mut SaslSpec, remarks: &mut Vec<String>) {
    let path = url["file:".len()..].trim_start_matches("//");
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    spec.token_file = Some(PathBuf::from(literal(&path)));
    let client_keys = ["clientId", "clientSecret", "scope"];
    if client_keys.iter().any(|k| jaas.option(k).is_some()) {
        remarks.push(
            "token read from the file of the `file:` token endpoint URL (token_file); clientId, \
             clientSecret and scope do not apply to it and were dropped"
                .to_owned(),
        );
    }
}
