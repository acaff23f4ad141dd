//! Loading, validation and error reporting of whole config files.

use std::path::PathBuf;
use std::time::Duration;

use strait_mirror::config::model::{NamingPolicy, StartPosition};
use strait_mirror::config::{ConfigError, ConfigFile, TopicDecision, load, load_str, parse_str};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// The problems of a config that must not load, one rendered line each.
fn problems(text: &str) -> Vec<String> {
    match load_str(text, "test.toml", &no_env) {
        Ok(_) => panic!("expected problems in:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn one_problem(text: &str) -> String {
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:#?}");
    p[0].clone()
}

const BASE: &str = r#"
[clusters.a]
bootstrap_servers = ["a1:9092", "a2:9092"]

[clusters.b]
bootstrap_servers = "b1:9092"

[[flows]]
source = "a"
target = "b"
"#;

#[test]
fn minimal_config_gets_documented_defaults() {
    let cfg = load_str(BASE, "test.toml", &no_env).unwrap();
    let flow = &cfg.flows[0];
    assert_eq!(flow.name, "a-to-b");
    assert_eq!(flow.state_topic, "strait-state.a-to-b.internal");
    assert_eq!(flow.policy.kind(), NamingPolicy::Prefix);
    assert_eq!(flow.replication_factor, None);
    assert_eq!(flow.start_position, StartPosition::Earliest);
    assert_eq!(flow.intervals.topic_refresh, Duration::from_secs(30));
    assert!(
        flow.sync.group_offsets
            && flow.sync.heartbeats
            && flow.sync.checkpoints
            && flow.sync.topic_configs
    );
    assert_eq!(cfg.clusters["a"].bootstrap_servers, ["a1:9092", "a2:9092"]);
    assert_eq!(cfg.clusters["b"].client_id, "strait");
    assert_eq!(cfg.engine.max_in_flight_per_partition, 5);
    assert_eq!(cfg.engine.fetch_max_bytes, 50 << 20);
    assert_eq!(cfg.metrics_listen.map(|a| a.port()), Some(9464));
}

#[test]
fn resolved_flow_decides_topics_groups_and_configs() {
    let cfg = load_str(BASE, "test.toml", &no_env).unwrap();
    let flow = &cfg.flows[0];
    assert_eq!(
        flow.topic_decision("orders"),
        TopicDecision::Replicate {
            target_topic: "a.orders".into()
        }
    );
    assert_eq!(flow.topic_decision("b.orders"), TopicDecision::Cycle);
    assert_eq!(flow.topic_decision("c.b.orders"), TopicDecision::Cycle);
    assert_eq!(
        flow.topic_decision("c.orders"),
        TopicDecision::Replicate {
            target_topic: "a.c.orders".into()
        }
    );
    assert_eq!(
        flow.topic_decision("__consumer_offsets"),
        TopicDecision::Filtered
    );
    assert_eq!(
        flow.topic_decision("x.checkpoints.internal"),
        TopicDecision::Filtered
    );
    assert_eq!(
        flow.topic_decision("heartbeats"),
        TopicDecision::Replicate {
            target_topic: "a.heartbeats".into()
        }
    );
    assert_eq!(
        flow.topic_decision("strait-state.a-to-b.internal"),
        TopicDecision::StateTopic
    );
    assert!(flow.syncs_group("billing"));
    assert!(!flow.syncs_group("console-consumer-42"));
    assert!(flow.syncs_topic_config("retention.ms"));
    assert!(!flow.syncs_topic_config("min.insync.replicas"));
}

#[test]
fn heartbeats_follow_their_toggle_not_the_filter() {
    let text =
        format!("{BASE}[flows.topics]\ninclude = [\"orders\"]\n[flows.sync]\nheartbeats = false\n");
    let cfg = load_str(&text, "test.toml", &no_env).unwrap();
    assert_eq!(
        cfg.flows[0].topic_decision("heartbeats"),
        TopicDecision::HeartbeatsDisabled
    );
    assert_eq!(
        cfg.flows[0].topic_decision("payments"),
        TopicDecision::Filtered
    );
}

#[test]
fn example_config_loads_and_round_trips() {
    let path = example("strait.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let cfg = load_str(&text, "strait.toml", &no_env).unwrap();
    assert_eq!(
        cfg.clusters["primary"].bootstrap_servers,
        ["localhost:9092"]
    );
    assert_eq!(cfg.clusters["dr"].bootstrap_servers, ["localhost:9093"]);
    let flow = &cfg.flows[0];
    assert_eq!(
        flow.topic_decision("orders.eu"),
        TopicDecision::Replicate {
            target_topic: "primary.orders.eu".into()
        }
    );
    assert_eq!(flow.topic_decision("ordersX"), TopicDecision::Filtered);

    // File → model → TOML → model is the identity.
    let parsed: ConfigFile = parse_str(&text, "strait.toml", &no_env).unwrap();
    let written = toml::to_string(&parsed).unwrap();
    let reparsed = parse_str(&written, "written.toml", &no_env).unwrap();
    assert_eq!(parsed, reparsed);
    // Every commented key of the example is a real key: uncommenting them all still loads.
    let uncommented: String = text
        .lines()
        .map(|l| {
            let t = l.trim_start_matches("# ");
            let is_key = t
                .split_once(" = ")
                .is_some_and(|(k, _)| !k.contains(' ') && !k.contains('.'));
            let is_table = t.starts_with("[clusters.primary.security")
                || t.starts_with("[engine]")
                || t.starts_with("[metrics]")
                || t.starts_with("[logging]")
                || t.starts_with("[flows.");
            let is_array_line = t.starts_with("  \"") || t == "]";
            if l.starts_with("# ") && (is_key || is_table || is_array_line) {
                t.to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let err = load_str(&uncommented, "uncommented.toml", &|name| {
        name.ends_with("PASSWORD").then(|| "secret".into())
    })
    .unwrap_err();
    // Only the example's TLS files, which do not exist here, are refused.
    for p in err.problems() {
        assert!(p.message.contains("cannot read /etc/strait/"), "{p}");
    }
    assert_eq!(err.problems().len(), 3, "{err}");
}

#[test]
fn demo_config_needs_its_env_vars() {
    let path = example("demo.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let env = |name: &str| match name {
        "STRAIT_DEMO_SOURCE" => Some("127.0.0.1:9092".to_owned()),
        "STRAIT_DEMO_TARGET" => Some("127.0.0.1:9192".to_owned()),
        _ => None,
    };
    let cfg = load_str(&text, "demo.toml", &env).unwrap();
    assert_eq!(
        cfg.flows[0].topic_decision("orders"),
        TopicDecision::Replicate {
            target_topic: "source.orders".into()
        }
    );
    assert_eq!(cfg.clusters["target"].bootstrap_servers, ["127.0.0.1:9192"]);

    let e = load_str(&text, "demo.toml", &no_env)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("demo.toml:8: environment variable `STRAIT_DEMO_SOURCE` is not set"),
        "{e}"
    );
    assert!(
        e.contains("demo.toml:12: environment variable `STRAIT_DEMO_TARGET` is not set"),
        "{e}"
    );
}

#[test]
fn unreadable_file_is_a_read_error() {
    let e = load(std::path::Path::new("/nonexistent/strait.toml")).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(
        e.to_string()
            .starts_with("cannot read config file /nonexistent/strait.toml"),
        "{e}"
    );
}

#[test]
fn unknown_key_with_suggestion() {
    let text = BASE.replace(
        "bootstrap_servers = \"b1:9092\"",
        "bootstrap_servers = \"b1:9092\"\nclient_idd = \"x\"",
    );
    let p = one_problem(&text);
    assert!(p.starts_with("test.toml:7: clusters.b.client_idd: unknown key `client_idd`; expected one of `bootstrap_servers`, `client_id`"), "{p}");
    assert!(p.ends_with("did you mean `client_id`?"), "{p}");
}

#[test]
fn incident_policies_default_to_fail_and_each_key_sets_its_own() {
    use strait_mirror::config::model::IncidentPolicy::{Fail, Skip};
    let cfg = load_str(BASE, "test.toml", &no_env).unwrap();
    let f = &cfg.flows[0];
    assert_eq!(
        (
            f.on_source_truncation,
            f.on_topic_recreation,
            f.on_target_mismatch
        ),
        (Fail, Fail, Fail)
    );
    let text = format!("{BASE}[flows.topics]\non_target_mismatch = \"skip\"\n");
    let cfg = load_str(&text, "test.toml", &no_env).unwrap();
    let f = &cfg.flows[0];
    assert_eq!(
        (
            f.on_source_truncation,
            f.on_topic_recreation,
            f.on_target_mismatch
        ),
        (Fail, Fail, Skip),
        "on_target_mismatch does not change the source policies"
    );
}

#[test]
fn a_target_policy_under_another_name_suggests_on_target_mismatch() {
    for wrong in [
        "on_target_truncation",
        "on_target_recreation",
        "on_target_mismatc",
    ] {
        let text = format!("{BASE}[flows.topics]\n{wrong} = \"skip\"\n");
        let p = one_problem(&text);
        assert!(p.contains(&format!("unknown key `{wrong}`")), "{p}");
        assert!(p.ends_with("did you mean `on_target_mismatch`?"), "{p}");
    }
}

#[test]
fn misspelled_required_key_is_reported_once() {
    let text = BASE.replace(
        "bootstrap_servers = \"b1:9092\"",
        "bootstrap.servers = \"b1:9092\"",
    );
    let p = problems(&text);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains("clusters.b.bootstrap: unknown key `bootstrap.servers`")
            && p[0].contains("did you mean `bootstrap_servers`?"),
        "{p:?}"
    );
}

#[test]
fn missing_required_key() {
    let p =
        one_problem("[clusters.a]\nclient_id = \"x\"\n[[flows]]\nsource = \"a\"\ntarget = \"a\"\n");
    assert!(
        p.contains("clusters.a.bootstrap_servers: missing required key `bootstrap_servers`"),
        "{p}"
    );
}

#[test]
fn every_parse_problem_is_reported_together() {
    let text = r#"
[clusters.a]
bootstrap_servers = ["a:1", 5]
request_timeout = "soon"
colour = "blue"

[[flows]]
source = "a"
target = "a"
sourc = "x"
[flows.naming]
policy = "prefx"
"#;
    let p = problems(text);
    assert_eq!(p.len(), 5, "{p:#?}");
    assert!(p[0].starts_with("test.toml:3: clusters.a.bootstrap_servers[1]: invalid type: integer `5`; expected a string"), "{p:?}");
    assert!(
        p[1].starts_with("test.toml:4: clusters.a.request_timeout: invalid duration \"soon\""),
        "{p:?}"
    );
    assert!(
        p[2].starts_with("test.toml:5: clusters.a.colour: unknown key"),
        "{p:?}"
    );
    assert!(
        p[3].contains("flows[0].sourc: unknown key") && p[3].ends_with("did you mean `source`?"),
        "{p:?}"
    );
    assert!(p[4].contains("flows[0].naming.policy: unknown value \"prefx\"; expected one of \"prefix\", \"identity\"; did you mean `prefix`?"), "{p:?}");
}

#[test]
fn invalid_toml_names_the_line() {
    let p = one_problem("[clusters.a]\nbootstrap_servers = [\"a:1\"\n");
    assert!(p.starts_with("test.toml:2: invalid TOML"), "{p}");
}

#[test]
fn bad_regexes_are_located_by_index() {
    let text = format!(
        "{BASE}[flows.topics]\ninclude = [\"ok\", \"fine.*\", \"(unclosed\"]\nexclude = [\"[z-a]\"]\n"
    );
    let p = problems(&text);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p[0].starts_with("test.toml:12: flows[0].topics.include[2]: invalid regex \"(unclosed\""),
        "{p:?}"
    );
    assert!(p[0].contains("; expected a regular expression"), "{p:?}");
    assert!(
        p[1].starts_with("test.toml:13: flows[0].topics.exclude[0]: invalid regex \"[z-a]\""),
        "{p:?}"
    );
}

#[test]
fn empty_include_list_replicates_nothing() {
    let p = one_problem(&format!("{BASE}[flows.topics]\ninclude = []\n"));
    assert!(
        p.contains("flows[0].topics.include: the list is empty"),
        "{p}"
    );
}

#[test]
fn missing_env_var_is_named() {
    let text = BASE.replace("\"b1:9092\"", "\"${B_SERVERS}\"");
    let p = one_problem(&text);
    assert_eq!(
        p,
        "test.toml:6: environment variable `B_SERVERS` is not set (referenced as `${B_SERVERS}`; use `${B_SERVERS:-default}` to give a default)"
    );
    let cfg = load_str(&text, "t", &|n| {
        (n == "B_SERVERS").then(|| "x:1,y:2".to_owned())
    })
    .unwrap();
    assert_eq!(
        cfg.clusters["b"].bootstrap_servers,
        ["x:1", "y:2"],
        "a variable may hold a whole list"
    );
}

#[test]
fn unknown_cluster_with_suggestion() {
    let text = BASE.replace("target = \"b\"", "target = \"bb\"");
    let p = one_problem(&text);
    assert_eq!(
        p,
        "test.toml:10: flows[0].target: unknown cluster \"bb\"; expected one of the `[clusters.<name>]` names: \"a\", \"b\"; did you mean `b`?"
    );
}

#[test]
fn identity_flow_onto_itself_is_a_cycle() {
    let text = BASE.replace("target = \"b\"", "target = \"a\"")
        + "[flows.naming]\npolicy = \"identity\"\n";
    let p = one_problem(&text);
    assert!(
        p.contains("test.toml:8: flows[0]: flow from \"a\" to \"a\" with identity naming"),
        "{p}"
    );
    // With prefix naming the same flow is allowed: prefixed names stop the loop.
    load_str(
        &BASE.replace("target = \"b\"", "target = \"a\""),
        "t",
        &no_env,
    )
    .unwrap();
}

#[test]
fn identity_flows_in_a_loop_are_a_cycle() {
    let text = format!(
        "{BASE}[flows.naming]\npolicy = \"identity\"\n[[flows]]\nsource = \"b\"\ntarget = \"a\"\n[flows.naming]\npolicy = \"identity\"\n"
    );
    let p = one_problem(&text);
    assert!(
        p.contains("flows: flows with identity naming form a cycle (a -> b -> a)"),
        "{p}"
    );
    // Disabling one direction breaks the loop.
    let text = text.replace("target = \"a\"", "target = \"a\"\nenabled = false");
    load_str(&text, "t", &no_env).unwrap();
}

#[test]
fn zero_and_absurd_intervals() {
    let text =
        format!("{BASE}[flows.intervals]\ntopic_refresh = \"0s\"\ngroup_sync = \"30days\"\n");
    let p = problems(&text);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].contains("flows[0].intervals.topic_refresh: must not be zero; expected a duration between 100ms and 1day"), "{p:?}");
    assert!(
        p[1].contains("flows[0].intervals.group_sync: 30days is out of range"),
        "{p:?}"
    );
}

fn with_security(table: &str) -> String {
    BASE.replace(
        "bootstrap_servers = \"b1:9092\"",
        &format!("bootstrap_servers = \"b1:9092\"\n{table}"),
    )
}

#[test]
fn sasl_ssl_with_scram_resolves_with_the_secret_redacted() {
    let text = with_security(
        "[clusters.b.security]\nprotocol = \"SASL_SSL\"\n[clusters.b.security.sasl]\nmechanism = \"scram-sha-512\"\nusername = \"u\"\npassword = \"${B_PW}\"",
    );
    let cfg = load_str(&text, "t.toml", &|v| {
        (v == "B_PW").then(|| "hunter2-pw".into())
    })
    .expect("valid");
    let sec = &cfg.clusters["b"].security;
    assert_eq!(sec.protocol_name(), "SASL_SSL");
    let tls = sec.tls.as_ref().expect("tls");
    assert_eq!(tls.ca, strait_client::CaRoots::System);
    assert_eq!(
        sec.sasl.as_ref().expect("sasl").mechanism(),
        "SCRAM-SHA-512"
    );
    let shown = format!("{cfg:?}");
    assert!(
        !shown.contains("hunter2-pw"),
        "the password leaked into Debug: {shown}"
    );
}

#[test]
fn security_tables_must_match_the_protocol() {
    let p = problems(&with_security(
        "[clusters.b.security]\n[clusters.b.security.sasl]\nmechanism = \"plain\"\nusername = \"u\"\npassword = \"p\"",
    ));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains(
            "clusters.b.security.sasl: SASL settings are given but protocol is \"plaintext\""
        ),
        "{p:?}"
    );
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"sasl_plaintext\"",
    ));
    assert!(
        p[0].contains("protocol \"sasl_plaintext\" needs SASL settings"),
        "{p:?}"
    );
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"sasl_plaintext\"\n[clusters.b.security.tls]\nca_file = \"/x\"\n[clusters.b.security.sasl]\nmechanism = \"plain\"\nusername = \"u\"\npassword = \"p\"",
    ));
    assert!(
        p.iter()
            .any(|l| l.contains("TLS settings are given but protocol is \"sasl_plaintext\"")),
        "{p:?}"
    );
}

