//! A Strimzi `KafkaMirrorMaker2` resource (`kafka.strimzi.io/v1beta2`) → `mm2.properties`
//! entries.
//!
//! - `spec.clusters[]` (and the newer `spec.target` / `spec.mirrors[].source`): `alias`,
//!   `bootstrapServers`, `tls.trustedCertificates`, `authentication` (`tls`,
//!   `scram-sha-256`, `scram-sha-512`, `plain`, `oauth`) and `config` → `A.*` keys;
//! - `spec.mirrors[]`: `sourceCluster` → `targetCluster`, `topicsPattern`,
//!   `topicsExcludePattern` (`topicsBlacklistPattern`), `groupsPattern`,
//!   `groupsExcludePattern` (`groupsBlacklistPattern`), and the `config` of
//!   `sourceConnector`, `checkpointConnector` and `heartbeatConnector` → `S->T.*` keys.
//!
//! Credentials Strimzi reads from Kubernetes Secrets become `${VAR}` references whose
//! export command names the Secret and its key (`kubectl get secret …`); certificates
//! become files made from the Secret.

use serde::Deserialize;
use serde_norway::Value;

use super::{ImportError, Present, Rewritten, line_of};

/// Keys of a `spec.clusters[]` entry this module reads.
const CLUSTER_KEYS: [&str; 5] = [
    "alias",
    "bootstrapServers",
    "tls",
    "authentication",
    "config",
];

/// Rewrites a `KafkaMirrorMaker2` resource as MM2 properties.
pub(in super::super) fn rewrite(text: &str) -> Result<Rewritten, ImportError> {
    let resource = resource(text)?;
    let Some(spec) = resource.get("spec").filter(|s| s.is_mapping()) else {
        return Err(ImportError::UnsupportedForm(
            "this KafkaMirrorMaker2 has no `spec`".to_owned(),
        ));
    };
    let mut out = Rewritten::new();
    let target_alias = spec
        .get("target")
        .and_then(|t| t.get("alias"))
        .or_else(|| spec.get("connectCluster"))
        .map(string);
    let mirrors: Vec<&Value> = spec
        .get("mirrors")
        .and_then(Value::as_sequence)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let clusters = clusters(&mut out, text, spec, &mirrors)?;
    out.set_default("clusters".to_owned(), clusters.join(", "));

    for m in mirrors {
        let source = m
            .get("sourceCluster")
            .or_else(|| m.get("source").and_then(|s| s.get("alias")))
            .map(string);
        let target = m
            .get("targetCluster")
            .map(string)
            .or_else(|| target_alias.clone());
        let (Some(s), Some(t)) = (source, target) else {
            out.notes.push((
                "spec.mirrors".to_owned(),
                "a mirror without a source or target cluster was skipped".to_owned(),
            ));
            continue;
        };
        mirror(&mut out, text, &s, &t, m);
    }
    note_deployment(&mut out, spec);
    Ok(out)
}

/// The first `kind: KafkaMirrorMaker2` document of `text`.
fn resource(text: &str) -> Result<Value, ImportError> {
    for doc in serde_norway::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| ImportError::Yaml(yaml_error(&e)))?;
        if v.get("kind").and_then(Value::as_str) == Some("KafkaMirrorMaker2") {
            return Ok(v);
        }
    }
    Err(ImportError::UnsupportedForm(
        "no `kind: KafkaMirrorMaker2` document in this YAML".to_owned(),
    ))
}

/// Every cluster of `spec` (`spec.clusters`, `spec.target`, and the `source` of each of
/// `mirrors`) into `out`, once per alias; their aliases. An error when none has one.
fn clusters(
    out: &mut Rewritten,
    text: &str,
    spec: &Value,
    mirrors: &[&Value],
) -> Result<Vec<String>, ImportError> {
    let mut clusters: Vec<String> = Vec::new();
    let mut cluster_specs: Vec<&Value> = spec
        .get("clusters")
        .and_then(Value::as_sequence)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    cluster_specs.extend(spec.get("target"));
    cluster_specs.extend(mirrors.iter().filter_map(|m| m.get("source")));
    for c in cluster_specs {
        let Some(alias) = c.get("alias").map(string).filter(|a| !a.is_empty()) else {
            out.notes.push((
                "spec.clusters".to_owned(),
                "a cluster without `alias` was skipped".to_owned(),
            ));
            continue;
        };
        if clusters.contains(&alias) {
            continue;
        }
        cluster(out, text, &alias, c);
        clusters.push(alias);
    }
    if clusters.is_empty() {
        return Err(ImportError::UnsupportedForm(
            "this KafkaMirrorMaker2 has no cluster with an `alias` (`spec.clusters`)".to_owned(),
        ));
    }
    Ok(clusters)
}

