//! The Apache Kafka fixture itself: a node starts, serves librdkafka on every listener with
//! the credentials it was given (and refuses wrong ones), keeps its log across `kill -9`
//! and a restart; three nodes replicate; MirrorMaker 2 starts.

use std::time::Duration;

use strait_testkit::kafka::{KafkaCluster, KafkaOptions, KafkaSecurity};
use strait_testkit::rdkafka::{self, ClientConfig, ConsumeOptions, ProduceOptions};
use strait_testkit::{DataGen, RecordSpec, TestPki};

fn records(n: usize) -> Vec<strait_testkit::TestRecord> {
    DataGen::new(7).records(
        n,
        &RecordSpec {
            partition: Some(0),
            ..RecordSpec::default()
        },
    )
}

fn read_all(bootstrap: &str, topic: &str, n: usize, client: &ClientConfig) -> usize {
    let options = ConsumeOptions {
        client: client.clone(),
        ..ConsumeOptions::count(n)
    };
    let got = rdkafka::consume(bootstrap, topic, &options).expect("consume");
    if got.len() != n {
        eprintln!(
            "read {} of {n} from {topic} at {bootstrap} with {client:?}",
            got.len()
        );
    }
    got.len()
}

#[test]
fn a_node_keeps_its_log_across_kill_9_and_restart() {
    let mut kafka = KafkaCluster::start(KafkaOptions::default()).expect("start Kafka");
    assert!(
        kafka.version().starts_with('4'),
        "Kafka 4.x, got {}",
        kafka.version()
    );
    rdkafka::create_topic(&kafka.bootstrap(), "t", 1, &[]).expect("create");
    rdkafka::produce(
        &kafka.bootstrap(),
        "t",
        &records(500),
        &ProduceOptions::default(),
    )
    .expect("produce");
    kafka.node_mut(0).kill9();
    assert!(!kafka.node_mut(0).is_running());
    kafka.node_mut(0).restart().expect("restart");
    assert_eq!(
        read_all(&kafka.bootstrap(), "t", 500, &ClientConfig::default()),
        500
    );
}

#[test]
fn secure_listeners_take_the_users_they_were_given_and_refuse_others() {
    let pki = TestPki::generate_temp().expect("pki");
    let kafka = KafkaCluster::start(
        KafkaOptions::default()
            .security(KafkaSecurity::new(&pki).user("alice", "alice-secret"))
            .authorizer(),
    )
    .expect("start Kafka");
    // Setup over PLAINTEXT (a super user), then read as alice, who needs ACLs.
    rdkafka::create_topic(&kafka.bootstrap(), "s", 1, &[]).expect("create");
    rdkafka::produce(
        &kafka.bootstrap(),
        "s",
        &records(50),
        &ProduceOptions::default(),
    )
    .expect("produce");
    let ca = pki.ca_cert.display().to_string();
    let scram = |mech: &str, password: &str| {
        ClientConfig::new()
            .set("security.protocol", "SASL_SSL")
            .set("sasl.mechanism", mech)
            .set("sasl.username", "alice")
            .set("sasl.password", password)
            .set("ssl.ca.location", &ca)
            .fail_fast()
    };
    let sasl_ssl = kafka.sasl_ssl_bootstrap().expect("sasl_ssl listener");
    // No ACL yet: the authorizer refuses alice.
    let denied = rdkafka::consume(
        &sasl_ssl,
        "s",
        &ConsumeOptions {
            client: scram("SCRAM-SHA-512", "alice-secret"),
            ..ConsumeOptions::count(50)
        },
    );
    assert!(
        denied.is_err(),
        "the authorizer let alice read without an ACL"
    );
    // A wrong password fails authentication.
    let wrong = rdkafka::consume(
        &sasl_ssl,
        "s",
        &ConsumeOptions {
            client: scram("SCRAM-SHA-256", "nope"),
            max_time: Duration::from_secs(5),
            ..ConsumeOptions::count(1)
        },
    );
    let err = wrong
        .expect_err("a wrong password was accepted")
        .to_string();
    assert!(err.to_lowercase().contains("auth"), "{err}");
    // With a READ ACL (granted over PLAINTEXT with the admin tools' classes), alice reads.
    grant_read(&kafka, "User:alice", "s");
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"] {
        assert_eq!(
            read_all(&sasl_ssl, "s", 50, &scram(mech, "alice-secret")),
            50,
            "{mech}"
        );
    }
    let sasl_plain = ClientConfig::new()
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", "alice")
        .set("sasl.password", "alice-secret");
    let plaintext_sasl = kafka.sasl_plaintext_bootstrap().expect("listener");
    assert_eq!(read_all(&plaintext_sasl, "s", 50, &sasl_plain), 50);
    // Mutual TLS: the client certificate's subject is the principal.
    grant_read(&kafka, "User:CN=strait-client,O=strait-testkit", "s");
    let mtls = ClientConfig::new()
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", &ca)
        .set(
            "ssl.certificate.location",
            pki.client_cert.display().to_string(),
        )
        .set("ssl.key.location", pki.client_key.display().to_string());
    let ssl = kafka.ssl_bootstrap().expect("ssl listener");
    assert_eq!(read_all(&ssl, "s", 50, &mtls), 50);
    // Without a client certificate the SSL listener refuses the handshake.
    let anonymous = ClientConfig::new()
        .set("security.protocol", "SSL")
        .set("ssl.ca.location", &ca)
        .fail_fast();
    let refused = rdkafka::consume(
        &ssl,
        "s",
        &ConsumeOptions {
            client: anonymous,
            max_time: Duration::from_secs(5),
            ..ConsumeOptions::count(1)
        },
    );
    assert!(
        refused.is_err(),
        "the SSL listener served a client without a certificate"
    );
}