#[test]
fn each_mechanism_names_what_it_lacks() {
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"sasl_ssl\"\n[clusters.b.security.sasl]\nmechanism = \"scram-sha-256\"\nusername = \"u\"",
    ));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains(
            "clusters.b.security.sasl.password: mechanism SCRAM-SHA-256 needs `password`"
        ),
        "{p:?}"
    );
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"sasl_ssl\"\n[clusters.b.security.sasl]\nmechanism = \"oauthbearer\"\nusername = \"u\"",
    ));
    assert!(
        p.iter()
            .any(|l| l.contains("`username` does not apply to mechanism OAUTHBEARER")),
        "{p:?}"
    );
    assert!(
        p.iter().any(|l| l.contains("needs a token source")),
        "{p:?}"
    );
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"sasl_ssl\"\n[clusters.b.security.sasl]\nmechanism = \"oauthbearer\"\ntoken_endpoint_url = \"http://idp/token\"\nclient_id = \"c\"\nclient_secret = \"s\"",
    ));
    assert!(
        p.iter().any(|l| l.contains("is not an https:// URL")),
        "{p:?}"
    );
    let ok = with_security(
        "[clusters.b.security]\nprotocol = \"sasl_ssl\"\n[clusters.b.security.sasl]\nmechanism = \"oauthbearer\"\ntoken_endpoint_url = \"https://idp/token\"\nclient_id = \"c\"\nclient_secret = \"${S}\"\nscope = \"kafka\"\nextensions = { logicalCluster = \"lkc-1\" }",
    );
    let cfg = load_str(&ok, "t.toml", &|_| Some("oidc-secret-x".into())).expect("valid");
    assert!(!format!("{cfg:?}").contains("oidc-secret-x"));
}

