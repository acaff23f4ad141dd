//! The text of a KRaft node's `server.properties` and `log4j2.properties`: pure functions of
//! the cluster's layout, unit-tested without a JVM.
//!
//! Rules:
//! - Every node is broker and controller (combined mode); the voters are every node.
//! - Brokers talk to each other and to the controllers over PLAINTEXT listeners
//!   (`PLAINTEXT`, `CONTROLLER`), whose principal is `User:ANONYMOUS`.
//! - With security, three more listeners: `SASL_SSL` (SCRAM-SHA-256/512 and PLAIN),
//!   `SASL_PLAINTEXT` (PLAIN and SCRAM) and `SSL` (a client certificate is required).
//! - With the authorizer, `StandardAuthorizer` decides; the super users are `User:admin`
//!   and `User:ANONYMOUS` (the tests' own PLAINTEXT setup and the inter-node traffic), so
//!   every other principal needs ACLs, as on a production cluster.
//! - Internal topics get as many replicas as there are nodes (at most 3).
//! - Nothing is deleted by retention (`log.retention.ms=-1`): test data carries fixed
//!   timestamps from 2023, which a 7-day retention would delete within a minute.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The ports of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePorts {
    /// PLAINTEXT clients and inter-broker traffic.
    pub plaintext: u16,
    /// The KRaft controller listener.
    pub controller: u16,
    /// SASL_SSL, SASL_PLAINTEXT and SSL (mutual TLS), when the cluster has security.
    pub secure: Option<SecurePorts>,
}

/// The ports of a node's secure listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurePorts {
    /// SASL over TLS.
    pub sasl_ssl: u16,
    /// SASL over plain TCP.
    pub sasl_plaintext: u16,
    /// TLS with a required client certificate.
    pub ssl: u16,
}

/// The PEM files a secure node serves with.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The server's private key followed by its certificate chain (Kafka's PEM keystore).
    pub keystore: PathBuf,
    /// The CA that signs both the server's and the clients' certificates.
    pub truststore: PathBuf,
}

/// What one node's `server.properties` is made from.
#[derive(Debug)]
pub struct NodeLayout<'a> {
    /// This node's id (1-based).
    pub node_id: usize,
    /// Every node's ports, in node-id order; `ports[node_id - 1]` is this node's.
    pub ports: &'a [NodePorts],
    /// The log directory.
    pub log_dir: &'a Path,
    /// PEM files, when the cluster has secure listeners.
    pub tls: Option<&'a TlsFiles>,
    /// `(name, password)` users accepted by PLAIN (SCRAM users are created at format time).
    pub users: &'a [(String, String)],
    /// Whether the StandardAuthorizer is on.
    pub authorizer: bool,
    /// Extra `key=value` lines, after (so overriding) the defaults.
    pub extra: &'a [(String, String)],
}

/// The super users when the authorizer is on.
pub const SUPER_USERS: &str = "User:admin;User:ANONYMOUS";

