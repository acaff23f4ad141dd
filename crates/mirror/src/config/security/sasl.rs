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
    let m = spec.mechanism;
    // Keys that belong to other mechanisms are mistakes, not harmless extras.
    let user_keys = [
        ("username", spec.username.is_some()),
        ("password", spec.password.is_some()),
    ];
    let oauth_keys = [
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
    ];
    let region_keys = [("region", spec.region.is_some())];
    let foreign: Vec<(&str, bool)> = match m {
        SaslMechanism::OAuthBearer => [&user_keys[..], &region_keys].concat(),
        SaslMechanism::AwsMskIam => [&user_keys[..], &oauth_keys].concat(),
        _ => [&oauth_keys[..], &region_keys].concat(),
    };
    for (k, set) in foreign {
        if set {
            problems.push(
                Problem::new(at.key(k), format!("`{k}` does not apply to mechanism {m}")).expected(
                    match m {
                        SaslMechanism::OAuthBearer => {
                            "`token_file`, or `token_endpoint_url` + `client_id` + `client_secret`"
                        }
                        SaslMechanism::AwsMskIam => {
                            "`region` (credentials come from the AWS default chain)"
                        }
                        _ => "`username` and `password`",
                    },
                ),
            );
        }
    }
    let required = |this: &mut Vec<Problem>, key: &str, v: &Option<String>| -> String {
        match v {
            Some(s) if !s.is_empty() => s.clone(),
            _ => {
                this.push(
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
    };
    let sasl = match m {
        SaslMechanism::AwsMskIam => {
            if !cfg!(feature = "msk-iam") {
                problems.push(
                    Problem::new(
                        at.key("mechanism"),
                        "mechanism aws-msk-iam needs a strait built with --features msk-iam",
                    )
                    .expected("`cargo build --release -p strait --features msk-iam`, or another mechanism"),
                );
            }
            let region = required(problems, "region", &spec.region);
            // What goes into `kafka.<region>.amazonaws.com` and the SigV4 scope:
            // `eu-west-1`, `us-gov-west-1`, `ap-southeast-5`.
            let part_ok = |p: &str| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            };
            let region_ok = region.split('-').count() >= 3 && region.split('-').all(part_ok);
            if !region.is_empty() && !region_ok {
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
        SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
            let username = required(problems, "username", &spec.username);
            let password = Secret::new(required(problems, "password", &spec.password));
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
        SaslMechanism::OAuthBearer => {
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
            match (&spec.token_file, &spec.token_endpoint_url) {
                (Some(path), None) => {
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
                                    format!(
                                        "`{k}` applies to `token_endpoint_url`, not `token_file`"
                                    ),
                                )
                                .expected("either `token_file` or `token_endpoint_url`"),
                            );
                        }
                    }
                    Sasl::OAuthTokenFile {
                        path: path.clone(),
                        extensions,
                    }
                }
                (None, Some(url)) => {
                    if !url.starts_with("https://") {
                        problems.push(
                            Problem::new(
                                at.key("token_endpoint_url"),
                                format!("{url:?} is not an https:// URL"),
                            )
                            .expected(
                                "an https:// URL (the client secret must not travel in clear)",
                            ),
                        );
                    }
                    Sasl::OAuthOidc {
                        url: url.clone(),
                        client_id: required(problems, "client_id", &spec.client_id),
                        client_secret: Secret::new(required(
                            problems,
                            "client_secret",
                            &spec.client_secret,
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
                (Some(_), Some(_)) => {
                    problems.push(
                        Problem::new(
                            at.key("token_file"),
                            "both `token_file` and `token_endpoint_url` are set",
                        )
                        .expected("exactly one token source"),
                    );
                    return None;
                }
                (None, None) => {
                    problems.push(
                        Problem::new(at.clone(), "mechanism OAUTHBEARER needs a token source")
                            .expected("`token_file`, or `token_endpoint_url` + `client_id` + `client_secret`"),
                    );
                    return None;
                }
            }
        }
    };
    (problems.len() == before).then_some(sasl)
}
