//! Importing the other forms MM2 configuration comes in: Kafka Connect REST JSON, Strimzi
//! `KafkaMirrorMaker2` YAML, and the forms that are recognised and refused.

use std::path::{Path, PathBuf};

use strait_mirror::config::mm2::{
    ImportError, ImportOptions, MirrorMaker1, UnmappedKey, import_mm2, import_mm2_with,
};
use strait_mirror::config::model::{ConfigFile, NamingPolicy};
use strait_mirror::config::{TopicDecision, load_str, parse_str};

fn data(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn reason(unmapped: &[UnmappedKey], key: &str) -> String {
    unmapped
        .iter()
        .filter(|u| u.key == key)
        .map(|u| u.reason.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Parsed with every variable set to `value` (validation would read the TLS files).
fn parse(toml: &str, value: &str) -> ConfigFile {
    parse_str(toml, "imported.toml", &|_| Some(value.to_owned()))
        .unwrap_or_else(|e| panic!("{e}\n---\n{toml}"))
}

#[test]
fn connect_rest_json_connectors_of_one_pair_become_one_flow() {
    let (toml, unmapped) = import_mm2(&data("connect-mirror-connectors.json")).unwrap();
    assert!(
        toml.starts_with("# Converted from Kafka Connect REST JSON"),
        "{toml}"
    );
    let file = parse(&toml, "x");
    assert_eq!(
        file.clusters.keys().collect::<Vec<_>>(),
        ["us-east", "us-west"]
    );
    let east = &file.clusters["us-east"];
    assert_eq!(
        east.bootstrap_servers,
        ["b1.use1.example.com:9096", "b2.use1.example.com:9096"]
    );
    let sasl = east.security.sasl.as_ref().unwrap();
    assert_eq!(sasl.username.as_deref(), Some("mm2"));
    assert!(toml.contains("password = \"${MM2_PASSWORD}\""), "{toml}");
    assert_eq!(file.flows.len(), 1);
    let f = &file.flows[0];
    assert_eq!(
        (f.source.as_str(), f.target.as_str()),
        ("us-east", "us-west")
    );
    assert!(f.enabled);
    assert_eq!(f.topics.include, ["orders.*", "payments"]);
    assert_eq!(f.groups.include, ["billing.*"]);
    assert_eq!(f.topics.replication_factor, 3);
    assert!(f.sync.group_offsets && f.sync.heartbeats && f.sync.checkpoints);
    assert!(!f.sync.topic_acls);
    assert_eq!(f.intervals.heartbeat.0.as_secs(), 5);
    assert_eq!(f.intervals.checkpoint.0.as_secs(), 30);
    // Connector keys are explained under the flow they belong to.
    assert!(reason(&unmapped, "us-east->us-west.tasks.max").contains("no Connect tasks"));
    assert!(reason(&unmapped, "us-east->us-west.key.converter").contains("Connect worker"));
    assert!(reason(&unmapped, "us-east.consumer.max.poll.records").contains("per-client"));
    assert!(reason(&unmapped, "us-west.producer.linger.ms").contains("producer tuning"));
    assert!(
        reason(&unmapped, "audit-sink.connector.class").contains("not a MirrorMaker 2 connector")
    );
    // The checkpoint connector's own `tasks.max` differed: the source connector's is kept.
    assert!(
        reason(&unmapped, "us-east->us-west.tasks.max").contains("set again with another value"),
        "{unmapped:#?}"
    );
    let cfg = load_str(&toml, "imported.toml", &|_| Some("x".to_owned()));
    // Only the CA file is missing on this machine.
    let e = cfg.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.is_empty() || e.contains("us-east-ca.pem"), "{e}");
}

#[test]
fn one_connector_config_object_imports_without_the_other_connectors_features() {
    let json = r#"{
      "connector.class": "MirrorSourceConnector",
      "source.cluster.alias": "a",
      "target.cluster.alias": "b",
      "source.cluster.bootstrap.servers": "a:9092",
      "target.cluster.bootstrap.servers": "b:9092",
      "topics": ".*"
    }"#;
    let (toml, unmapped) = import_mm2(json).unwrap();
    let cfg = load_str(&toml, "imported.toml", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let f = &cfg.flows[0];
    assert!(f.enabled);
    assert!(!f.sync.heartbeats && !f.sync.checkpoints && !f.sync.group_offsets);
    assert!(
        reason(&unmapped, "a->b.emit.heartbeats.enabled").contains("no MirrorHeartbeatConnector")
    );
    assert!(
        reason(&unmapped, "a->b.emit.checkpoints.enabled").contains("no MirrorCheckpointConnector")
    );
}

#[test]
fn a_pair_without_a_source_connector_is_imported_disabled() {
    let json = r#"{"name": "cp", "config": {
      "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
      "source.cluster.bootstrap.servers": "a:9092",
      "target.cluster.bootstrap.servers": "b:9092"}}"#;
    let (toml, unmapped) = import_mm2(json).unwrap();
    let cfg = load_str(&toml, "imported.toml", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    // MM2's default aliases.
    assert_eq!(cfg.flows[0].name, "source-to-target");
    assert!(!cfg.flows[0].enabled);
    assert!(reason(&unmapped, "source->target.enabled").contains("imported disabled"));
}

#[test]
fn the_connect_identity_hack_maps_to_identity_naming() {
    let json = r#"{"name": "src", "config": {
      "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
      "source.cluster.alias": "", "replication.policy.separator": "",
      "source.cluster.bootstrap.servers": "a:9092", "target.cluster.bootstrap.servers": "b:9092"}}"#;
    let (toml, _) = import_mm2(json).unwrap();
    let cfg = load_str(&toml, "imported.toml", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(cfg.flows[0].policy.kind(), NamingPolicy::Identity);
    assert_eq!(cfg.flows[0].policy.remote_topic("orders"), "orders");
}