/// A note in `out` on the keys of `spec` that set up the MM2 pods, not what they mirror.
fn note_deployment(out: &mut Rewritten, spec: &Value) {
    let deployment: Vec<&str> = spec
        .as_mapping()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(Value::as_str)
        .filter(|k| !["clusters", "mirrors", "target", "connectCluster"].contains(k))
        .collect();
    if !deployment.is_empty() {
        out.notes.push((
            format!("spec.{{{}}}", deployment.join(", ")),
            "Kubernetes deployment settings of the MM2 pods (replicas, version, resources, logging, \
             template, …): not part of a Strait config; one Strait process runs every flow, and \
             `[flows.scale_out]` shares a flow between processes"
                .to_owned(),
        ));
    }
}

/// One `spec.clusters[]` entry → `A.*` keys.
fn cluster(out: &mut Rewritten, text: &str, alias: &str, c: &Value) {
    let key = |k: &str| format!("{alias}.{k}");
    if let Some(b) = c.get("bootstrapServers") {
        out.set(
            key("bootstrap.servers"),
            string(b),
            line_of(text, "bootstrapServers"),
        );
    }
    let tls = c.get("tls").filter(|t| !t.is_null());
    if let Some(tls) = tls {
        trusted_certificates(out, text, alias, tls);
    }
    let auth = c.get("authentication").filter(|a| a.is_mapping());
    let sasl = auth.is_some_and(|a| a.get("type").and_then(Value::as_str) != Some("tls"));
    let protocol = match (tls.is_some(), sasl) {
        (true, true) => "SASL_SSL",
        (true, false) => "SSL",
        (false, true) => "SASL_PLAINTEXT",
        (false, false) => "PLAINTEXT",
    };
    out.set(key("security.protocol"), protocol.to_owned(), 0);
    if let Some(a) = auth {
        authentication(out, text, alias, a);
    }
    if let Some(config) = c.get("config").and_then(Value::as_mapping) {
        for (k, v) in config {
            let k = string(k);
            out.set(key(&k), string(v), line_of(text, &k));
        }
    }
    for k in unread(c, &CLUSTER_KEYS) {
        out.notes.push((
            format!("spec.clusters[{alias}].{k}"),
            "not converted: Strait's cluster table has bootstrap servers, TLS and SASL settings"
                .to_owned(),
        ));
    }
}

/// `tls.trustedCertificates` → a PEM trust store made from the Secret(s).
fn trusted_certificates(out: &mut Rewritten, text: &str, alias: &str, tls: &Value) {
    let certs: Vec<(String, String)> = tls
        .get("trustedCertificates")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let secret = c.get("secretName").map(string)?;
            let key = c
                .get("certificate")
                .or_else(|| c.get("pattern"))
                .map(string)?;
            Some((secret, key))
        })
        .collect();
    let Some((secret, _)) = certs.first() else {
        // `tls: {}`: TLS with the system's CA roots.
        return;
    };
    let keys: Vec<&str> = certs
        .iter()
        .filter(|(s, _)| s == secret)
        .map(|(_, k)| k.as_str())
        .collect();
    out.set(format!("{alias}.ssl.truststore.type"), "PEM".to_owned(), 0);
    out.set(
        format!("{alias}.ssl.truststore.location"),
        format!("${{k8s-secret-file:{secret}:{}}}", keys.join("+")),
        line_of(text, "trustedCertificates"),
    );
    out.comments.push(format!(
        "clusters.{alias}.security.tls.ca_file: the certificate(s) {} of Kubernetes Secret {secret}, \
         written to one PEM file.",
        keys.join(", ")
    ));
    if certs.iter().any(|(s, _)| s != secret)
        || tls.get("trustedCertificates").is_some_and(|t| {
            t.as_sequence()
                .is_some_and(|s| s.iter().any(|c| c.get("pattern").is_some()))
        })
    {
        out.notes.push((
            format!("spec.clusters[{alias}].tls.trustedCertificates"),
            "Strait reads one CA bundle: certificates of other Secrets, and `pattern` entries, are not in \
             the generated file; append them to it"
                .to_owned(),
        ));
    }
}