#[test]
fn mutual_tls_needs_both_files_and_they_must_be_readable() {
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"ssl\"\n[clusters.b.security.tls]\ncert_file = \"/nonexistent/c.pem\"",
    ));
    assert!(
        p.iter().any(|l| l.contains(
            "clusters.b.security.tls.key_file: mutual TLS needs both a certificate and a key"
        )),
        "{p:?}"
    );
    let p = problems(&with_security(
        "[clusters.b.security]\nprotocol = \"ssl\"\n[clusters.b.security.tls]\nca_file = \"/nonexistent/ca.pem\"",
    ));
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains("clusters.b.security.tls.ca_file: cannot read /nonexistent/ca.pem"),
        "{p:?}"
    );
}

#[test]
fn many_validation_problems_at_once() {
    let text = r#"
[clusters."bad.name"]
bootstrap_servers = ["nohost", "h:0"]
client_id = ""

[clusters.b]
bootstrap_servers = "b:1"

[[flows]]
source = "bad.name"
target = "b"
state_topic = "no spaces allowed"
[flows.topics]
replication_factor = 0

[[flows]]
name = "bad.name-to-b"
source = "b"
target = "nowhere"

[engine]
max_in_flight_per_partition = 6
in_flight_memory = "1MiB"
fetch_partition_max_bytes = "100MiB"

[metrics]
listen = "everywhere"

[logging]
level = "verbose"
"#;
    let p = problems(text);
    let wanted = [
        "clusters.\"bad.name\": invalid cluster name",
        "clusters.\"bad.name\".bootstrap_servers[0]: invalid bootstrap server \"nohost\"",
        "clusters.\"bad.name\".bootstrap_servers[1]: invalid bootstrap server \"h:0\"",
        "clusters.\"bad.name\".client_id: invalid client id",
        "flows[0].state_topic: invalid topic name",
        "flows[0].naming.separator: source cluster name \"bad.name\" contains the separator",
        "flows[0].topics.replication_factor: invalid replication factor 0",
        "flows[1].target: unknown cluster \"nowhere\"",
        "flows[1].name: flow name \"bad.name-to-b\" is also used by flows[0]",
        "engine.max_in_flight_per_partition: 6 is out of range",
        "engine.fetch_partition_max_bytes: 100MiB is larger than fetch_max_bytes",
        "engine.in_flight_memory: 1MiB cannot hold one partition's record set",
        "metrics.listen: invalid listen address \"everywhere\"",
        "logging.level: invalid log directive \"verbose\"",
    ];
    for w in wanted {
        assert!(
            p.iter().any(|line| line.contains(w)),
            "missing {w:?} in {p:#?}"
        );
    }
    assert_eq!(p.len(), wanted.len(), "{p:#?}");
}