#[test]
fn strimzi_kafka_mirror_maker_2_becomes_clusters_and_flows() {
    let (toml, unmapped) = import_mm2(&data("strimzi-mm2.yaml")).unwrap();
    assert!(
        toml.starts_with("# Converted from a Strimzi KafkaMirrorMaker2"),
        "{toml}"
    );
    let file = parse(&toml, "/etc/strait/x.pem");
    let dc1 = &file.clusters["dc1"];
    assert_eq!(
        dc1.bootstrap_servers,
        ["dc1-kafka-bootstrap.kafka.svc:9093"]
    );
    let sasl = dc1.security.sasl.as_ref().unwrap();
    assert_eq!(sasl.username.as_deref(), Some("mm2-user"));
    assert!(
        toml.contains("password = \"${MM2_USER_PASSWORD}\""),
        "{toml}"
    );
    assert!(
        toml.contains("ca_file = \"${DC1_CLUSTER_CA_CERT_CA_CRT_FILE}\""),
        "{toml}"
    );
    let dc2_tls = file.clusters["dc2"].security.tls.as_ref().unwrap();
    assert!(dc2_tls.cert_file.is_some() && dc2_tls.key_file.is_some());
    // The Secret names and keys are said in the TOML and in the export commands.
    assert!(
        toml.contains("key password of Kubernetes Secret mm2-user"),
        "{toml}"
    );
    let env = reason(&unmapped, "environment");
    assert!(
        env.contains("kubectl get secret mm2-user -o jsonpath='{.data.password}' | base64 -d"),
        "{env}"
    );
    assert!(env.contains("kubectl get secret mm2-dc2-user"), "{env}");

    let f = &file.flows[0];
    assert_eq!(
        (f.source.as_str(), f.target.as_str(), f.enabled),
        ("dc1", "dc2", true)
    );
    assert_eq!(f.naming.policy, NamingPolicy::Identity);
    assert_eq!(f.topics.include, ["orders.*|payments.*"]);
    assert!(f.topics.exclude.iter().any(|e| e == ".*-scratch"));
    assert_eq!(f.groups.include, ["billing-.*"]);
    assert!(f.sync.group_offsets && f.sync.heartbeats);
    assert!(
        reason(&unmapped, "dc2.config.storage.replication.factor").contains("Connect worker")
            || unmapped
                .iter()
                .any(|u| u.key == "dc2.*" && u.reason.contains("Connect worker")),
        "{unmapped:#?}"
    );
    assert!(
        unmapped
            .iter()
            .any(|u| u.key.starts_with("spec.{") && u.reason.contains("Kubernetes deployment"))
    );

    // With the Secrets written to files, the result validates, and names topics as MM2 did.
    let dir = std::env::temp_dir().join(format!("strait-mm2-forms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("secret.pem");
    std::fs::write(
        &pem,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let path = pem.display().to_string();
    let cfg = load_str(&toml, "imported.toml", &|_| Some(path.clone()))
        .unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let f = &cfg.flows[0];
    assert_eq!(
        f.topic_decision("orders.v1"),
        TopicDecision::Replicate {
            target_topic: "orders.v1".into()
        }
    );
    assert_eq!(f.topic_decision("orders-scratch"), TopicDecision::Filtered);
    assert_eq!(f.topic_decision("audit"), TopicDecision::Filtered);
    assert!(f.syncs_group("billing-eu") && !f.syncs_group("analytics"));
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

#[test]
fn yaml_of_another_kind_is_refused_by_name() {
    let e = import_mm2("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaConnect\nspec: {}\n")
        .unwrap_err();
    assert!(matches!(e, ImportError::UnsupportedForm(_)));
    assert!(e.to_string().contains("kind `KafkaConnect`"), "{e}");
}

#[test]
fn json_that_is_not_mirror_connectors_is_refused() {
    let e = import_mm2(r#"{"name": "s3", "config": {"connector.class": "S3SinkConnector"}}"#)
        .unwrap_err();
    assert!(e.to_string().contains("no MirrorSourceConnector"), "{e}");
    let e = import_mm2("[1, 2]").unwrap_err();
    assert!(
        e.to_string().contains("not Kafka Connect connector config"),
        "{e}"
    );
    let e = import_mm2("{\"a\": ").unwrap_err();
    assert!(matches!(e, ImportError::Json(_)), "{e:?}");
}

#[test]
fn a_mirror_maker_1_consumer_config_is_named_as_such() {
    let e =
        import_mm2("bootstrap.servers = src:9092\ngroup.id = mm1\nauto.offset.reset = earliest\n")
            .unwrap_err();
    assert!(
        e.to_string().contains("MirrorMaker 1 consumer.properties"),
        "{e}"
    );
    let e = import_mm2("bootstrap.servers = dst:9092\nacks = all\n").unwrap_err();
    assert!(
        e.to_string().contains("MirrorMaker 1 producer.properties"),
        "{e}"
    );
    assert_eq!(import_mm2("x = 1\n"), Err(ImportError::NoClusters));
}

#[test]
fn secrets_in_json_and_yaml_never_reach_the_output() {
    let json = r#"[{"name": "s", "config": {
      "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
      "source.cluster.alias": "a", "target.cluster.alias": "b",
      "source.cluster.bootstrap.servers": "a:1", "target.cluster.bootstrap.servers": "b:1",
      "source.cluster.security.protocol": "SASL_SSL", "source.cluster.sasl.mechanism": "PLAIN",
      "source.cluster.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"S3CR3T-J1\";",
      "source.cluster.ssl.truststore.password": "S3CR3T-J2",
      "target.producer.ssl.key.password": "S3CR3T-J3",
      "value.converter.basic.auth.user.info": "k:S3CR3T-J4"}}]"#;
    let yaml = "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaMirrorMaker2\nspec:\n  clusters:\n  - alias: a\n    bootstrapServers: a:1\n    config:\n      ssl.keystore.password: S3CR3T-Y1\n      sasl.jaas.config: x required password=\"S3CR3T-Y2\";\n  - alias: b\n    bootstrapServers: b:1\n  mirrors:\n  - sourceCluster: a\n    targetCluster: b\n    sourceConnector:\n      config:\n        producer.override.sasl.jaas.config: x required password=\"S3CR3T-Y3\";\n";
    for text in [json, yaml] {
        let result = import_mm2(text).unwrap();
        let all = format!("{}\n{:?}", result.0, result.1);
        assert!(!all.contains("S3CR3T"), "{all}");
        // A syntax error says where, not what.
        let broken = text.replacen("S3CR3T", "\"S3CR3T\" \"", 1);
        if let Err(e) = import_mm2(&broken) {
            assert!(!format!("{e} {e:?}").contains("S3CR3T"), "{e}");
        }
    }
}

proptest::proptest! {
    /// Whatever JSON or KafkaMirrorMaker2 YAML comes in, the importer does not panic, and
    /// what it writes always parses as a Strait config file.
    #[test]
    fn any_json_or_yaml_imports_without_panicking(
        keys in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("connector.class".to_owned()),
                "(source|target)\\.cluster\\.(alias|bootstrap\\.servers|security\\.protocol)",
                "(topics|groups|replication\\.policy\\.(class|separator)|tasks\\.max|[a-z.]{1,10})",
            ],
            0..8,
        ),
        values in proptest::collection::vec("[ -~]{0,12}", 8),
        yaml in "[ -~\n]{0,80}",
    ) {
        let config: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| {
                let v = if k == "connector.class" { "MirrorSourceConnector" } else { v.as_str() };
                (k.clone(), serde_json::Value::String(v.to_owned()))
            })
            .collect();
        let json = serde_json::json!([{"name": "x", "config": config}]).to_string();
        let yaml = format!("apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaMirrorMaker2\nspec:\n{yaml}");
        for text in [json, yaml] {
            if let Ok((toml, _)) = import_mm2(&text) {
                proptest::prop_assert!(parse_str(&toml, "t", &|_| Some("x".to_owned())).is_ok(), "{text}\n---\n{toml}");
            }
        }
    }
}