/// `authentication` → the SASL or client-certificate keys of cluster `alias`.
fn authentication(out: &mut Rewritten, text: &str, alias: &str, a: &Value) {
    let kind = a.get("type").map(string).unwrap_or_default();
    let line = line_of(text, "authentication");
    let read: &[&str] = match kind.as_str() {
        "tls" => {
            client_certificate(out, alias, a, line);
            &["type", "certificateAndKey"]
        }
        "scram-sha-256" | "scram-sha-512" | "plain" => {
            username_password(out, alias, &kind, a, line);
            &["type", "username", "passwordSecret"]
        }
        "oauth" => {
            oauth_client(out, alias, a, line);
            &[
                "type",
                "clientId",
                "clientSecret",
                "tokenEndpointUri",
                "scope",
            ]
        }
        other => {
            out.notes.push((
                format!("spec.clusters[{alias}].authentication"),
                format!(
                    "authentication type `{other}` is not converted; Strait supports client certificates \
                     (`tls`), PLAIN, SCRAM-SHA-256/512, OAUTHBEARER (client credentials) and AWS MSK IAM"
                ),
            ));
            return;
        }
    };
    let rest = unread(a, read);
    if !rest.is_empty() {
        out.notes.push((
            format!("spec.clusters[{alias}].authentication"),
            format!(
                "not converted: {} (Strait's sasl table has username/password, client id/secret, scope, \
                 token endpoint, token file)",
                rest.join(", ")
            ),
        ));
    }
}

/// A reference to key `field` of the Kubernetes Secret `v` names (`secretName`).
fn k8s_secret(v: Option<&Value>, field: &str) -> Option<String> {
    let v = v?;
    Some(format!(
        "${{k8s-secret:{}:{}}}",
        v.get("secretName").map(string)?,
        v.get(field).map(string)?
    ))
}

/// `type: tls`: the client certificate and key of a Secret, as one PEM key store.
fn client_certificate(out: &mut Rewritten, alias: &str, a: &Value, line: usize) {
    let Some(ck) = a.get("certificateAndKey") else {
        return;
    };
    let (s, c, k) = (
        ck.get("secretName").map(string).unwrap_or_default(),
        ck.get("certificate").map(string).unwrap_or_default(),
        ck.get("key").map(string).unwrap_or_default(),
    );
    out.set(format!("{alias}.ssl.keystore.type"), "PEM".to_owned(), 0);
    out.set(
        format!("{alias}.ssl.keystore.location"),
        format!("${{k8s-secret-file:{s}:{c}+{k}}}"),
        line,
    );
    out.comments.push(format!(
        "clusters.{alias}.security.tls cert_file/key_file: certificate {c} and key {k} of \
         Kubernetes Secret {s}, written to one PEM file."
    ));
}

/// `type: plain` or `scram-sha-*`: the mechanism, and a JAAS line with the username and
/// the password Secret.
fn username_password(out: &mut Rewritten, alias: &str, kind: &str, a: &Value, line: usize) {
    let (mechanism, module) = match kind {
        "plain" => (
            "PLAIN",
            "org.apache.kafka.common.security.plain.PlainLoginModule",
        ),
        "scram-sha-256" => (
            "SCRAM-SHA-256",
            "org.apache.kafka.common.security.scram.ScramLoginModule",
        ),
        _ => (
            "SCRAM-SHA-512",
            "org.apache.kafka.common.security.scram.ScramLoginModule",
        ),
    };
    out.set(
        format!("{alias}.sasl.mechanism"),
        mechanism.to_owned(),
        line,
    );
    let username = a.get("username").map(string).unwrap_or_default();
    let password = k8s_secret(a.get("passwordSecret"), "password").unwrap_or_default();
    out.set(
        format!("{alias}.sasl.jaas.config"),
        format!(
            "{module} required username=\"{}\" password=\"{password}\";",
            jaas(&username)
        ),
        line,
    );
    if let Some(s) = a.get("passwordSecret") {
        out.comments.push(format!(
            "clusters.{alias}.security.sasl.password: key {} of Kubernetes Secret {}.",
            s.get("password").map(string).unwrap_or_default(),
            s.get("secretName").map(string).unwrap_or_default()
        ));
    }
}