#[test]
fn no_clusters_no_flows() {
    let p = problems("");
    assert_eq!(
        p,
        [
            "test.toml: clusters: no clusters are defined; expected at least two `[clusters.<name>]` tables",
            "test.toml: flows: no flows are defined; expected at least one `[[flows]]` table"
        ]
    );
}

fn msk_iam(keys: &str) -> String {
    with_security(&format!(
        "[clusters.b.security]\nprotocol = \"sasl_ssl\"\n[clusters.b.security.sasl]\n{keys}"
    ))
}

#[cfg(not(feature = "msk-iam"))]
#[test]
fn aws_msk_iam_without_the_feature_is_a_clear_problem() {
    for mechanism in ["aws-msk-iam", "AWS_MSK_IAM"] {
        let p = one_problem(&msk_iam(&format!(
            "mechanism = \"{mechanism}\"\nregion = \"eu-west-1\""
        )));
        assert!(
            p.contains(
                "clusters.b.security.sasl.mechanism: mechanism aws-msk-iam needs a strait built \
                 with --features msk-iam"
            ),
            "{p}"
        );
    }
}

#[cfg(feature = "msk-iam")]
#[test]
fn aws_msk_iam_resolves_to_oauthbearer_with_the_feature() {
    let cfg = load_str(
        &msk_iam("mechanism = \"aws-msk-iam\"\nregion = \"eu-west-1\""),
        "t.toml",
        &no_env,
    )
    .expect("valid");
    let sec = &cfg.clusters["b"].security;
    let sasl = sec.sasl.as_ref().expect("sasl");
    assert_eq!(sasl.mechanism(), "AWS_MSK_IAM");
    assert_eq!(sasl.user(), "AWS MSK IAM (region eu-west-1)");
    let client = sec.to_client().expect("client security");
    let wire = client.sasl.expect("sasl");
    assert_eq!(wire.mechanism(), "OAUTHBEARER");
    assert_eq!(wire.user(), "AWS MSK IAM (region eu-west-1)");
}

