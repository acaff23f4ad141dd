//! The `[clusters.<name>.security.sasl]` table resolved: each mechanism's keys, and
//! every key of another mechanism reported as a mistake, not ignored.

use strait_client::Secret;

use super::{Sasl, SaslMechanism, SaslSpec};
use crate::config::problem::{KeyPath, Problem};

/// Resolves `spec` (at key path `at`; `tls`: whether the connection is encrypted), adding
/// every problem found; `None` if there was one.
pub(super) fn sasl(
    at: KeyPath,
    spec: &SaslSpec,
    tls: bool,
    problems: &mut Vec<Problem>,
) -> Option<Sasl> {
    let before = problems.len();
    foreign_keys(&at, spec, problems);
    let sasl = match spec.mechanism {
        SaslMechanism::AwsMskIam => aws_msk_iam(&at, spec, tls, problems),
        SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
            username_password(&at, spec, tls, problems)
        }
        SaslMechanism::OAuthBearer => oauth_bearer(&at, spec, problems)?,
    };
    (problems.len() == before).then_some(sasl)
}

/// The keys of PLAIN and SCRAM, each with whether it is set.
fn user_keys(spec: &SaslSpec) -> [(&'static str, bool); 2] {
    [
        ("username", spec.username.is_some()),
        ("password", spec.password.is_some()),
    ]
}

/// The keys of OAUTHBEARER, each with whether it is set.
fn oauth_keys(spec: &SaslSpec) -> [(&'static str, bool); 7] {
    [
        ("token_file", spec.token_file.is_some()),
        ("token_endpoint_url", spec.token_endpoint_url.is_some()),
        ("client_id", spec.client_id.is_some()),
        ("client_secret", spec.client_secret.is_some()),
        ("scope", spec.scope.is_some()),
        (
            "token_endpoint_ca_file",
            spec.token_endpoint_ca_file.is_some(),
        ),
        ("extensions", !spec.extensions.is_empty()),
    ]
}

/// Reports every set key that belongs to another mechanism: a mistake, not a harmless
/// extra.
fn foreign_keys(at: &KeyPath, spec: &SaslSpec, problems: &mut Vec<Problem>) {
    let m = spec.mechanism;
    let user_keys = user_keys(spec);
    let oauth_keys = oauth_keys(spec);
    let region_keys = [("region", spec.region.is_some())];
    let (foreign, expected): (Vec<(&str, bool)>, &str) = match m {
        SaslMechanism::OAuthBearer => (
            [&user_keys[..], &region_keys].concat(),
            "`token_file`, or `token_endpoint_url` + `client_id` + `client_secret`",
        ),
        SaslMechanism::AwsMskIam => (
            [&user_keys[..], &oauth_keys].concat(),
            "`region` (credentials come from the AWS default chain)",
        ),
        _ => (
            [&oauth_keys[..], &region_keys].concat(),
            "`username` and `password`",
        ),
    };
    for (k, set) in foreign {
        if set {
            problems.push(
                Problem::new(at.key(k), format!("`{k}` does not apply to mechanism {m}"))
                    .expected(expected),
            );
        }
    }
}

/// The value of `key`, which mechanism `m` needs: a problem (and an empty string) if it
/// is missing or empty.
fn required(
    at: &KeyPath,
    m: SaslMechanism,
    key: &str,
    v: &Option<String>,
    problems: &mut Vec<Problem>,
) -> String {
    match v {
        Some(s) if !s.is_empty() => s.clone(),
        _ => {
            problems.push(
                Problem::new(at.key(key), format!("mechanism {m} needs `{key}`")).expected(
                    if key.contains("secret") || key == "password" {
                        "a value; write \"${ENV_VAR}\" to keep it out of the file"
                    } else {
                        "a non-empty string"
                    },
                ),
            );
            String::new()
        }
    }
}

/// AWS MSK IAM: the build must have it, and `region` must be an AWS region name.
fn aws_msk_iam(at: &KeyPath, spec: &SaslSpec, tls: bool, problems: &mut Vec<Problem>) -> Sasl {
    if !cfg!(feature = "msk-iam") {
        problems.push(
            Problem::new(
                at.key("mechanism"),
                "mechanism aws-msk-iam needs a strait built with --features msk-iam",
            )
            .expected("`cargo build --release -p strait --features msk-iam`, or another mechanism"),
        );
    }
    let region = required(at, spec.mechanism, "region", &spec.region, problems);
    if !region.is_empty() && !is_aws_region(&region) {
        problems.push(
            Problem::new(
                at.key("region"),
                format!("{region:?} is not an AWS region name"),
            )
            .expected("a region such as \"eu-west-1\" (the cluster's region)"),
        );
    }
    if !tls {
        tracing::warn!(
            at = %at,
            "AWS MSK IAM without TLS sends a signed token in clear, and MSK's IAM listeners only accept TLS; use protocol = \"sasl_ssl\""
        );
    }
    Sasl::AwsMskIam { region }
}

/// Whether `region` can go into `kafka.<region>.amazonaws.com` and the SigV4 scope:
/// `eu-west-1`, `us-gov-west-1`, `ap-southeast-5`.
fn is_aws_region(region: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    region.split('-').count() >= 3 && region.split('-').all(part_ok)
}

/// PLAIN and SCRAM: `username` and `password`.
fn username_password(
    at: &KeyPath,
    spec: &SaslSpec,
    tls: bool,
    problems: &mut Vec<Problem>,
) -> Sasl {
    let m = spec.mechanism;
    let username = required(at, m, "username", &spec.username, problems);
    let password = Secret::new(required(at, m, "password", &spec.password, problems));
    if m == SaslMechanism::Plain && !tls {
        tracing::warn!(
            at = %at,
            "SASL PLAIN without TLS sends the password in clear; use protocol = \"sasl_ssl\""
        );
    }
    match m {
        SaslMechanism::Plain => Sasl::Plain { username, password },
        SaslMechanism::ScramSha256 => Sasl::Scram {
            hash: strait_client::ScramHash::Sha256,
            username,
            password,
        },
        _ => Sasl::Scram {
            hash: strait_client::ScramHash::Sha512,
            username,
            password,
        },
    }
}

/// OAUTHBEARER: the extensions, and exactly one token source (a file or an OIDC token
/// endpoint); `None` if there is not exactly one.
fn oauth_bearer(at: &KeyPath, spec: &SaslSpec, problems: &mut Vec<Problem>) -> Option<Sasl> {
    let extensions = extensions(at, spec, problems);
    match (&spec.token_file, &spec.token_endpoint_url) {
        (Some(path), None) => {
            endpoint_keys_with_token_file(at, spec, problems);
            Some(Sasl::OAuthTokenFile {
                path: path.clone(),
                extensions,
            })
        }
        (None, Some(url)) => Some(oidc(at, spec, url, extensions, problems)),
        (Some(_), Some(_)) => {
            problems.push(
                Problem::new(
                    at.key("token_file"),
                    "both `token_file` and `token_endpoint_url` are set",
                )
                .expected("exactly one token source"),
            );
            None
        }
        (None, None) => {
            problems.push(
                Problem::new(at.clone(), "mechanism OAUTHBEARER needs a token source").expected(
                    "`token_file`, or `token_endpoint_url` + `client_id` + `client_secret`",
                ),
            );
            None
        }
    }
}

/// The SASL extensions, each name and value checked against RFC 7628 §3.1.
fn extensions(at: &KeyPath, spec: &SaslSpec, problems: &mut Vec<Problem>) -> Vec<(String, String)> {
    let extensions: Vec<(String, String)> = spec
        .extensions
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in &extensions {
        // RFC 7628 §3.1: key = 1*(ALPHA), value = *(VCHAR / SP / HTAB / CR / LF);
        // "auth" is reserved.
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphabetic()) || k == "auth" {
            problems.push(
                Problem::new(at.key("extensions").key(k), "invalid SASL extension name")
                    .expected("letters only, not `auth`"),
            );
        }
        if v.contains('\x01') {
            problems.push(Problem::new(
                at.key("extensions").key(k),
                "SASL extension values must not contain \\x01",
            ));
        }
    }
    extensions
}

/// Reports every token endpoint key set beside `token_file`, which does not use them.
fn endpoint_keys_with_token_file(at: &KeyPath, spec: &SaslSpec, problems: &mut Vec<Problem>) {
    let oauth_keys = oauth_keys(spec);
    for k in [
        "client_id",
        "client_secret",
        "scope",
        "token_endpoint_ca_file",
    ] {
        let set = oauth_keys.iter().any(|(n, s)| *n == k && *s);
        if set {
            problems.push(
                Problem::new(
                    at.key(k),
                    format!("`{k}` applies to `token_endpoint_url`, not `token_file`"),
                )
                .expected("either `token_file` or `token_endpoint_url`"),
            );
        }
    }
}

/// OIDC client credentials: an https:// token endpoint, `client_id` and `client_secret`.
fn oidc(
    at: &KeyPath,
    spec: &SaslSpec,
    url: &str,
    extensions: Vec<(String, String)>,
    problems: &mut Vec<Problem>,
) -> Sasl {
    if !url.starts_with("https://") {
        problems.push(
            Problem::new(
                at.key("token_endpoint_url"),
                format!("{url:?} is not an https:// URL"),
            )
            .expected("an https:// URL (the client secret must not travel in clear)"),
        );
    }
    let m = spec.mechanism;
    Sasl::OAuthOidc {
        url: url.to_owned(),
        client_id: required(at, m, "client_id", &spec.client_id, problems),
        client_secret: Secret::new(required(
            at,
            m,
            "client_secret",
            &spec.client_secret,
            problems,
        )),
        scope: spec.scope.clone(),
        ca: spec
            .token_endpoint_ca_file
            .clone()
            .map(strait_client::CaRoots::PemFile)
            .unwrap_or_default(),
        extensions,
    }
}
