//! The `strait` binary, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::command::{text, write};

fn strait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("STRAIT_DEMO_SOURCE")
        .env_remove("STRAIT_DEMO_TARGET")
        .output()
        .expect("run strait")
}

fn examples(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn import_mm2_prints_toml_and_lists_unmapped_keys() {
    let out = strait(&["config", "import-mm2", &examples("mm2.properties")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("[clusters.primary]") && stdout.contains("[[flows]]"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("were not converted"), "{stderr}");
    assert!(
        stderr.contains("tasks.max = 8") && stderr.contains("no Connect tasks"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("needs editing"),
        "the example converts to a valid config: {stderr}"
    );
}

#[test]
fn import_mm2_output_file_validates() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("strait.toml");
    let out = strait(&[
        "config",
        "import-mm2",
        &examples("mm2.properties"),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "with -o nothing goes to stdout");
    let out = strait(&["config", "validate", "-c", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("primary-to-backup: primary -> backup"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn import_mm2_unreadable_or_invalid_input_fails_clearly() {
    let out = strait(&["config", "import-mm2", "/nonexistent/mm2.properties"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("strait: cannot read /nonexistent/mm2.properties: "),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Os {"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "connect.properties",
        "bootstrap.servers = x:9092\n",
    );
    let out = strait(&["config", "import-mm2", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no `clusters = A, B` key"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn import_mm2_warns_when_the_result_needs_editing() {
    let dir = tempfile::tempdir().unwrap();
    let props = write(
        dir.path(),
        "mm2.properties",
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na.security.protocol = SASL_SSL\na->b.enabled = true\n",
    );
    let out = strait(&["config", "import-mm2", props.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "it converted");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("needs editing") && stderr.contains("needs SASL settings"),
        "{stderr}"
    );
}

#[test]
fn import_mm2_a_custom_replication_policy_needs_the_policy_flag() {
    let dir = tempfile::tempdir().unwrap();
    let props = write(
        dir.path(),
        "mm2.properties",
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n\
         replication.policy.class = com.example.LegacyPolicy\n",
    );
    let out = strait(&["config", "import-mm2", props.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("com.example.LegacyPolicy")
            && stderr.contains("--policy identity")
            && stderr.contains("--policy prefix"),
        "{stderr}"
    );
    let out = strait(&[
        "config",
        "import-mm2",
        props.to_str().unwrap(),
        "--policy",
        "identity",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("policy = \"identity\""),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn import_mm2_reads_connect_json_and_strimzi_yaml() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mirror/tests/data");
    for (file, header, flow) in [
        (
            "connect-mirror-connectors.json",
            "Kafka Connect REST JSON",
            "source = \"us-east\"",
        ),
        (
            "strimzi-mm2.yaml",
            "Strimzi KafkaMirrorMaker2",
            "source = \"dc1\"",
        ),
    ] {
        let path = data.join(file);
        let out = strait(&["config", "import-mm2", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains(header) && stdout.contains(flow), "{stdout}");
        assert!(
            text(&out.stderr).contains("were not converted"),
            "{}",
            text(&out.stderr)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let other = write(
        dir.path(),
        "connect.yaml",
        "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnect\n",
    );
    let out = strait(&["config", "import-mm2", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("kind `KafkaConnect`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn import_mm2_converts_a_mirror_maker_1_pair_with_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let consumer = write(
        dir.path(),
        "consumer.properties",
        "bootstrap.servers=src:9092\ngroup.id=mm1\n",
    );
    let producer = write(
        dir.path(),
        "producer.properties",
        "bootstrap.servers=dst:9092\nacks=all\n",
    );
    let out = strait(&["config", "import-mm2", consumer.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--producer-config"),
        "{}",
        text(&out.stderr)
    );
    let out = strait(&[
        "config",
        "import-mm2",
        consumer.to_str().unwrap(),
        "--producer-config",
        producer.to_str().unwrap(),
        "--whitelist",
        "orders.*",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("include = [\"orders.*\"]") && stdout.contains("policy = \"identity\""),
        "{stdout}"
    );
    assert!(
        !text(&out.stderr).contains("needs editing"),
        "{}",
        text(&out.stderr)
    );
    // One flag without the other is refused by the parser.
    let out = strait(&[
        "config",
        "import-mm2",
        consumer.to_str().unwrap(),
        "--include",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn validate_good_config_prints_a_summary() {
    let out = strait(&["config", "validate", "-c", &examples("strait.toml")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(": OK"), "{stdout}");
    assert!(
        stdout.contains("clusters (2):") && stdout.contains("flows (1):"),
        "{stdout}"
    );
    assert!(stdout.contains("primary-to-dr: primary -> dr"), "{stdout}");
}

#[test]
fn validate_demo_config_with_env() {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["config", "validate", "-c", &examples("demo.toml")])
        .env("STRAIT_DEMO_SOURCE", "127.0.0.1:9092")
        .env("STRAIT_DEMO_TARGET", "127.0.0.1:9192")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = strait(&["config", "validate", "-c", &examples("demo.toml")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`STRAIT_DEMO_SOURCE` is not set"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn validate_bad_config_prints_every_problem_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "bad.toml",
        "[clusters.a]\nbootstrap_servers = \"a:1\"\n[clusters.b]\nbootstrap_servers = \"b:1\"\n\
         [[flows]]\nsource = \"a\"\ntarget = \"c\"\n[flows.topics]\ninclude = [\"(\"]\n",
    );
    let out = strait(&["config", "validate", "-c", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    let file = path.display().to_string();
    assert!(
        stderr.contains(&format!("{file}:7: flows[0].target: unknown cluster \"c\"")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{file}:9: flows[0].topics.include[0]: invalid regex \"(\""
        )),
        "{stderr}"
    );
    assert!(stderr.contains("has 2 problems"), "{stderr}");
}

#[test]
fn validate_unknown_key_suggests_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "typo.toml",
        "[clusters.a]\nbootstrap_server = \"a:1\"\n",
    );
    let out = strait(&["config", "validate", "-c", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("did you mean `bootstrap_servers`?"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn validate_missing_file_exits_2() {
    let out = strait(&["config", "validate", "-c", "/nonexistent/strait.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("strait: cannot read config file /nonexistent/strait.toml"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn verify_of_a_flow_the_config_does_not_have_is_a_usage_error_in_json_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing listens there: the flow name is checked before any cluster is asked.
    let cfg = cluster_config(dir.path(), "127.0.0.1:1", "127.0.0.1:1");
    let cfg = cfg.to_str().expect("utf-8");
    let out = strait(&["verify", "-c", cfg, "--flow", "nope", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(json["exit"], 2);
    assert!(
        json["error"]
            .as_str()
            .is_some_and(|e| e.contains("--flow nope: no enabled flow has that name")),
        "{json}"
    );
    // An unreachable cluster is told apart: exit 3.
    let out = strait(&["verify", "-c", cfg]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
}

/// A config for two clusters at `source` and `target`, with group sync.
fn cluster_config(dir: &Path, source: &str, target: &str) -> PathBuf {
    write(
        dir,
        "live.toml",
        &format!(
            "[clusters.a]\nbootstrap_servers = \"{source}\"\nconnect_timeout = \"1s\"\n\
             request_timeout = \"2s\"\n[clusters.b]\nbootstrap_servers = \"{target}\"\n\
             connect_timeout = \"1s\"\nrequest_timeout = \"2s\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n[flows.sync]\ngroup_offsets = true\n\
             [metrics]\nenabled = false\n"
        ),
    )
}

#[test]
fn check_status_and_offsets_translate_against_tansu() {
    use strait_testkit::rdkafka::{self, ProduceOptions, Transaction};
    use strait_testkit::{TansuCluster, TestRecord};

    let cluster = TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "orders", 1, &[]).expect("topic");
    // Two transactions: commit markers sit at source offsets 20 and 41, so offsets past 20 shift by one.
    for chunk in 0..2 {
        let records: Vec<TestRecord> = (0..20)
            .map(|i| TestRecord::new(format!("k{chunk}-{i}"), format!("v{chunk}-{i}")))
            .collect();
        let opts = ProduceOptions {
            transaction: Transaction::Commit,
            transactional_id: Some(format!("t{chunk}")),
            ..ProduceOptions::default()
        };
        rdkafka::produce(&src, "orders", &records, &opts).expect("produce");
    }
    rdkafka::commit_group_offsets(&src, "g", "orders", &[(0, 30)]).expect("commit");
    let dir = tempfile::tempdir().unwrap();
    let cfg = cluster_config(dir.path(), &src, &dst);
    let cfg = cfg.to_str().unwrap();

    let out = strait(&["check", "-c", cfg]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("✓ create topics: allowed"), "{stdout}");
    assert!(
        stdout.contains("! CreatePartitions unavailable"),
        "{stdout}"
    );
    assert!(stdout.contains("0 check(s) failed"), "{stdout}");

    let out = strait(&["status", "-c", cfg]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("not started"),
        "nothing replicated yet: {stdout}"
    );

    let out = strait(&["--log-level", "warn", "run", "--once", "-c", cfg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("40 record(s)"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stderr).contains("replicating ["),
        "no progress bar when stderr is not a terminal"
    );

    let out = strait(&["status", "-c", cfg, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let p = &json[0]["partitions"][0];
    assert_eq!(p["topic"], "orders");
    assert_eq!(
        p["source_end"], 42,
        "40 records and 2 commit markers: {json}"
    );
    assert_eq!(p["runs"], 2, "the marker at 20 splits the map: {json}");
    assert_eq!(p["lag"], 0, "{json}");
    assert_eq!(p["exact_from"], 0, "{json}");

    let out = strait(&["offsets", "translate", "-c", cfg, "--group", "g"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("orders"))
        .unwrap_or_else(|| panic!("a row for orders: {stdout}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    // TOPIC PARTITION SOURCE TARGET-TOPIC TRANSLATED TARGET-NOW PRECISION
    assert_eq!(
        cols[..6],
        ["orders", "0", "30", "a.orders", "29", "29"],
        "{stdout}"
    );
    assert_eq!(cols[6], "exact", "{stdout}");

    let out = strait(&["offsets", "translate", "-c", cfg, "--group", "nobody"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("no committed offsets"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn check_status_and_translate_fail_clearly_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = cluster_config(dir.path(), "127.0.0.1:1", "127.0.0.1:1");
    let cfg = cfg.to_str().unwrap();
    for args in [
        &["check", "-c", cfg][..],
        &["status", "-c", cfg],
        &["offsets", "translate", "-c", cfg, "--group", "g"],
    ] {
        let started = std::time::Instant::now();
        let out = strait(args);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{args:?}"
        );
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(all.contains("127.0.0.1:1"), "{args:?}: {all}");
        // Nothing listens: said as such, after the refused-connection limit rather than
        // the whole retry timeout.
        assert!(all.contains("refused the connection"), "{args:?}: {all}");
        if args[0] == "check" {
            assert!(all.contains("✗ reachable"), "{all}");
            assert!(all.contains("check(s) failed"), "{all}");
        }
    }
    let bad = write(
        dir.path(),
        "bad.toml",
        "[clusters.a\nbootstrap_servers = 1\n",
    );
    let out = strait(&["check", "-c", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stdout).contains("✗ config"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("bad.toml"),
        "the error names the file: {}",
        text(&out.stderr)
    );
}

#[test]
fn run_with_malformed_toml_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "broken.toml",
        "[clusters.a]\nbootstrap_servers = \"a:1\"\nrequest_timeout = \"soon\"\n",
    );
    let out = strait(&["run", "--once", "-c", &cfg.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("broken.toml") && stderr.contains("request_timeout"),
        "{stderr}"
    );
}

#[test]
fn bench_is_built_and_checks_its_flags() {
    let out = strait(&["bench", "-c", "x.toml"]);
    assert_eq!(out.status.code(), Some(2), "clap usage error");
    assert!(
        text(&out.stderr).contains("--source"),
        "{}",
        text(&out.stderr)
    );
    let out = strait(&[
        "bench",
        "--source",
        "127.0.0.1:1",
        "--target",
        "127.0.0.1:1",
        "--record-size",
        "32MiB",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("--record-size"),
        "{}",
        text(&out.stderr)
    );
    let out = strait(&[
        "bench", "--source", "a:1", "--target", "b:1", "--total", "lots",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("expected a size"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_reports_an_unreachable_cluster_and_exits_3_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "r.toml",
        "[clusters.a]\nbootstrap_servers = \"127.0.0.1:1\"\nconnect_timeout = \"200ms\"\n\
         request_timeout = \"200ms\"\n[clusters.b]\nbootstrap_servers = \"127.0.0.1:1\"\n\
         connect_timeout = \"200ms\"\nrequest_timeout = \"200ms\"\n\
         [[flows]]\nsource = \"a\"\ntarget = \"b\"\n[metrics]\nenabled = false\n",
    );
    for once in [true, false] {
        let path = cfg.display().to_string();
        let mut args = vec!["run", "-c", path.as_str()];
        if once {
            args.push("--once");
        }
        let started = std::time::Instant::now();
        let out = strait(&args);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("strait: flow a-to-b, cluster ")
                && stderr.contains("cannot connect to 127.0.0.1:1"),
            "{stderr}"
        );
    }
}

#[test]
fn run_with_an_invalid_config_lists_the_problems() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "bad.toml", "[[flows]]\nsource = \"nowhere\"\n");
    let out = strait(&["run", "-c", &cfg.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a valid config"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn plan_reports_an_unreachable_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "s.toml",
        "[clusters.a]\nbootstrap_servers = \"127.0.0.1:1\"\nconnect_timeout = \"200ms\"\n\
         request_timeout = \"200ms\"\n[clusters.b]\nbootstrap_servers = \"127.0.0.1:1\"\n\
         [[flows]]\nsource = \"a\"\ntarget = \"b\"\n",
    );
    let out = strait(&["plan", "-c", &cfg.display().to_string()]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("cannot connect to cluster a (127.0.0.1:1, PLAINTEXT)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_command_has_help() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["check", "--help"],
        &["plan", "--help"],
        &["status", "--help"],
        &["offsets", "translate", "--help"],
        &["bench", "--help"],
        &["config", "import-mm2", "--help"],
        &["config", "validate", "--help"],
    ] {
        let out = strait(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text(&out.stdout).contains("Usage: strait"), "{args:?}");
    }
    let out = strait(&["offsets", "translate", "-c", "x.toml"]);
    assert_eq!(out.status.code(), Some(2), "--group is required");
    assert!(text(&out.stderr).contains("--group"));
}

#[test]
fn log_flags_are_accepted_and_checked() {
    let out = strait(&[
        "--log-format",
        "json",
        "--log-level",
        "debug",
        "config",
        "validate",
        "-c",
        &examples("strait.toml"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = strait(&[
        "--log-level",
        "=nope=",
        "config",
        "validate",
        "-c",
        &examples("strait.toml"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("invalid --log-level"),
        "{}",
        text(&out.stderr)
    );
}

/// Every secret-bearing key a real MM2 config can carry (Kafka client, Connect converter
/// and Schema Registry, MSK and cloud credentials), under every prefix MM2 reads it with.
const SECRET_KEYS: &[&str] = &[
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.login.callback.handler.class.secret",
    "basic.auth.user.info",
    "schema.registry.basic.auth.user.info",
    "value.converter.basic.auth.user.info",
    "key.converter.schema.registry.basic.auth.user.info",
    "confluent.api.key",
    "confluent.api.secret",
    "aws.secret.access.key",
    "aws.access.key.id",
    "aws.session.token",
    "bearer.auth.token",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "config.providers.vault.param.vault.token",
    "listeners.https.ssl.keystore.password",
    "some.vendor.signing.key.id",
];

const PREFIXES: &[&str] = &[
    "",
    "a.",
    "b.",
    "a.consumer.",
    "a.producer.",
    "a.admin.",
    "b.producer.",
    "a->b.",
    "a->b.producer.",
    "source.cluster.",
    "target.cluster.",
    "producer.override.",
    "consumer.",
];

#[test]
fn import_mm2_never_prints_a_secret_of_the_key_catalogue_in_any_form() {
    let dir = tempfile::tempdir().unwrap();
    let mut props = String::from(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n",
    );
    let mut canaries = Vec::new();
    for (i, prefix) in PREFIXES.iter().enumerate() {
        for (j, key) in SECRET_KEYS.iter().enumerate() {
            // Shapes a secret comes in: plain, user:password, a JAAS line, a PEM block.
            let canary = format!("Canary{i}x{j}Zq");
            let value = match j % 4 {
                0 => canary.clone(),
                1 => format!("user:{canary}"),
                2 => format!(
                    "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     username=\"u\" password=\"{canary}\";"
                ),
                _ => format!("-----BEGIN PRIVATE KEY----- {canary} -----END PRIVATE KEY-----"),
            };
            props.push_str(&format!("{prefix}{key} = {value}\n"));
            canaries.push(canary);
        }
    }
    let path = write(dir.path(), "mm2.properties", &props);
    // The same keys in a file the import refuses: the error says nothing of them.
    let refused = write(
        dir.path(),
        "refused.properties",
        &format!("{props}topics = ${{file:/etc/mm2/filters.properties:topics}}\n"),
    );
    let out = strait(&["config", "import-mm2", refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("`topics`"), "{all}");
    assert!(!canaries.iter().any(|c| all.contains(c.as_str())), "{all}");
    let out_file = dir.path().join("strait.toml");
    for args in [
        vec!["config", "import-mm2", path.to_str().unwrap()],
        vec![
            "config",
            "import-mm2",
            "-o",
            out_file.to_str().unwrap(),
            path.to_str().unwrap(),
        ],
    ] {
        let out = strait(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let mut all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        all.push_str(&std::fs::read_to_string(&out_file).unwrap_or_default());
        // The keys were read and reported (the test is not passing on an empty output).
        assert!(all.contains("ssl.keystore.certificate.chain"), "{all}");
        let leaked: Vec<&String> = canaries
            .iter()
            .filter(|c| all.contains(c.as_str()))
            .collect();
        assert!(
            leaked.is_empty(),
            "{args:?} printed {} of {} secrets, e.g. {:?}",
            leaked.len(),
            canaries.len(),
            leaked.first()
        );
    }
}

/// `config validate --offline`: a CI job lints a config without its secrets or files; the
/// same config fails a full validation (exit 2) naming both, and a structural error still
/// fails offline.
#[test]
fn validate_offline_checks_structure_and_values_without_secrets_or_files() {
    let dir = tempfile::tempdir().unwrap();
    let secure = "[clusters.a]\nbootstrap_servers = \"${STRAIT_TEST_UNSET_BOOTSTRAP}\"\n\
         [clusters.a.security]\nprotocol = \"sasl_ssl\"\n\
         [clusters.a.security.tls]\nca_file = \"/nonexistent/strait-ca.pem\"\n\
         [clusters.a.security.sasl]\nmechanism = \"scram-sha-512\"\nusername = \"u\"\n\
         password = \"${STRAIT_TEST_UNSET_PASSWORD}\"\n\
         [clusters.b]\nbootstrap_servers = \"b:9092\"\n[[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
    let cfg = write(dir.path(), "secure.toml", secure);
    let cfg = cfg.to_str().unwrap();

    let full = strait(&["config", "validate", "-c", cfg]);
    let stderr = text(&full.stderr);
    assert_eq!(full.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("STRAIT_TEST_UNSET_PASSWORD"), "{stderr}");
    assert!(!stderr.contains("/nonexistent/strait-ca.pem") || stderr.contains("cannot read"));

    let offline = strait(&["config", "validate", "--offline", "-c", cfg]);
    let stdout = text(&offline.stdout);
    assert_eq!(
        offline.status.code(),
        Some(0),
        "{stdout}{}",
        text(&offline.stderr)
    );
    assert!(stdout.contains(": OK"), "{stdout}");
    assert!(stdout.contains("offline"), "{stdout}");

    // Files are the loader's check, not the offline lint's: with every variable set, a
    // full validation names the unreadable CA file.
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["config", "validate", "-c", cfg])
        .env("STRAIT_TEST_UNSET_BOOTSTRAP", "a:9092")
        .env("STRAIT_TEST_UNSET_PASSWORD", "not-a-real-password")
        .output()
        .expect("run strait");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ca_file") && stderr.contains("cannot read /nonexistent/strait-ca.pem"),
        "{stderr}"
    );
    assert!(!stderr.contains("not-a-real-password"), "{stderr}");

    let broken = write(
        dir.path(),
        "broken.toml",
        &secure.replace("target = \"b\"", "target = \"c\""),
    );
    let out = strait(&[
        "config",
        "validate",
        "--offline",
        "-c",
        broken.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("\"c\""), "{}", text(&out.stderr));
}

/// Logs written to a pipe or a file carry no ANSI colour codes.
#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "r.toml",
        "[clusters.a]\nbootstrap_servers = \"127.0.0.1:1\"\nconnect_timeout = \"200ms\"\n\
         request_timeout = \"200ms\"\n[clusters.b]\nbootstrap_servers = \"127.0.0.1:1\"\n\
         connect_timeout = \"200ms\"\nrequest_timeout = \"200ms\"\n\
         [[flows]]\nsource = \"a\"\ntarget = \"b\"\n[metrics]\nenabled = false\n",
    );
    let out = strait(&[
        "--log-level",
        "info",
        "run",
        "--once",
        "-c",
        &cfg.display().to_string(),
    ]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(" INFO ") || stderr.contains(" WARN "),
        "no log lines: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

/// `strait bench` refuses a cluster that holds topics of its own (exit 4), naming them,
/// and writes nothing there; `--yes` overrides.
#[test]
fn bench_refuses_a_cluster_with_other_topics_unless_told_yes() {
    use strait_testkit::rdkafka;
    let cluster = strait_testkit::TansuCluster::start(2).expect("brokers");
    let (src, dst) = (cluster.broker(0).bootstrap(), cluster.broker(1).bootstrap());
    rdkafka::create_topic(&src, "orders", 1, &[]).expect("topic");
    let bench = |topic: &str, extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--source",
            src.as_str(),
            "--target",
            dst.as_str(),
            "--mode",
            "load",
            "--total",
            "64KiB",
            "--partitions",
            "1",
            "--topic",
            topic,
        ];
        args.extend_from_slice(extra);
        strait(&args)
    };
    let out = bench("strait-bench-guard", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("source") && stderr.contains("orders") && stderr.contains("--yes"),
        "{stderr}"
    );
    let topics: Vec<String> = common::read::runtime().block_on(async {
        let c = strait_client::Client::connect(strait_client::ClientConfig::new([src.clone()]))
            .await
            .expect("connect");
        let meta = c.metadata(None).await.expect("metadata");
        meta.topics.keys().cloned().collect()
    });
    assert!(
        !topics.iter().any(|t| t == "strait-bench-guard"),
        "refused, yet the bench created its topic: {topics:?}"
    );
    let out = bench("strait-bench-guard", &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The bench's own topics do not count against a later run.
    rdkafka::delete_topic(&src, "orders").expect("delete");
    let out = bench("strait-bench-guard-2", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `--json` gives one JSON document on stdout for every command that reports, and an
/// error as `{"error", "exit"}` there too, with the documented exit code.
#[test]
fn json_reports_and_errors_are_json_on_stdout_with_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let parse = |out: &Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr))
        })
    };
    // A valid config, and one with problems.
    let ok = strait(&[
        "config",
        "validate",
        "--json",
        "-c",
        &examples("strait.toml"),
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let v = parse(&ok);
    assert_eq!(v["valid"], true);
    assert!(v["flows"].as_array().is_some_and(|f| !f.is_empty()), "{v}");
    let bad = write(
        dir.path(),
        "bad.toml",
        "[clusters.a]\nbootstrap_server = \"a:1\"\n",
    );
    let out = strait(&["config", "validate", "--json", "-c", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let v = parse(&out);
    assert_eq!(v["valid"], false);
    let problems = v["problems"].as_array().expect("problems");
    assert!(
        problems
            .iter()
            .any(|p| p["key"] == "clusters.a.bootstrap_server" && p["line"] == 2),
        "{v}"
    );
    // Nothing listens: check reports each failed check; the others report the error.
    let cfg = cluster_config(dir.path(), "127.0.0.1:1", "127.0.0.1:1");
    let cfg = cfg.to_str().unwrap();
    let out = strait(&["check", "--json", "-c", cfg]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let v = parse(&out);
    assert!(v["failed"].as_u64().is_some_and(|n| n > 0), "{v}");
    assert!(
        v["checks"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["status"] == "failed")),
        "{v}"
    );
    for args in [
        &["plan", "--json", "-c", cfg][..],
        &["status", "--json", "-c", cfg],
        &["offsets", "translate", "--json", "-c", cfg, "--group", "g"],
    ] {
        let out = strait(args);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let v = parse(&out);
        assert_eq!(v["exit"], 3, "{args:?}: {v}");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("127.0.0.1:1")),
            "{args:?}: {v}"
        );
    }
}
