//! Security through Apache Kafka's own listeners: `strait run --once` replicating from
//! SASL_SSL (SCRAM-SHA-256, SCRAM-SHA-512) to mutual TLS and to SASL_PLAINTEXT (PLAIN),
//! with Kafka's StandardAuthorizer on both clusters and Strait's principals given exactly
//! the ACLs docs/security.md ("Permissions") says it needs; `strait check`
//! passing on a good config and naming the failure (wrong password, no client certificate,
//! a principal without ACLs) with a non-zero exit; the password in no output and no log.
//! librdkafka reads both sides (over the PLAINTEXT listener, a super user) at the end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use strait_kafka_scenarios::{Kafka, strait_binary};
use strait_testkit::kafka::{KafkaOptions, KafkaSecurity};
use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestPki};

const USER: &str = "replicator";
const PASSWORD: &str = "Sup3r-S3cret-Pw-1";
const WRONG: &str = "Wr0ng-S3cret-Pw-2";
/// A user that authenticates but was granted nothing.
const OUTSIDER: &str = "outsider";
const OUTSIDER_PASSWORD: &str = "0utsider-S3cret-Pw-3";
/// The principal of the testkit's client certificate on the SSL listener.
const MTLS_PRINCIPAL: &str = "User:CN=strait-client,O=strait-testkit";

struct Clusters {
    pki: TestPki,
    source: Kafka,
    target: Kafka,
}

/// One secured pair for the binary (ACLs granted once); each test uses its own topics.
fn clusters() -> &'static Clusters {
    static CLUSTERS: OnceLock<Clusters> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        let pki = TestPki::generate_temp().expect("pki");
        let options = || {
            KafkaOptions::default()
                .security(
                    KafkaSecurity::new(&pki)
                        .user(USER, PASSWORD)
                        .user(OUTSIDER, OUTSIDER_PASSWORD),
                )
                .authorizer()
        };
        let (source, target) = std::thread::scope(|s| {
            let a = s.spawn(|| Kafka::start_with(options()));
            let b = s.spawn(|| Kafka::start_with(options()));
            (a.join().expect("source"), b.join().expect("target"))
        });
        // The ACLs docs/security.md lists, nothing more. Source: Describe, Read,
        // DescribeConfigs on the topics; Describe on the groups.
        let principal = format!("User:{USER}");
        for topic in ["sec-a", "sec-b", "sec-check"] {
            acl(
                &source,
                &principal,
                &["Describe", "Read", "DescribeConfigs"],
                &["--topic", topic],
            );
        }
        acl(&source, &principal, &["Describe"], &["--group", "*"]);
        // The outsider sees the topic (Kafka hides from Metadata a topic the principal
        // may not Describe) and nothing more.
        acl(
            &source,
            &format!("User:{OUTSIDER}"),
            &["Describe"],
            &["--topic", "sec-check"],
        );
        // Target, for both principals (SASL user and certificate): Describe, Read, Write,
        // DescribeConfigs, AlterConfigs on the replicas; Describe, Read, Write on the state
        // topic; Create and IdempotentWrite on the cluster; Describe, Read on the groups.
        for p in [principal.as_str(), MTLS_PRINCIPAL] {
            acl(
                &target,
                p,
                // Read: Strait reads the replicas back (partition bounds, recovery);
                // without it every run stops with TopicAuthorizationFailed.
                &[
                    "Describe",
                    "Read",
                    "Write",
                    "DescribeConfigs",
                    "AlterConfigs",
                ],
                &["--topic", "src.", "--resource-pattern-type", "prefixed"],
            );
            acl(
                &target,
                p,
                &["Describe", "Read", "Write"],
                &[
                    "--topic",
                    "strait-state.",
                    "--resource-pattern-type",
                    "prefixed",
                ],
            );
            acl(&target, p, &["Create", "IdempotentWrite"], &["--cluster"]);
            acl(&target, p, &["Describe", "Read"], &["--group", "*"]);
        }
        Clusters {
            pki,
            source,
            target,
        }
    })
}