/// READ on `topic` and on every group for `principal`, through kafka-acls' own classes.
fn grant_read(kafka: &KafkaCluster, principal: &str, topic: &str) {
    let install = strait_testkit::kafka::install::broker().expect("install");
    for args in [vec!["--topic", topic], vec!["--group", "*"]] {
        let status = std::process::Command::new(&install.java)
            .arg("-cp")
            .arg(install.classpath())
            .arg("-Dlog4j2.level=ERROR")
            .arg("org.apache.kafka.tools.AclCommand")
            .args(["--bootstrap-server", &kafka.bootstrap()])
            .args(["--add", "--allow-principal", principal])
            .args(["--operation", "Read", "--operation", "Describe"])
            .args(&args)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("AclCommand");
        assert!(
            status.success(),
            "kafka-acls --add for {principal} on {args:?}"
        );
    }
}

#[test]
fn three_nodes_replicate_and_survive_the_loss_of_one() {
    let mut kafka = KafkaCluster::start(KafkaOptions::default().nodes(3)).expect("start Kafka");
    rdkafka::create_topic_replicated(
        &kafka.bootstrap(),
        "r",
        3,
        3,
        &[("min.insync.replicas", "2")],
    )
    .expect("create with replication factor 3");
    let acks_all = ProduceOptions {
        client: ClientConfig::new().set("acks", "all"),
        ..ProduceOptions::default()
    };
    rdkafka::produce(&kafka.bootstrap(), "r", &records(300), &acks_all).expect("produce");
    kafka.node_mut(2).kill9();
    // Two of three replicas remain in sync: acks=all still succeeds.
    let survivors = format!(
        "{},{}",
        kafka.node(0).bootstrap(),
        kafka.node(1).bootstrap()
    );
    rdkafka::produce(&survivors, "r", &records(300), &acks_all).expect("produce on two nodes");
    assert_eq!(
        read_all(&survivors, "r", 600, &ClientConfig::default()),
        600
    );
    kafka.node_mut(2).restart().expect("restart");
    assert_eq!(
        read_all(
            &kafka.node(2).bootstrap(),
            "r",
            600,
            &ClientConfig::default()
        ),
        600
    );
}

#[test]
fn mirrormaker2_starts_between_two_clusters_and_copies_a_topic() {
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| KafkaCluster::start(KafkaOptions::default()));
        let b = s.spawn(|| KafkaCluster::start(KafkaOptions::default()));
        (a.join().unwrap().expect("a"), b.join().unwrap().expect("b"))
    });
    rdkafka::create_topic(&a.bootstrap(), "orders", 2, &[]).expect("create");
    rdkafka::produce(
        &a.bootstrap(),
        "orders",
        &records(100),
        &ProduceOptions::default(),
    )
    .expect("produce");
    let props = strait_testkit::kafka::mm2::dedicated_properties(
        "a",
        &a.bootstrap(),
        "b",
        &b.bootstrap(),
        "orders",
    );
    let mm2 = strait_testkit::kafka::Mm2::start(&props, Duration::from_secs(120)).expect("MM2");
    // MM2 creates a.orders once its source connector has seen the topic.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let copied = loop {
        match rdkafka::consume(&b.bootstrap(), "a.orders", &ConsumeOptions::count(100)) {
            Ok(records) => break records,
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) => panic!("MM2 never created a.orders on b: {e}\n{}", mm2.log_tail(30)),
        }
    };
    assert_eq!(
        copied.len(),
        100,
        "MM2 {} copied what a holds",
        mm2.version()
    );
}
