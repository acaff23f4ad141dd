use super::*;

#[test]
fn reasons_cover_prefixed_keys() {
    assert!(reason("tasks.max").contains("Connect tasks"));
    assert!(reason("a->b.tasks.max").contains("Connect tasks"));
    assert!(reason("a.ssl.cipher.suites").contains("TLS"));
    assert!(reason("ssl.truststore.location").contains("no cluster"));
    assert!(reason("a.sasl.kerberos.service.name").contains("Kerberos"));
    assert!(reason("a.consumer.ssl.keystore.location").contains("one security setting"));
    assert!(reason("consumer.sasl.jaas.config").contains("one security setting"));
    assert!(reason("b.producer.compression.type").contains("compression"));
    assert!(reason("offset.storage.topic").contains("Kafka Connect"));
    assert!(reason("something.else").contains("not a MirrorMaker 2 key"));
}

#[test]
fn secrets_are_redacted() {
    assert_eq!(shown("a.ssl.key.password", "hunter2"), "<redacted>");
    assert_eq!(
        shown("value.converter.basic.auth.user.info", "KEY:SuperSecret123"),
        "<redacted>"
    );
    assert_eq!(
        shown(
            "value.converter.schema.registry.basic.auth.user.info",
            "k:s"
        ),
        "<redacted>"
    );
    assert_eq!(shown("a.confluent.api.key", "ABC"), "<redacted>");
    assert_eq!(shown("a.sasl.jaas.config", "x"), "<redacted>");
    assert_eq!(shown("a.ssl.keystore.key", "x"), "<redacted>");
    assert_eq!(
        shown(
            "a.ssl.keystore.certificate.chain",
            "-----BEGIN PRIVATE KEY-----"
        ),
        "<redacted>"
    );
    assert_eq!(shown("a.ssl.truststore.certificates", "MIIB"), "<redacted>");
    assert_eq!(shown("tasks.max", " 4 "), "4");
}
