//! Importing MirrorMaker 2 properties files.

use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;
use strait_mirror::config::mm2::{
    ImportError, ImportOptions, UnmappedKey, import_mm2, import_mm2_with,
};
use strait_mirror::config::model::{NamingPolicy, StartPosition};
use strait_mirror::config::{Config, TopicDecision, load_str, parse_str};

fn data(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn load_imported(toml: &str) -> Config {
    load_str(toml, "imported.toml", &|_| None).unwrap_or_else(|e| panic!("{e}\n---\n{toml}"))
}

#[test]
fn realistic_fixture_converts_and_validates() {
    let (toml, unmapped) = import_mm2(&data("tests/data/mm2.properties")).unwrap();
    let cfg = load_imported(&toml);

    assert_eq!(cfg.clusters.len(), 3);
    let east = &cfg.clusters["us-east"];
    assert_eq!(
        east.bootstrap_servers,
        ["b1.use1.example.com:9092", "b2.use1.example.com:9092"]
    );
    assert_eq!(east.client_id, "mm2-us-east");
    let west = &cfg.clusters["us-west"];
    assert_eq!(
        west.bootstrap_servers,
        ["b1.usw2.example.com:9092", "b2.usw2.example.com:9092"]
    );
    assert_eq!(west.request_timeout, Duration::from_secs(45));
    assert_eq!(west.metadata_refresh_interval, Duration::from_secs(120));
    assert_eq!(
        cfg.clusters["analytics"].bootstrap_servers,
        ["b1.analytics.example.com:9092"]
    );

    let names: Vec<(&str, bool)> = cfg
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.enabled))
        .collect();
    assert_eq!(
        names,
        [
            ("us-east-to-us-west", true),
            ("us-west-to-us-east", true),
            ("us-east-to-analytics", true),
            ("us-west-to-analytics", false)
        ]
    );

    // Active/active with prefix naming: cycles are refused per topic.
    let e2w = &cfg.flows[0];
    assert_eq!(e2w.policy.kind(), NamingPolicy::Prefix);
    assert_eq!(e2w.replication_factor, Some(3));
    assert_eq!(
        e2w.topic_decision("orders"),
        TopicDecision::Replicate {
            target_topic: "us-east.orders".into()
        }
    );
    assert_eq!(e2w.topic_decision("us-west.orders"), TopicDecision::Cycle);
    // The legacy `topics.blacklist` with a continuation line became the exclude list.
    assert_eq!(e2w.topic_decision("scratch-1"), TopicDecision::Filtered);
    assert_eq!(e2w.topic_decision("tmp.x"), TopicDecision::Filtered);
    assert!(!e2w.syncs_group("test-group"));
    assert!(e2w.syncs_group("billing"));
    assert!(!e2w.syncs_topic_config("retention.bytes"));
    assert!(e2w.sync.group_offsets);
    assert_eq!(e2w.start_position, StartPosition::Earliest);
    assert_eq!(e2w.intervals.topic_refresh, Duration::from_secs(30));
    assert_eq!(
        e2w.intervals.group_sync,
        Duration::from_secs(20),
        "the shorter of the two MM2 group cadences"
    );
    assert_eq!(e2w.intervals.checkpoint, Duration::from_secs(15));
    assert_eq!(e2w.intervals.heartbeat, Duration::from_secs(5));

    // Per-flow overrides.
    let analytics = &cfg.flows[2];
    assert_eq!(analytics.policy.kind(), NamingPolicy::Identity);
    assert_eq!(
        analytics.topic_decision("orders-eu"),
        TopicDecision::Replicate {
            target_topic: "orders-eu".into()
        }
    );
    assert_eq!(
        analytics.topic_decision("inventory"),
        TopicDecision::Filtered
    );
    assert!(!analytics.sync.group_offsets && !analytics.sync.checkpoints);
    // `sync.topic.acls.enabled = false` in the fixture maps to `sync.topic_acls`.
    assert!(!analytics.sync.topic_acls);
    assert_eq!(analytics.start_position, StartPosition::Latest);

    let keys: Vec<&str> = unmapped.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "dedicated.mode.enable.internal.rest",
            "key.converter",
            "value.converter",
            "offset.flush.interval.ms",
            "tasks.max",
            "offset-syncs.topic.location",
            "offset.lag.max",
            "us-east->analytics.tasks.max",
            "us-west.producer.compression.type",
            "us-west.producer.linger.ms",
            "analytics.ssl.truststore.location",
            "analytics.ssl.truststore.password",
        ]
    );
    for u in &unmapped {
        assert!(u.line > 0 && !u.reason.is_empty(), "{u:?}");
    }
    let pw = unmapped
        .iter()
        .find(|u| u.key == "analytics.ssl.truststore.password")
        .unwrap();
    assert_eq!(pw.value, "<redacted>");
    // analytics has no `security.protocol`: PLAINTEXT, so Kafka ignores its ssl.* keys too.
    assert!(
        pw.reason
            .contains("ignored, as Kafka does: `security.protocol` is PLAINTEXT"),
        "{pw:?}"
    );
    let tasks = unmapped.iter().find(|u| u.key == "tasks.max").unwrap();
    assert!(tasks.reason.contains("no Connect tasks"), "{tasks:?}");
    assert_eq!(tasks.line, 20);
}