#[test]
fn aws_msk_iam_keys_are_checked() {
    let has = |p: &[String], w: &str| {
        assert!(p.iter().any(|l| l.contains(w)), "missing {w:?} in {p:#?}");
    };
    let p = problems(&msk_iam("mechanism = \"aws-msk-iam\""));
    has(
        &p,
        "clusters.b.security.sasl.region: mechanism AWS_MSK_IAM needs `region`",
    );
    let p = problems(&msk_iam(
        "mechanism = \"aws-msk-iam\"\nregion = \"eu-west-1\"\nusername = \"u\"\ntoken_file = \"/t\"",
    ));
    has(
        &p,
        "clusters.b.security.sasl.username: `username` does not apply to mechanism AWS_MSK_IAM",
    );
    has(
        &p,
        "clusters.b.security.sasl.token_file: `token_file` does not apply to mechanism AWS_MSK_IAM",
    );
    let p = problems(&msk_iam(
        "mechanism = \"aws-msk-iam\"\nregion = \"EU West\"",
    ));
    has(
        &p,
        "clusters.b.security.sasl.region: \"EU West\" is not an AWS region name",
    );
    let p = one_problem(&msk_iam(
        "mechanism = \"scram-sha-512\"\nusername = \"u\"\npassword = \"p\"\nregion = \"eu-west-1\"",
    ));
    assert!(
        p.contains(
            "clusters.b.security.sasl.region: `region` does not apply to mechanism SCRAM-SHA-512"
        ),
        "{p}"
    );
}

