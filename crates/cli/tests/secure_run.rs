//! The product over secured clusters: `strait` replicating from a SASL_SSL + SCRAM-SHA-512
//! source to a mutual-TLS target, through the independent TLS / SASL front ends of
//! `strait_testkit::secure` (each proven with librdkafka in crates/testkit/tests/secure.rs),
//! with librdkafka reading both sides; wrong credentials and certificates failing fast with
//! a clear message and a non-zero exit; and no secret in any output of any command at any
//! log level.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use strait_testkit::rdkafka::{self, ClientConfig, ConsumeOptions, ProduceOptions};
use strait_testkit::secure::{FrontOptions, SaslMechanism, SaslOptions, SecureBroker, TestPki};
use strait_testkit::{DataGen, RecordSpec};

const USER: &str = "replicator";
const PASSWORD: &str = "Sup3r-S3cret-Pw-1";
const WRONG: &str = "Wr0ng-S3cret-Pw-2";

struct Clusters {
    pki: TestPki,
    src: SecureBroker,
    dst: SecureBroker,
}

fn clusters() -> Clusters {
    let pki = TestPki::generate_temp().expect("pki");
    let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512]).user(USER, PASSWORD);
    let src = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl)).expect("source front");
    let dst = SecureBroker::start(FrontOptions::mutual_tls(&pki)).expect("target front");
    Clusters { pki, src, dst }
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

impl Clusters {
    fn rd_src(&self, password: &str) -> ClientConfig {
        ClientConfig::new()
            .set("security.protocol", "SASL_SSL")
            .set("ssl.ca.location", p(&self.pki.ca_cert))
            .set("sasl.mechanism", "SCRAM-SHA-512")
            .set("sasl.username", USER)
            .set("sasl.password", password)
    }

    fn rd_dst(&self) -> ClientConfig {
        ClientConfig::new()
            .set("security.protocol", "SSL")
            .set("ssl.ca.location", p(&self.pki.ca_cert))
            .set("ssl.certificate.location", p(&self.pki.client_cert))
            .set("ssl.key.location", p(&self.pki.client_key))
    }