/// `server.properties` for one node.
pub fn server_properties(layout: &NodeLayout<'_>) -> String {
    let me = layout.ports[layout.node_id - 1];
    let voters: Vec<String> = layout
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{}", i + 1, p.controller))
        .collect();
    let replicas = layout.ports.len().min(3);
    let min_isr = if replicas >= 3 { 2 } else { 1 };
    let mut listeners = vec![
        format!("PLAINTEXT://127.0.0.1:{}", me.plaintext),
        format!("CONTROLLER://127.0.0.1:{}", me.controller),
    ];
    let mut advertised = vec![format!("PLAINTEXT://127.0.0.1:{}", me.plaintext)];
    let mut protocols = vec!["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"];
    if let Some(s) = me.secure {
        for (name, port) in [
            ("SASL_SSL", s.sasl_ssl),
            ("SASL_PLAINTEXT", s.sasl_plaintext),
            ("SSL", s.ssl),
        ] {
            listeners.push(format!("{name}://127.0.0.1:{port}"));
            advertised.push(format!("{name}://127.0.0.1:{port}"));
        }
        protocols.extend([
            "SASL_SSL:SASL_SSL",
            "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "SSL:SSL",
        ]);
    }
    let mut out = String::new();
    let mut line = |k: &str, v: &str| {
        let _ = writeln!(out, "{k}={}", escape(v));
    };
    line("process.roles", "broker,controller");
    line("node.id", &layout.node_id.to_string());
    line("controller.quorum.voters", &voters.join(","));
    line("listeners", &listeners.join(","));
    line("advertised.listeners", &advertised.join(","));
    line("listener.security.protocol.map", &protocols.join(","));
    line("controller.listener.names", "CONTROLLER");
    line("inter.broker.listener.name", "PLAINTEXT");
    line("log.dirs", &layout.log_dir.display().to_string());
    for key in [
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "share.coordinator.state.topic.replication.factor",
        "default.replication.factor",
    ] {
        line(key, &replicas.to_string());
    }
    for key in [
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.min.isr",
    ] {
        line(key, &min_isr.to_string());
    }
    // Few partitions for the internal topics: each one costs a JVM on 2 cores time at start.
    line("offsets.topic.num.partitions", "5");
    line("transaction.state.log.num.partitions", "5");
    line("num.partitions", "1");
    line("log.retention.ms", "-1");
    // Groups form at once; only Strait and the tests create topics.
    line("group.initial.rebalance.delay.ms", "0");
    line("auto.create.topics.enable", "false");
    // Small test clusters: less background work, quicker shutdown.
    line("num.network.threads", "2");
    line("num.io.threads", "4");
    line("log.cleaner.threads", "1");
    line("log.cleaner.backoff.ms", "1000");
    line("controlled.shutdown.enable", "true");
    line("controller.quorum.election.timeout.ms", "1000");
    line("controller.quorum.fetch.timeout.ms", "2000");
    line("broker.session.timeout.ms", "6000");
    line("broker.heartbeat.interval.ms", "500");
    if let (Some(tls), Some(_)) = (layout.tls, me.secure) {
        line("ssl.keystore.type", "PEM");
        line("ssl.keystore.location", &tls.keystore.display().to_string());
        line("ssl.truststore.type", "PEM");
        line(
            "ssl.truststore.location",
            &tls.truststore.display().to_string(),
        );
        line("listener.name.ssl.ssl.client.auth", "required");
        line(
            "sasl.enabled.mechanisms",
            "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        );
        let plain = plain_jaas(layout.users);
        for listener in ["sasl_ssl", "sasl_plaintext"] {
            for mech in ["scram-sha-256", "scram-sha-512"] {
                line(
                    &format!("listener.name.{listener}.{mech}.sasl.jaas.config"),
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                );
            }
            line(
                &format!("listener.name.{listener}.plain.sasl.jaas.config"),
                &plain,
            );
        }
    }
    if layout.authorizer {
        line(
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        );
        line("super.users", SUPER_USERS);
        line("allow.everyone.if.no.acl.found", "false");
    }
    for (k, v) in layout.extra {
        line(k, v);
    }
    out
}

/// PLAIN's JAAS line: one `user_<name>="<password>"` option per user.
fn plain_jaas(users: &[(String, String)]) -> String {
    let mut s = String::from("org.apache.kafka.common.security.plain.PlainLoginModule required");
    for (name, password) in users {
        let _ = write!(s, " user_{name}=\"{}\"", password.replace('"', "\\\""));
    }
    s.push(';');
    s
}

/// A value as a `.properties` file reads it back: backslashes doubled, line breaks escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// `--add-scram` arguments for StorageTool: each user under both SCRAM mechanisms.
pub fn scram_format_args(users: &[(String, String)]) -> Vec<String> {
    let mut args = Vec::new();
    for (name, password) in users {
        for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            args.push("--add-scram".to_owned());
            args.push(format!("{mech}=[name={name},password={password}]"));
        }
    }
    args
}

/// A log4j2 configuration writing everything at INFO (Kafka's request logs at WARN) to `file`.
pub fn log4j2_properties(file: &Path) -> String {
    format!(
        "status = error\n\
         appender.file.type = File\n\
         appender.file.name = FILE\n\
         appender.file.fileName = {}\n\
         appender.file.append = true\n\
         appender.file.layout.type = PatternLayout\n\
         appender.file.layout.pattern = [%d] %p %m (%c)%n\n\
         rootLogger.level = INFO\n\
         rootLogger.appenderRef.file.ref = FILE\n\
         logger.request.name = kafka.request.logger\n\
         logger.request.level = WARN\n\
         logger.kafka.name = org.apache.kafka.clients\n\
         logger.kafka.level = WARN\n",
        file.display()
    )
}

#[cfg(test)]
mod tests;