#[test]
fn renames_must_be_topic_names_one_each_and_not_heartbeats() {
    let p = problems(&format!(
        "{BASE}[flows.naming.rename]\n\"bad name\" = \"x\"\na = \"shared\"\nb = \"shared\"\nheartbeats = \"hb\"\n"
    ));
    let text = p.join("\n");
    assert!(text.contains("invalid topic name \"bad name\""), "{text}");
    assert!(
        text.contains("\"a\" and \"b\" are both renamed to \"shared\""),
        "{text}"
    );
    assert!(
        text.contains("heartbeats topics cannot be renamed"),
        "{text}"
    );
}

#[test]
fn a_rename_applies_before_the_policy() {
    let cfg = load_str(
        &format!("{BASE}[flows.naming]\nrename = {{ orders = \"orders-v2\" }}\n"),
        "test.toml",
        &no_env,
    )
    .expect("valid");
    assert_eq!(
        cfg.flows[0].topic_decision("orders"),
        TopicDecision::Replicate {
            target_topic: "a.orders-v2".into()
        }
    );
}

#[test]
fn a_wrongly_typed_secret_is_reported_without_its_value() {
    let text = "[clusters.a]\nbootstrap_servers = \"x:9092\"\n\
                [clusters.a.security.sasl]\nmechanism = \"plain\"\nusername = \"u\"\npassword = 987654321\n\
                [clusters.b]\nbootstrap_servers = \"y:9092\"\n\
                [[flows]]\nsource = \"a\"\ntarget = \"b\"\n";
    let p = one_problem(text);
    assert!(
        p.contains("sasl.password") && p.contains("expected a string"),
        "{p}"
    );
    assert!(!p.contains("987654321"), "the password leaked: {p}");
}