/// `type: oauth`: OAUTHBEARER with the token endpoint, and a JAAS line with the client
/// id, the client secret Secret and the scope.
fn oauth_client(out: &mut Rewritten, alias: &str, a: &Value, line: usize) {
    out.set(
        format!("{alias}.sasl.mechanism"),
        "OAUTHBEARER".to_owned(),
        line,
    );
    if let Some(uri) = a.get("tokenEndpointUri") {
        out.set(
            format!("{alias}.sasl.oauthbearer.token.endpoint.url"),
            string(uri),
            line,
        );
    }
    let mut options = Vec::new();
    if let Some(id) = a.get("clientId") {
        options.push(format!("clientId=\"{}\"", jaas(&string(id))));
    }
    if let Some(s) = k8s_secret(a.get("clientSecret"), "key") {
        options.push(format!("clientSecret=\"{s}\""));
    }
    if let Some(scope) = a.get("scope") {
        options.push(format!("scope=\"{}\"", jaas(&string(scope))));
    }
    out.set(
        format!("{alias}.sasl.jaas.config"),
        format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {};",
            options.join(" ")
        ),
        line,
    );
}

/// One `spec.mirrors[]` entry → `S->T.*` keys.
fn mirror(out: &mut Rewritten, text: &str, s: &str, t: &str, m: &Value) {
    let flow = |k: &str| format!("{s}->{t}.{k}");
    let mut present = Present::default();
    // Heartbeat, checkpoint, then source: the source connector's value of a shared key wins.
    for (field, slot) in [
        ("heartbeatConnector", &mut present.heartbeat),
        ("checkpointConnector", &mut present.checkpoint),
        ("sourceConnector", &mut present.source),
    ] {
        let Some(c) = m.get(field).filter(|c| !c.is_null()) else {
            continue;
        };
        *slot = true;
        if let Some(n) = c.get("tasksMax") {
            out.set(flow("tasks.max"), string(n), line_of(text, "tasksMax"));
        }
        if let Some(config) = c.get("config").and_then(Value::as_mapping) {
            for (k, v) in config {
                let k = string(k);
                out.set(flow(&k), string(v), line_of(text, &k));
            }
        }
    }
    for (field, key) in [
        ("topicsPattern", "topics"),
        ("topicsBlacklistPattern", "topics.exclude"),
        ("topicsExcludePattern", "topics.exclude"),
        ("groupsPattern", "groups"),
        ("groupsBlacklistPattern", "groups.exclude"),
        ("groupsExcludePattern", "groups.exclude"),
    ] {
        if let Some(v) = m.get(field) {
            out.set(flow(key), string(v), line_of(text, field));
        }
    }
    out.connectors(s, t, present);
}

/// The keys of mapping `v` not in `read`.
fn unread<'v>(v: &'v Value, read: &[&str]) -> Vec<&'v str> {
    v.as_mapping()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(Value::as_str)
        .filter(|k| !read.contains(k))
        .collect()
}

/// A scalar as a properties value; a sequence as a comma-separated list.
fn string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        Value::Sequence(items) => items.iter().map(string).collect::<Vec<_>>().join(","),
        Value::Mapping(_) | Value::Tagged(_) => String::new(),
    }
}

/// A value inside a JAAS `"…"` string.
fn jaas(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A YAML syntax error without any quoted text (a value may be a secret).
fn yaml_error(e: &serde_norway::Error) -> String {
    let message = e.to_string();
    if message.contains(['"', '\'', '`']) {
        match e.location() {
            Some(l) => format!("syntax error at line {} column {}", l.line(), l.column()),
            None => "syntax error".to_owned(),
        }
    } else {
        message
    }
}