fn mm1(include: &str) -> ImportOptions {
    ImportOptions {
        mirror_maker_1: Some(MirrorMaker1 {
            producer: data("mm1-producer.properties"),
            include: include.to_owned(),
        }),
        ..ImportOptions::default()
    }
}

#[test]
fn a_mirror_maker_1_pair_becomes_one_identity_flow_of_records_only() {
    let (toml, unmapped) =
        import_mm2_with(&data("mm1-consumer.properties"), &mm1("orders.*,payments")).unwrap();
    assert!(
        toml.starts_with("# Converted from a MirrorMaker 1"),
        "{toml}"
    );
    let cfg = load_str(&toml, "imported.toml", &|_| Some("pw".to_owned()))
        .unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let source = &cfg.clusters["source"];
    assert_eq!(
        source.bootstrap_servers,
        ["kafka-1.onprem.example:9092", "kafka-2.onprem.example:9092"]
    );
    assert_eq!(source.client_id, "mm1-onprem");
    assert_eq!(
        cfg.clusters["target"].bootstrap_servers,
        ["kafka-1.new.example:9092"]
    );
    let f = &cfg.flows[0];
    assert!(f.enabled);
    assert_eq!(
        f.topic_decision("orders.eu"),
        TopicDecision::Replicate {
            target_topic: "orders.eu".into()
        }
    );
    assert!(matches!(
        f.topic_decision("payments"),
        TopicDecision::Replicate { .. }
    ));
    assert_eq!(f.topic_decision("audit"), TopicDecision::Filtered);
    assert!(!f.sync.heartbeats && !f.sync.checkpoints && !f.sync.group_offsets);
    assert!(!f.sync.topic_configs && !f.sync.topic_acls);
    assert_eq!(
        f.replication_factor, None,
        "the broker's default, as auto-created topics had"
    );
    assert!(reason(&unmapped, "group.id").contains("does not read its committed offsets"));
    // Three consumer and four producer tuning keys, one entry each.
    assert!(
        reason(&unmapped, "source.consumer.*").starts_with("3 keys"),
        "{unmapped:#?}"
    );
    assert!(reason(&unmapped, "source.consumer.*").contains("per-client"));
    assert!(reason(&unmapped, "target.producer.*").contains("producer tuning"));
    // The consumer's password went to a variable, not into the TOML or the list.
    assert!(!format!("{toml}{unmapped:?}").contains("mm1-consumer-pw"));
}