    /// The config, with the source password from `${SRC_SASL_PASSWORD}` and `src_ca` as
    /// the CA the source is verified against.
    fn config(&self, dir: &Path, src_ca: &Path) -> std::path::PathBuf {
        let text = format!(
            r#"
[clusters.src]
bootstrap_servers = ["{src}"]
request_timeout = "10s"
[clusters.src.security]
protocol = "sasl_ssl"
[clusters.src.security.tls]
ca_file = "{src_ca}"
[clusters.src.security.sasl]
mechanism = "scram-sha-512"
username = "{USER}"
password = "${{SRC_SASL_PASSWORD}}"

[clusters.dst]
bootstrap_servers = ["{dst}"]
request_timeout = "10s"
[clusters.dst.security]
protocol = "ssl"
[clusters.dst.security.tls]
ca_file = "{ca}"
cert_file = "{cert}"
key_file = "{key}"

[[flows]]
source = "src"
target = "dst"
[flows.topics]
include = ["orders"]
[flows.sync]
group_offsets = true

[metrics]
enabled = false
"#,
            src = self.src.bootstrap(),
            dst = self.dst.bootstrap(),
            src_ca = p(src_ca),
            ca = p(&self.pki.ca_cert),
            cert = p(&self.pki.client_cert),
            key = p(&self.pki.client_key),
        );
        let path = dir.join("strait.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }
}

fn strait(args: &[&str], password: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .env_remove("RUST_LOG")
        .env("SRC_SASL_PASSWORD", password)
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

/// Loads `orders` (2 partitions) on the source through its front end and commits group
/// `g` there.
fn load_source(c: &Clusters, n: usize) -> Vec<strait_testkit::TestRecord> {
    let rd = c.rd_src(PASSWORD);
    rdkafka::create_topic_with(&c.src.bootstrap(), "orders", 2, &[], &rd).expect("topic");
    let records = DataGen::new(7).records(n, &RecordSpec::default());
    let delivered = rdkafka::produce(
        &c.src.bootstrap(),
        "orders",
        &records,
        &ProduceOptions {
            client: rd.clone(),
            timeout: Duration::from_secs(30),
            ..ProduceOptions::default()
        },
    )
    .expect("produce");
    assert!(delivered.iter().all(|d| d.error.is_none()));
    rdkafka::commit_group_offsets_with(&c.src.bootstrap(), "g", "orders", &[(0, 17)], &rd)
        .expect("commit");
    records
}

fn read_all(bootstrap: &str, topic: &str, n: usize, rd: &ClientConfig) -> Vec<(i32, Vec<u8>)> {
    let got = rdkafka::consume(
        bootstrap,
        topic,
        &ConsumeOptions {
            client: rd.clone(),
            max_time: Duration::from_secs(30),
            ..ConsumeOptions::count(n)
        },
    )
    .expect("consume");
    let mut v: Vec<(i32, Vec<u8>)> = got
        .into_iter()
        .map(|r| (r.partition, r.value.map(|b| b.to_vec()).unwrap_or_default()))
        .collect();
    v.sort();
    v
}

#[test]
fn run_once_from_sasl_ssl_scram_to_mutual_tls_replicates_everything_and_translates_groups() {
    let c = clusters();
    let dir = tempfile::tempdir().expect("tmp");
    let records = load_source(&c, 300);
    let cfg = c.config(dir.path(), &c.pki.ca_cert);
    let out = strait(&["run", "--once", "-c", &p(&cfg)], PASSWORD);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let source = read_all(
        &c.src.bootstrap(),
        "orders",
        records.len(),
        &c.rd_src(PASSWORD),
    );
    let target = read_all(&c.dst.bootstrap(), "src.orders", records.len(), &c.rd_dst());
    assert_eq!(source.len(), records.len());
    assert!(
        source == target,
        "the target holds exactly the source's records"
    );

    let g = rdkafka::list_group_offsets_with(&c.dst.bootstrap(), "g", &c.rd_dst())
        .expect("target group offsets");
    let p0 = g
        .iter()
        .find(|o| o.topic == "src.orders" && o.partition == 0)
        .map(|o| o.offset);
    assert_eq!(p0, Some(17), "group g translated exactly: {g:?}");
    // Every connection of strait went through the front ends, authenticated.
    assert!(c.src.front.count("auth_ok") >= 2);
    assert_eq!(c.src.front.count("auth_failed"), 0);
    assert!(c.dst.front.count("tls_ok") >= 2);
}

#[test]
fn wrong_password_or_untrusted_ca_fails_fast_with_a_clear_message() {
    let c = clusters();
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = c.config(dir.path(), &c.pki.ca_cert);
    for args in [&["run", "--once", "-c"][..], &["check", "-c"][..]] {
        let mut a = args.to_vec();
        let path = p(&cfg);
        a.push(&path);
        let before = c.src.front.count("auth_failed");
        let out = strait(&a, WRONG);
        let all = text(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {all}");
        assert!(
            all.contains("SCRAM-SHA-512") && all.contains(USER),
            "{args:?} names the mechanism and user: {all}"
        );
        assert!(all.contains("authentication"), "{args:?}: {all}");
        assert!(
            !all.contains(WRONG) && !all.contains(PASSWORD),
            "{args:?}: {all}"
        );
        let tries = c.src.front.count("auth_failed") - before;
        assert!(
            (1..=2).contains(&tries),
            "{args:?}: a wrong password is not retried ({tries} attempts)"
        );
    }
    let cfg = c.config(dir.path(), &c.pki.other_ca_cert);
    let out = strait(&["run", "--once", "-c", &p(&cfg)], PASSWORD);
    let all = text(&out);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("not signed by a trusted CA"), "{all}");
}

/// Every command, every log level, text and JSON logs, success and failure: the password,
/// a wrong password and the client's private key never appear in any output.
#[test]
fn no_secret_in_any_output_of_any_command_at_any_log_level() {
    let c = clusters();
    let dir = tempfile::tempdir().expect("tmp");
    load_source(&c, 20);
    let cfg = c.config(dir.path(), &c.pki.ca_cert);
    let cfg = p(&cfg);
    let key_pem = std::fs::read_to_string(&c.pki.client_key).expect("key");
    let key_lines: Vec<&str> = key_pem
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect();
    assert!(!key_lines.is_empty());
    let leaks = |what: &str, o: &Output| {
        let all = text(o);
        for s in [PASSWORD, WRONG] {
            assert!(!all.contains(s), "{what}: a password leaked:\n{all}");
        }
        for l in &key_lines {
            assert!(!all.contains(l), "{what}: the private key leaked:\n{all}");
        }
        all
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["config", "validate", "-c", &cfg],
        vec!["check", "-c", &cfg],
        vec!["plan", "-c", &cfg],
        vec!["run", "--once", "-c", &cfg],
        vec!["status", "-c", &cfg],
        vec!["status", "--json", "-c", &cfg],
        vec!["offsets", "translate", "-c", &cfg, "--group", "g"],
    ];
    let mut runs = 0;
    for level in ["trace", "debug", "info", "warn"] {
        for format in ["text", "json"] {
            for cmd in &commands {
                let mut args = vec!["--log-level", level, "--log-format", format];
                args.extend(cmd);
                for pw in [PASSWORD, WRONG] {
                    // Slow commands run with the wrong password only at the most verbose level.
                    if pw == WRONG && level != "trace" {
                        continue;
                    }
                    let out = strait(&args, pw);
                    let all = leaks(&format!("{args:?} ({pw:.3}…)"), &out);
                    if level == "trace" && pw == PASSWORD && cmd[0] == "run" {
                        assert!(all.len() > 1000, "trace logging produced output: {all}");
                    }
                    runs += 1;
                }
            }
        }
    }
    assert!(runs >= 60, "{runs} runs");
    // import-mm2 with secrets in the properties file.
    let props = dir.path().join("mm2.properties");
    std::fs::write(
        &props,
        format!(
            "clusters = a, b\na.bootstrap.servers = a:9093\nb.bootstrap.servers = b:9093\n\
             a.security.protocol = SASL_SSL\na.sasl.mechanism = SCRAM-SHA-512\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{USER}\" password=\"{PASSWORD}\";\n\
             a->b.enabled = true\n"
        ),
    )
    .expect("props");
    for level in ["trace", "info"] {
        let out = strait(
            &["--log-level", level, "config", "import-mm2", &p(&props)],
            PASSWORD,
        );
        leaks("import-mm2", &out);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

#[test]
fn check_shows_the_tls_handshake_the_sasl_result_and_authorization() {
    let c = clusters();
    let dir = tempfile::tempdir().expect("tmp");
    load_source(&c, 10);
    let cfg = c.config(dir.path(), &c.pki.ca_cert);
    let out = strait(&["check", "-c", &p(&cfg)], PASSWORD);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("✓ security: SASL_SSL"), "{all}");
    assert!(all.contains("✓ security: SSL"), "{all}");
    assert!(
        all.contains("TLSv1."),
        "the handshake's protocol version: {all}"
    );
    assert!(
        all.contains("expires in"),
        "the certificate's expiry: {all}"
    );
    assert!(
        all.contains("✓ SASL: mechanism SCRAM-SHA-512 accepted, authenticated as \"replicator\""),
        "{all}"
    );
    // The front ends have no authorizer, like a Kafka broker without one.
    assert!(all.contains("authorization"), "{all}");
    assert!(!all.contains(PASSWORD));
}