#[test]
fn example_mm2_properties_convert_and_validate() {
    let (toml, unmapped) = import_mm2(&data("../../examples/mm2.properties")).unwrap();
    let cfg = load_imported(&toml);
    assert_eq!(cfg.enabled_flows().count(), 1);
    assert!(unmapped.iter().any(|u| u.key == "tasks.max"));
}

#[test]
fn mm2_defaults_that_change_behaviour_are_kept() {
    let (toml, unmapped) = import_mm2("clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n").unwrap();
    assert!(unmapped.is_empty(), "{unmapped:?}");
    let cfg = load_imported(&toml);
    let flow = &cfg.flows[0];
    assert!(
        !flow.sync.group_offsets,
        "MM2's sync.group.offsets.enabled defaults to false"
    );
    assert_eq!(
        flow.replication_factor,
        Some(2),
        "MM2's replication.factor defaults to 2"
    );
    assert_eq!(flow.topic_decision("x.internal"), TopicDecision::Filtered);
}

#[test]
fn flows_are_off_unless_enabled_like_mm2() {
    let (toml, _) = import_mm2(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.topics = x\n",
    )
    .unwrap();
    let cfg = load_imported(&toml);
    assert!(!cfg.flows[0].enabled);
}

#[test]
fn sasl_becomes_a_table_with_the_password_from_the_environment() {
    let text = "clusters = a, b\n\
        a.bootstrap.servers = a:9093\n\
        a.security.protocol = SASL_SSL\n\
        a.sasl.mechanism = SCRAM-SHA-512\n\
        a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"mm2\" password=\"hunter2\";\n\
        b.bootstrap.servers = b:9092\n\
        a->b.enabled = true\n";
    let (toml, unmapped) = import_mm2(text).unwrap();
    assert!(
        !toml.contains("hunter2"),
        "the password must not be copied:\n{toml}"
    );
    assert!(toml.contains("password = \"${A_SASL_PASSWORD}\""), "{toml}");
    assert!(unmapped.iter().all(|u| !u.value.contains("hunter2")));
    let file = parse_str(&toml, "t", &|_| Some("pw".into())).unwrap();
    let sasl = file.clusters["a"].security.sasl.as_ref().unwrap();
    assert_eq!(sasl.username.as_deref(), Some("mm2"));
    // The imported config validates, with the password from the environment.
    let cfg = load_str(&toml, "t", &|_| Some("pw".into())).expect("valid");
    assert_eq!(cfg.clusters["a"].security.protocol_name(), "SASL_SSL");
}

#[test]
fn missing_bootstrap_servers_come_from_the_environment() {
    let (toml, unmapped) =
        import_mm2("clusters = a, b\nb.bootstrap.servers = b:1\na->b.enabled = true\n").unwrap();
    assert!(toml.contains("${A_BOOTSTRAP_SERVERS}"), "{toml}");
    assert!(
        unmapped
            .iter()
            .any(|u| u.key == "a.bootstrap.servers" && u.reason.contains("A_BOOTSTRAP_SERVERS"))
    );
    let cfg = load_str(&toml, "t", &|n| {
        (n == "A_BOOTSTRAP_SERVERS").then(|| "a:1".to_owned())
    })
    .unwrap();
    assert_eq!(cfg.clusters["a"].bootstrap_servers, ["a:1"]);
}