#[test]
fn a_mirror_maker_1_file_without_its_other_parts_says_what_to_add() {
    let e = import_mm2(&data("mm1-consumer.properties")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("MirrorMaker 1 consumer.properties")
            && msg.contains("--producer-config")
            && msg.contains("--include"),
        "{msg}"
    );
    let e = import_mm2_with("clusters = a, b\n", &mm1(".*")).unwrap_err();
    assert!(e.to_string().contains("it is an MM2 file"), "{e}");
}

#[test]
fn keys_of_the_other_file_are_all_listed() {
    // The producer file's keys have no line in the consumer file: none may hide another.
    let options = ImportOptions {
        mirror_maker_1: Some(MirrorMaker1 {
            producer: "bootstrap.servers=b:1\nacks=all\nlinger.ms=5\n".to_owned(),
            include: ".*".to_owned(),
        }),
        ..ImportOptions::default()
    };
    let (_, unmapped) = import_mm2_with("bootstrap.servers=a:1\n", &options).unwrap();
    for key in ["target.producer.acks", "target.producer.linger.ms"] {
        assert!(
            reason(&unmapped, key).contains("producer tuning"),
            "{key}: {unmapped:#?}"
        );
    }
}

#[test]
fn strimzi_v1_target_and_inline_mirror_sources_are_read() {
    // Strimzi's v1 API: the target cluster in `spec.target`, each source inside its mirror.
    let yaml = "\
apiVersion: kafka.strimzi.io/v1
kind: KafkaMirrorMaker2
metadata:
  name: to-dc2
spec:
  target:
    alias: dc2
    bootstrapServers: dc2-kafka-bootstrap:9092
  mirrors:
    - source:
        alias: dc1
        bootstrapServers: dc1-kafka-bootstrap:9092
      sourceConnector:
        config:
          replication.factor: 3
      topicsPattern: \"orders.*\"
";
    let (toml, unmapped) = import_mm2(yaml).unwrap();
    let cfg = load_str(&toml, "imported.toml", &|_| None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(
        cfg.clusters["dc2"].bootstrap_servers,
        ["dc2-kafka-bootstrap:9092"]
    );
    assert_eq!(
        cfg.clusters["dc1"].bootstrap_servers,
        ["dc1-kafka-bootstrap:9092"]
    );
    let f = &cfg.flows[0];
    assert_eq!(
        (f.source.as_str(), f.target.as_str(), f.enabled),
        ("dc1", "dc2", true)
    );
    assert_eq!(
        f.topic_decision("orders.eu"),
        TopicDecision::Replicate {
            target_topic: "dc1.orders.eu".into()
        }
    );
    assert!(
        reason(&unmapped, "dc1->dc2.emit.heartbeats.enabled")
            .contains("no MirrorHeartbeatConnector")
    );
}