/// Grants `operations` to `principal` on a resource, with Kafka's AclCommand over the
/// PLAINTEXT listener (a super user).
fn acl(kafka: &Kafka, principal: &str, operations: &[&str], resource: &[&str]) {
    let install = strait_testkit::kafka::install::broker().expect("install");
    let mut cmd = Command::new(&install.java);
    cmd.arg("-cp")
        .arg(install.classpath())
        .arg("-Dlog4j2.level=ERROR")
        .arg("org.apache.kafka.tools.AclCommand")
        .args(["--bootstrap-server", &kafka.bootstrap()])
        .args(["--add", "--allow-principal", principal]);
    for op in operations {
        cmd.args(["--operation", op]);
    }
    let out = cmd.args(resource).output().expect("AclCommand");
    assert!(
        out.status.success(),
        "kafka-acls --add {principal} {operations:?} {resource:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// How Strait reaches one side.
#[derive(Clone, Copy)]
enum Side {
    /// SASL_SSL with this SCRAM mechanism, password from `${SASL_PASSWORD}`.
    SaslSsl(&'static str),
    /// SASL_PLAINTEXT with PLAIN, password from `${SASL_PASSWORD}`.
    SaslPlain,
    /// SSL with the client certificate (`cert = false`: without one).
    Mtls { cert: bool },
    /// SASL_SSL SCRAM-SHA-512 as the user without ACLs.
    Outsider,
}

impl Clusters {
    fn cluster_toml(&self, name: &str, kafka: &Kafka, side: Side) -> String {
        let c = kafka.cluster().expect("jar backend");
        let ca = p(&self.pki.ca_cert);
        let (bootstrap, security) = match side {
            Side::SaslSsl(mech) => (
                c.sasl_ssl_bootstrap(),
                format!(
                    "protocol = \"sasl_ssl\"\n[clusters.{name}.security.tls]\nca_file = \"{ca}\"\n\
                     [clusters.{name}.security.sasl]\nmechanism = \"{mech}\"\nusername = \"{USER}\"\n\
                     password = \"${{SASL_PASSWORD}}\"\n"
                ),
            ),
            Side::Outsider => (
                c.sasl_ssl_bootstrap(),
                format!(
                    "protocol = \"sasl_ssl\"\n[clusters.{name}.security.tls]\nca_file = \"{ca}\"\n\
                     [clusters.{name}.security.sasl]\nmechanism = \"scram-sha-512\"\n\
                     username = \"{OUTSIDER}\"\npassword = \"${{OUTSIDER_PASSWORD}}\"\n"
                ),
            ),
            Side::SaslPlain => (
                c.sasl_plaintext_bootstrap(),
                format!(
                    "protocol = \"sasl_plaintext\"\n[clusters.{name}.security.sasl]\n\
                     mechanism = \"plain\"\nusername = \"{USER}\"\npassword = \"${{SASL_PASSWORD}}\"\n"
                ),
            ),
            Side::Mtls { cert } => (
                c.ssl_bootstrap(),
                format!(
                    "protocol = \"ssl\"\n[clusters.{name}.security.tls]\nca_file = \"{ca}\"\n{}",
                    if cert {
                        format!(
                            "cert_file = \"{}\"\nkey_file = \"{}\"\n",
                            p(&self.pki.client_cert),
                            p(&self.pki.client_key)
                        )
                    } else {
                        String::new()
                    }
                ),
            ),
        };
        format!(
            "[clusters.{name}]\nbootstrap_servers = \"{}\"\nconnect_timeout = \"5s\"\n\
             request_timeout = \"10s\"\n[clusters.{name}.security]\n{security}",
            bootstrap.expect("secure listener")
        )
    }

    fn config(&self, dir: &Path, topic: &str, src: Side, dst: Side) -> PathBuf {
        let text = format!(
            "{}{}[[flows]]\nsource = \"src\"\ntarget = \"dst\"\n[flows.topics]\n\
             include = [\"{topic}\"]\n[flows.sync]\ngroup_offsets = true\nheartbeats = false\n\
             checkpoints = false\ntopic_acls = false\n[metrics]\nenabled = false\n",
            self.cluster_toml("src", &self.source, src),
            self.cluster_toml("dst", &self.target, dst),
        );
        let path = dir.join(format!("{topic}.toml"));
        std::fs::write(&path, text).expect("write config");
        path
    }
}

/// Runs the strait binary with the passwords in its environment and debug logging.
fn strait(args: &[&str], password: &str) -> Output {
    Command::new(strait_binary())
        .args(args)
        .env("RUST_LOG", "debug")
        .env("SASL_PASSWORD", password)
        .env("OUTSIDER_PASSWORD", OUTSIDER_PASSWORD)
        .output()
        .expect("run strait")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// No secret of either user anywhere in `out`.
fn assert_no_secret(out: &str) {
    for secret in [PASSWORD, WRONG, OUTSIDER_PASSWORD] {
        assert!(!out.contains(secret), "a password leaked:\n{out}");
    }
}

/// Loads `topic` (2 partitions) on the source and commits group `g-<topic>` at 17 on
/// partition 0.
fn load(c: &Clusters, topic: &str, n: usize) {
    let src = c.source.bootstrap();
    rdkafka::create_topic(&src, topic, 2, &[]).expect("topic");
    let records = DataGen::new(11).records(n, &RecordSpec::default());
    let delivered =
        rdkafka::produce(&src, topic, &records, &ProduceOptions::default()).expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()));
    rdkafka::commit_group_offsets(&src, &format!("g-{topic}"), topic, &[(0, 17)]).expect("commit");
}

/// Per partition, the values in offset order, read with librdkafka.
fn read(bootstrap: &str, topic: &str, n: usize) -> Vec<(i32, i64, Vec<u8>)> {
    let got = rdkafka::consume(bootstrap, topic, &ConsumeOptions::count(n)).expect("consume");
    let mut v: Vec<_> = got
        .into_iter()
        .map(|r| {
            (
                r.partition,
                r.offset,
                r.value.map(|b| b.to_vec()).unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

fn replicate_and_verify(topic: &str, src: Side, dst: Side) {
    let c = clusters();
    load(c, topic, 300);
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = c.config(dir.path(), topic, src, dst);
    let out = strait(&["run", "--once", "-c", &p(&cfg)], PASSWORD);
    let all = text(&out);
    assert_no_secret(&all);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let source = read(&c.source.bootstrap(), topic, 300);
    let target = read(&c.target.bootstrap(), &format!("src.{topic}"), 300);
    assert_eq!(source.len(), 300);
    assert!(
        source == target,
        "the target holds exactly the source's records"
    );
    let g = rdkafka::list_group_offsets(&c.target.bootstrap(), &format!("g-{topic}"))
        .expect("target group offsets");
    let p0 = g
        .iter()
        .find(|o| o.topic == format!("src.{topic}") && o.partition == 0)
        .map(|o| o.offset);
    assert_eq!(p0, Some(17), "group translated exactly: {g:?}\n{all}");
}

#[test]
fn scram_sha_256_source_to_mutual_tls_target_with_the_documented_acls() {
    replicate_and_verify(
        "sec-a",
        Side::SaslSsl("scram-sha-256"),
        Side::Mtls { cert: true },
    );
}

#[test]
fn scram_sha_512_source_to_sasl_plaintext_plain_target_with_the_documented_acls() {
    replicate_and_verify("sec-b", Side::SaslSsl("scram-sha-512"), Side::SaslPlain);
}

#[test]
fn check_passes_a_good_config_and_names_each_failure_without_the_password() {
    let c = clusters();
    let src = c.source.bootstrap();
    rdkafka::create_topic_if_missing(&src, "sec-check", 1, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tmp");

    let good = c.config(
        dir.path(),
        "sec-check",
        Side::SaslSsl("scram-sha-512"),
        Side::Mtls { cert: true },
    );
    let out = strait(&["check", "-c", &p(&good)], PASSWORD);
    let all = text(&out);
    println!("{all}");
    assert_no_secret(&all);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("✓ security: SASL_SSL"), "{all}");
    assert!(all.contains("✓ security: SSL"), "{all}");
    assert!(!all.contains('✗'), "{all}");
    assert!(all.contains("✓ authorized"), "{all}");
    // Create and IdempotentWrite are granted on the target's cluster resource; Kafka hides
    // them from a principal without Describe there, so check must not claim they are not.
    assert!(!all.contains("is not granted on the cluster"), "{all}");

    // A wrong password: SASL fails, named with mechanism and user, never the secret.
    let out = strait(&["check", "-c", &p(&good)], WRONG);
    let all = text(&out);
    assert_no_secret(&all);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("✗ SASL") && all.contains(USER), "{all}");

    // The SSL listener without a client certificate: the handshake is refused.
    let no_cert = dir.path().join("no-cert");
    std::fs::create_dir_all(&no_cert).expect("dir");
    let cfg = c.config(
        &no_cert,
        "sec-check",
        Side::SaslSsl("scram-sha-512"),
        Side::Mtls { cert: false },
    );
    let out = strait(&["check", "-c", &p(&cfg)], PASSWORD);
    let all = text(&out);
    assert_no_secret(&all);
    assert_ne!(out.status.code(), Some(0), "{all}");
    let dst_section = all.split("cluster dst").nth(1).unwrap_or_default();
    assert!(dst_section.contains('✗'), "{all}");

    // A principal without ACLs on the source: check names the missing operations.
    let outsider = dir.path().join("outsider");
    std::fs::create_dir_all(&outsider).expect("dir");
    let cfg = c.config(
        &outsider,
        "sec-check",
        Side::Outsider,
        Side::Mtls { cert: true },
    );
    let out = strait(&["check", "-c", &p(&cfg)], PASSWORD);
    let all = text(&out);
    println!("{all}");
    assert_no_secret(&all);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains(
            "✗ not authorized: Read, DescribeConfigs on 1 of 1 source topic(s): sec-check"
        ) || (all.contains("✗ not authorized")
            && all.contains("Read")
            && all.contains("sec-check")),
        "{all}"
    );
}

#[test]
fn a_wrong_password_stops_run_at_once_with_a_named_error_and_no_secret() {
    let c = clusters();
    rdkafka::create_topic_if_missing(&c.source.bootstrap(), "sec-check", 1, &[]).expect("topic");
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = c.config(
        dir.path(),
        "sec-check",
        Side::SaslSsl("scram-sha-256"),
        Side::Mtls { cert: true },
    );
    let out = strait(&["run", "--once", "-c", &p(&cfg)], WRONG);
    let all = text(&out);
    assert_no_secret(&all);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("SCRAM-SHA-256") || all.contains("scram-sha-256"),
        "{all}"
    );
    assert!(all.contains(USER), "{all}");
}
