use super::*;

fn ports(n: u16) -> Vec<NodePorts> {
    (0..n)
        .map(|i| NodePorts {
            plaintext: 9000 + i,
            controller: 9100 + i,
            secure: None,
        })
        .collect()
}

fn props(text: &str) -> std::collections::BTreeMap<&str, &str> {
    text.lines().filter_map(|l| l.split_once('=')).collect()
}

#[test]
fn every_node_is_a_voter_and_internal_topics_follow_the_node_count() {
    let ports = ports(3);
    let dir = PathBuf::from("/tmp/n2");
    let text = server_properties(&NodeLayout {
        node_id: 2,
        ports: &ports,
        log_dir: &dir,
        tls: None,
        users: &[],
        authorizer: false,
        extra: &[],
    });
    let p = props(&text);
    assert_eq!(
        p["controller.quorum.voters"],
        "1@127.0.0.1:9100,2@127.0.0.1:9101,3@127.0.0.1:9102"
    );
    assert_eq!(p["node.id"], "2");
    assert_eq!(p["advertised.listeners"], "PLAINTEXT://127.0.0.1:9001");
    assert_eq!(p["offsets.topic.replication.factor"], "3");
    assert_eq!(p["transaction.state.log.min.isr"], "2");
    assert!(!p.contains_key("authorizer.class.name"));
}

#[test]
fn security_adds_three_listeners_with_their_mechanisms() {
    let mut ports = ports(1);
    ports[0].secure = Some(SecurePorts {
        sasl_ssl: 1,
        sasl_plaintext: 2,
        ssl: 3,
    });
    let tls = TlsFiles {
        keystore: "/k.pem".into(),
        truststore: "/ca.pem".into(),
    };
    let users = vec![("alice".to_owned(), "pa\"ss".to_owned())];
    let dir = PathBuf::from("/d");
    let text = server_properties(&NodeLayout {
        node_id: 1,
        ports: &ports,
        log_dir: &dir,
        tls: Some(&tls),
        users: &users,
        authorizer: true,
        extra: &[("message.max.bytes".into(), "2000000".into())],
    });
    let p = props(&text);
    assert_eq!(
        p["advertised.listeners"],
        "PLAINTEXT://127.0.0.1:9000,SASL_SSL://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:2,SSL://127.0.0.1:3"
    );
    assert_eq!(p["listener.name.ssl.ssl.client.auth"], "required");
    // In the file, the JAAS line's `\"` is written `\\"` (the properties reader halves it).
    assert!(
        p["listener.name.sasl_ssl.plain.sasl.jaas.config"].contains(r#"user_alice="pa\\"ss""#),
        "{}",
        p["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    );
    assert_eq!(p["super.users"], SUPER_USERS);
    assert_eq!(p["message.max.bytes"], "2000000");
    assert_eq!(p["offsets.topic.replication.factor"], "1");
}

#[test]
fn scram_users_are_added_under_both_mechanisms() {
    let args = scram_format_args(&[("bob".into(), "pw".into())]);
    assert_eq!(
        args,
        [
            "--add-scram",
            "SCRAM-SHA-256=[name=bob,password=pw]",
            "--add-scram",
            "SCRAM-SHA-512=[name=bob,password=pw]"
        ]
    );
}

#[test]
fn values_are_escaped_for_the_properties_reader() {
    assert_eq!(escape("a\\b\nc"), "a\\\\b\\nc");
}
