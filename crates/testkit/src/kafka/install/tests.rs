use super::*;

#[test]
fn parse_env_reads_key_value_lines() {
    let text = "JAVA=/usr/bin/java\nKAFKA_LIBS=/x/libs\nMM2_LIBS=\n";
    assert_eq!(parse_env(text, "JAVA"), Some("/usr/bin/java"));
    assert_eq!(parse_env(text, "KAFKA_LIBS"), Some("/x/libs"));
    assert_eq!(
        parse_env(text, "MM2_LIBS"),
        None,
        "an empty value is absent"
    );
    assert_eq!(parse_env(text, "OTHER"), None);
}

#[test]
fn jar_version_reads_the_marker_jar() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["kafka-clients-4.4.0.jar", "kafka_2.13-4.4.0.jar", "x.txt"] {
        std::fs::write(dir.path().join(name), b"").unwrap();
    }
    let install = JavaInstall {
        java: PathBuf::from("java"),
        libs: dir.path().to_owned(),
    };
    assert_eq!(install.jar_version("kafka_2.13").as_deref(), Some("4.4.0"));
    assert_eq!(install.jar_version("connect-mirror"), None);
    assert!(has_jars(dir.path()));
}
