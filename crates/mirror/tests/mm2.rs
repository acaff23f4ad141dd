//! Importing MirrorMaker 2 properties files.

use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;
use strait_mirror::config::mm2::{ImportError, import_mm2};
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
fn custom_classes_and_config_providers_are_unmapped() {
    let text = "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n\
        replication.policy.class = com.example.MyPolicy\n\
        b.ssl.keystore.password = ${file:/etc/secrets.properties:ks}\n\
        topics = literal$${not-a-var}\n";
    let (toml, unmapped) = import_mm2(text).unwrap();
    let reason = |k: &str| {
        unmapped
            .iter()
            .find(|u| u.key == k)
            .map(|u| u.reason.clone())
            .unwrap_or_default()
    };
    assert!(reason("replication.policy.class").contains("custom replication policies"));
    assert!(reason("b.ssl.keystore.password").contains("config provider"));
    assert!(reason("topics").contains("config provider"));
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