#[test]
fn config_providers_become_variables_and_custom_classes_are_unmapped() {
    let text = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n\
        topic.filter.class = com.example.MyFilter\n\
        b.ssl.keystore.password = ${file:/etc/secrets.properties:ks}\n";
    let (toml, unmapped) = import_mm2(text).unwrap();
    let reason = |k: &str| {
        unmapped
            .iter()
            .find(|u| u.key == k)
            .map(|u| u.reason.clone())
            .unwrap_or_default()
    };
    assert!(reason("topic.filter.class").contains("custom filter classes"));
    assert!(reason("b.ssl.keystore.password").contains("ignored"));
    load_imported(&toml);
}

#[test]
fn import_errors() {
    assert_eq!(
        import_mm2("a.bootstrap.servers = x:1\n"),
        Err(ImportError::NoClusters)
    );
    assert_eq!(import_mm2("clusters =\n"), Err(ImportError::NoClusters));
    let e = import_mm2("clusters = a\nx = \\uZZZZ\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a valid properties file: line 2: malformed \\uXXXX escape"
    );
}

#[test]
fn literal_dollar_braces_survive_the_round_trip() {
    let text = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\na.client.id = x\n\
        a->b.replication.policy.separator = _\n";
    let (toml, _) = import_mm2(text).unwrap();
    let cfg = load_imported(&toml);
    assert_eq!(cfg.flows[0].policy.remote_topic("t"), "a_t");
}

proptest! {
    /// Whatever the input, the importer does not panic, and what it writes always parses
    /// as a Strait config file (validation may still find problems to fix by hand).
    #[test]
    fn import_output_always_parses(
        entries in proptest::collection::vec(
            (
                prop_oneof![
                    Just("clusters".to_owned()),
                    "[ab]\\.(bootstrap\\.servers|client\\.id|security\\.protocol|request\\.timeout\\.ms)",
                    "[ab]->[ab]\\.(enabled|topics|topics\\.exclude|replication\\.factor|replication\\.policy\\.separator|emit\\.checkpoints\\.interval\\.seconds)",
                    "(groups|tasks\\.max|sync\\.group\\.offsets\\.enabled|[a-z.]{1,12})",
                ],
                "[ -~]{0,20}",
            ),
            0..12,
        )
    ) {
        let text: String = entries.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        if let Ok((toml, _)) = import_mm2(&text) {
            let parsed = parse_str(&toml, "imported.toml", &|_| Some("x:1".to_owned()));
            prop_assert!(parsed.is_ok(), "{:?}\n--- input\n{}\n--- output\n{}", parsed.err().map(|e| e.to_string()), text, toml);
        }
    }
}

#[test]
fn exactly_once_source_support_and_the_transaction_boundary_interval_map_to_delivery() {
    let (toml, unmapped) = import_mm2(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n\
         a->b.enabled = true\nexactly.once.source.support = enabled\n\
         transaction.boundary = interval\ntransaction.boundary.interval.ms = 500\n",
    )
    .unwrap();
    assert!(unmapped.is_empty(), "{unmapped:?}");
    let flow = &load_imported(&toml).flows[0];
    assert!(flow.delivery.exactly_once(), "{toml}");
    assert_eq!(
        flow.delivery.transaction_interval,
        Duration::from_millis(500)
    );
    assert_eq!(flow.delivery.transactional_id, "strait.a-to-b");

    let (toml, unmapped) = import_mm2(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n\
         a->b.enabled = true\nexactly.once.source.support = preparing\n\
         transaction.boundary = connector\n",
    )
    .unwrap();
    assert!(!load_imported(&toml).flows[0].delivery.exactly_once());
    assert_eq!(unmapped.len(), 1, "{unmapped:?}");
    assert_eq!(unmapped[0].key, "transaction.boundary");

    // The target cluster's own worker setting.
    let (toml, unmapped) = import_mm2(
        "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n\
         a->b.enabled = true\nb.exactly.once.source.support = enabled\n",
    )
    .unwrap();
    assert!(unmapped.is_empty(), "{unmapped:?}");
    assert!(load_imported(&toml).flows[0].delivery.exactly_once());
}

/// Three clusters and two enabled flows, with the keys the rules below are about.
const PAIR: &str =
    "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n";

fn reason_of(unmapped: &[UnmappedKey], key: &str) -> String {
    unmapped
        .iter()
        .filter(|u| u.key == key)
        .map(|u| u.reason.clone())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn a_templated_topics_value_fails_the_import_instead_of_replicating_everything() {
    for (key, value) in [
        ("a->b.topics", "${file:/etc/mm2/filters.properties:topics}"),
        ("topics", "orders, ${vault:kv/mm2:topics}"),
        (
            "topics.exclude",
            "${file:/etc/mm2/filters.properties:exclude}",
        ),
        ("topics.blacklist", "${a.b}"),
        ("a->b.groups", "${directory:/etc/mm2:groups}"),
        ("groups.exclude", "${file:/x:y}"),
        ("groups.blacklist", "${file:/x:y}"),
    ] {
        let text = format!("{PAIR}{key} = {value}\n");
        match import_mm2(&text) {
            Err(e @ ImportError::TemplatedFilter { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(&format!("`{key}`")), "{msg}");
                assert!(msg.contains("line 5"), "{msg}");
            }
            other => panic!("{key}: {other:?}"),
        }
    }
}

#[test]
fn an_environment_variable_in_topics_is_carried_over() {
    let text = format!("{PAIR}topics = ${{env:MM2_TOPICS}}, audit\ngroups = ${{MM2_GROUPS}}\n");
    let (toml, unmapped) = import_mm2(&text).unwrap();
    assert!(toml.contains("\"${MM2_TOPICS}\""), "{toml}");
    assert!(toml.contains("\"${MM2_GROUPS}\""), "{toml}");
    let env = reason_of(&unmapped, "environment");
    assert!(
        env.contains("MM2_TOPICS") && env.contains("MM2_GROUPS"),
        "{env}"
    );
    let cfg = load_str(&toml, "imported.toml", &|v| {
        (v == "MM2_TOPICS")
            .then(|| "orders".to_owned())
            .or(Some("g".to_owned()))
    })
    .unwrap();
    let f = &cfg.flows[0];
    assert!(matches!(
        f.topic_decision("orders"),
        TopicDecision::Replicate { .. }
    ));
    assert!(matches!(
        f.topic_decision("audit"),
        TopicDecision::Replicate { .. }
    ));
    assert_eq!(f.topic_decision("payments"), TopicDecision::Filtered);
}

#[test]
fn internal_topics_stay_excluded_whatever_topics_exclude_says() {
    let (toml, _) = import_mm2(&format!("{PAIR}topics.exclude = scratch.*\n")).unwrap();
    let cfg = load_imported(&toml);
    let f = &cfg.flows[0];
    for internal in [
        "__consumer_offsets",
        "__transaction_state",
        ".hidden",
        "connect-offsets.internal",
        "connect-status-internal",
        "mm2-offsets.a.internal",
        "a.checkpoints.internal",
        "mm2-offset-syncs.b.internal",
        "scratch-1",
    ] {
        // `mm2-offset-syncs.b.internal` also reads as coming from b (a cycle).
        let d = f.topic_decision(internal);
        assert!(
            !matches!(d, TopicDecision::Replicate { .. }),
            "{internal}: {d:?}"
        );
    }
    assert_eq!(f.topic_decision(".hidden"), TopicDecision::Filtered);
    assert!(matches!(
        f.topic_decision("orders"),
        TopicDecision::Replicate { .. }
    ));
    // Without `topics.exclude`, MM2's default list plus the internal ones.
    let (toml, _) = import_mm2(PAIR).unwrap();
    let f = &load_imported(&toml).flows[0];
    assert_eq!(f.topic_decision(".hidden"), TopicDecision::Filtered);
    assert_eq!(f.topic_decision("x.replica"), TopicDecision::Filtered);
}

#[test]
fn the_identity_hack_maps_to_identity_naming() {
    // MM2 before 3.0: no IdentityReplicationPolicy, so an empty separator and alias.
    let text = format!("{PAIR}replication.policy.separator =\nsource.cluster.alias =\n");
    let (toml, unmapped) = import_mm2(&text).unwrap();
    let f = &load_imported(&toml).flows[0];
    assert_eq!(f.policy.kind(), NamingPolicy::Identity);
    assert_eq!(f.policy.remote_topic("orders"), "orders");
    assert!(reason_of(&unmapped, "replication.policy.separator").contains("identity"));
    // Strimzi's own identity policy class with `replication.policy.separator: ""`.
    let text = format!(
        "{PAIR}a->b.replication.policy.class = io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy\n\
         a->b.replication.policy.separator =\n"
    );
    let (toml, _) = import_mm2(&text).unwrap();
    let f = &load_imported(&toml).flows[0];
    assert_eq!(f.policy.remote_topic("orders"), "orders");
}

#[test]
fn a_source_cluster_alias_names_the_replicas() {
    let (toml, _) = import_mm2(&format!("{PAIR}source.cluster.alias = dc1\n")).unwrap();
    let f = &load_imported(&toml).flows[0];
    assert_eq!(f.policy.remote_topic("orders"), "dc1.orders");
    let text = format!(
        "{PAIR}a->b.source.cluster.alias = primary\na->b.replication.policy.separator = _\n"
    );
    let (toml, _) = import_mm2(&text).unwrap();
    assert!(toml.contains("alias = \"primary\""), "{toml}");
    let f = &load_imported(&toml).flows[0];
    assert_eq!(f.policy.remote_topic("orders"), "primary_orders");
    // The alias equal to the cluster key is the default, not written.
    let (toml, _) = import_mm2(&format!("{PAIR}source.cluster.alias = a\n")).unwrap();
    assert!(!toml.contains("alias ="), "{toml}");
}

#[test]
fn a_custom_replication_policy_fails_unless_policy_is_chosen() {
    let text = format!(
        "{PAIR}replication.policy.separator = -\nreplication.policy.class = com.example.MyPolicy\n"
    );
    let e = import_mm2(&text).unwrap_err();
    assert!(matches!(e, ImportError::CustomPolicy { .. }));
    let msg = e.to_string();
    for part in [
        "com.example.MyPolicy",
        "--policy identity",
        "--policy prefix",
        "separator \"-\"",
        "line 6",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    for (policy, named) in [
        (NamingPolicy::Identity, "orders"),
        (NamingPolicy::Prefix, "a-orders"),
    ] {
        let options = ImportOptions {
            policy: Some(policy),
            ..ImportOptions::default()
        };
        let (toml, unmapped) = import_mm2_with(&text, &options).unwrap();
        let f = &load_imported(&toml).flows[0];
        assert_eq!(f.policy.remote_topic("orders"), named);
        assert!(reason_of(&unmapped, "replication.policy.class").contains("--policy"));
    }
    // MM2's own two, by simple or qualified name, need no choice.
    for class in [
        "DefaultReplicationPolicy",
        "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "IdentityReplicationPolicy",
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    ] {
        import_mm2(&format!("{PAIR}replication.policy.class = {class}\n")).unwrap();
    }
}

#[test]
fn refresh_topics_disabled_is_refused_with_the_reason() {
    for key in ["refresh.topics.enabled", "a->b.refresh.topics.enabled"] {
        let e = import_mm2(&format!("{PAIR}{key} = false\n")).unwrap_err();
        assert!(matches!(e, ImportError::RefreshDisabled { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(key) && msg.contains("always discovers new topics"),
            "{msg}"
        );
    }
    import_mm2(&format!("{PAIR}refresh.topics.enabled = true\n")).unwrap();
}

#[test]
fn a_duplicate_key_is_reported_with_both_lines_and_the_winner() {
    let text = format!("{PAIR}topics = orders\ntasks.max = 4\ntopics = payments\n");
    let (toml, unmapped) = import_mm2(&text).unwrap();
    let dup: Vec<&UnmappedKey> = unmapped.iter().filter(|u| u.key == "topics").collect();
    assert_eq!(dup.len(), 1, "{unmapped:?}");
    assert_eq!(dup[0].line, 5);
    assert!(
        dup[0].reason.contains("line 7") && dup[0].reason.contains("last entry wins"),
        "{}",
        dup[0].reason
    );
    let f = &load_imported(&toml).flows[0];
    assert!(matches!(
        f.topic_decision("payments"),
        TopicDecision::Replicate { .. }
    ));
    assert_eq!(f.topic_decision("orders"), TopicDecision::Filtered);
}

#[test]
fn naming_fixture_with_aliases_and_internal_excludes_validates() {
    let (toml, unmapped) = import_mm2(&data("tests/data/mm2-naming.properties")).unwrap();
    let cfg = load_imported(&toml);
    let [primary, legacy] = &cfg.flows[..] else {
        panic!("{toml}")
    };
    assert_eq!(primary.policy.remote_topic("orders"), "dc1.orders");
    assert_eq!(
        primary.topic_decision("__consumer_offsets"),
        TopicDecision::Filtered
    );
    assert_eq!(primary.topic_decision("tmp-1"), TopicDecision::Filtered);
    assert_eq!(legacy.policy.remote_topic("orders"), "orders");
    assert!(
        reason_of(&unmapped, "primary.bootstrap.servers").contains("line 4"),
        "{unmapped:#?}"
    );
}

#[test]
fn config_provider_references_become_variables_with_the_export_command() {
    let (toml, unmapped) = import_mm2(&data("tests/data/mm2-providers.properties")).unwrap();
    for var in [
        "${ONPREM_BOOTSTRAP}",
        "${BOOTSTRAP}",
        "${MM2_TOPICS}",
        "${CLOUD_CLIENT_ID}",
    ] {
        assert!(toml.contains(var), "{var}: {toml}");
    }
    let env = reason_of(&unmapped, "environment");
    assert!(
        env.contains("BOOTSTRAP (from `${file:/opt/mm2/secrets/cloud.properties:bootstrap}`: export BOOTSTRAP=")
            && env.contains("'/opt/mm2/secrets/cloud.properties'"),
        "{env}"
    );
    assert!(
        env.contains("export CLOUD_CLIENT_ID=\"$(cat '/opt/mm2/ids/cloud-client-id')\""),
        "{env}"
    );
    // Parsed with the variables set (validation would also read the CA file).
    let file = parse_str(&toml, "imported.toml", &|v| match v {
        "MM2_TOPICS" => Some("orders".to_owned()),
        "CLOUD_CLIENT_ID" => Some("mm2-cloud".to_owned()),
        _ => Some("h:9092".to_owned()),
    })
    .unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(file.clusters["onprem"].bootstrap_servers, ["h:9092"]);
    assert_eq!(file.clusters["cloud"].client_id, "mm2-cloud");
    assert_eq!(file.flows[0].topics.include, ["orders"]);
}

#[test]
fn a_jaas_line_keeps_its_literal_parts_and_only_the_templated_part_becomes_a_variable() {
    let (toml, unmapped) = import_mm2(&data("tests/data/mm2-providers.properties")).unwrap();
    assert!(toml.contains("username = \"mirror-maker\""), "{toml}");
    assert!(toml.contains("password = \"${SASL_PASSWORD}\""), "{toml}");
    assert!(!toml.contains("CLOUD_SASL_PASSWORD"), "{toml}");
    assert!(reason_of(&unmapped, "environment").contains("sasl\\.password"));
    let text = format!(
        "{PAIR}b.security.protocol = SASL_PLAINTEXT\nb.sasl.mechanism = PLAIN\n\
         b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"${{env:MM2_USER}}\" password=\"pre-${{env:MM2_PW}}\";\n"
    );
    let (toml, _) = import_mm2(&text).unwrap();
    assert!(toml.contains("username = \"${MM2_USER}\""), "{toml}");
    // Literal text around a secret's reference is secret too: not copied.
    assert!(
        toml.contains("password = \"${B_SASL_PASSWORD}\"") && !toml.contains("pre-"),
        "{toml}"
    );
}

#[test]
fn a_templated_value_is_never_silently_dropped() {
    let (_, unmapped) = import_mm2(&data("tests/data/mm2-providers.properties")).unwrap();
    assert!(
        reason_of(&unmapped, "onprem.client.id").contains("neither `${NAME}`"),
        "{unmapped:#?}"
    );
    let tasks = unmapped.iter().find(|u| u.key == "tasks.max").unwrap();
    assert!(tasks.reason.contains("Connect tasks"), "{tasks:?}");
    assert_eq!(tasks.value, "${env:MM2_TASKS}", "shown as written");
    let (_, unmapped) = import_mm2(&format!(
        "{PAIR}a->b.emit.heartbeats.enabled = ${{env:HB}}\n"
    ))
    .unwrap();
    assert!(
        reason_of(&unmapped, "a->b.emit.heartbeats.enabled")
            .contains("cannot stand for a number, a boolean"),
        "{unmapped:#?}"
    );
}

#[test]
fn two_different_secrets_with_one_key_name_get_two_variables() {
    let text = format!(
        "{PAIR}a.security.protocol = SASL_SSL\nb.security.protocol = SASL_SSL\nsasl.mechanism = PLAIN\n\
         a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"${{file:/s/a.properties:password}}\";\n\
         b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"${{file:/s/b.properties:password}}\";\n"
    );
    let (toml, _) = import_mm2(&text).unwrap();
    assert!(
        toml.contains("\"${PASSWORD}\"") && toml.contains("\"${PASSWORD_2}\""),
        "{toml}"
    );
}

fn dedicated_msk() -> Vec<UnmappedKey> {
    let (toml, unmapped) = import_mm2(&data("tests/data/mm2-dedicated-msk.properties")).unwrap();
    parse_str(&toml, "imported.toml", &|_| Some("eu-west-1".to_owned()))
        .unwrap_or_else(|e| panic!("{e}"));
    unmapped
}

#[test]
fn connect_worker_settings_are_named_as_such() {
    let unmapped = dedicated_msk();
    // Four `msk.*.storage.*` keys with one reason: one entry.
    let storage = unmapped
        .iter()
        .find(|u| u.key == "msk.offset.*")
        .map(|u| &u.reason);
    let config = reason_of(&unmapped, "msk.config.storage.topic");
    let group = reason_of(&unmapped, "msk.group.id");
    let converter = reason_of(&unmapped, "key.converter");
    for r in [config.as_str(), group.as_str(), converter.as_str()] {
        assert!(
            r.contains("Kafka Connect worker setting"),
            "{r}: {unmapped:#?}"
        );
    }
    assert!(
        storage.is_none_or(|r| r.contains("Kafka Connect worker")),
        "{unmapped:#?}"
    );
    assert!(reason_of(&unmapped, "tasks.max").contains("no Connect tasks"));
}

#[test]
fn client_overrides_are_named_as_settings_strait_makes_itself() {
    let unmapped = dedicated_msk();
    let overrides = unmapped
        .iter()
        .find(|u| u.key == "producer.*")
        .map(|u| u.reason.clone());
    assert!(
        overrides
            .as_deref()
            .is_some_and(|r| r.contains("3 keys") && r.contains("client override")),
        "{unmapped:#?}"
    );
    assert!(
        reason_of(&unmapped, "onprem->msk.producer.acks").contains("producer tuning"),
        "{unmapped:#?}"
    );
    assert!(reason_of(&unmapped, "msk.producer.buffer.memory").contains("producer tuning"));
}

#[test]
fn per_prefix_noise_is_collapsed_into_one_entry() {
    let unmapped = dedicated_msk();
    let consumer: Vec<&UnmappedKey> = unmapped
        .iter()
        .filter(|u| u.key.starts_with("onprem.consumer"))
        .collect();
    assert_eq!(consumer.len(), 1, "{consumer:#?}");
    assert_eq!(consumer[0].key, "onprem.consumer.*");
    assert!(
        consumer[0]
            .reason
            .starts_with("5 keys (lines 31, 32, 33, 34, 35): per-client"),
        "{}",
        consumer[0].reason
    );
    // Below the threshold, keys stay listed one by one.
    let text = format!("{PAIR}a.consumer.max.poll.records = 5\na.consumer.fetch.min.bytes = 1\n");
    let (_, unmapped) = import_mm2(&text).unwrap();
    assert_eq!(
        unmapped
            .iter()
            .filter(|u| u.key.starts_with("a.consumer."))
            .count(),
        2
    );
}

#[test]
fn the_msk_iam_callback_handler_is_named_msk_iam() {
    let unmapped = dedicated_msk();
    let handler = reason_of(&unmapped, "msk.sasl.client.callback.handler.class");
    assert!(
        handler.contains("AWS MSK IAM") && handler.contains("aws-msk-iam"),
        "{handler}"
    );
    assert!(!handler.contains("custom"), "{handler}");
}
