use super::*;

#[test]
fn paths_display_like_toml_keys() {
    let p = KeyPath::root()
        .key("flows")
        .index(0)
        .key("topics")
        .key("include")
        .index(2);
    assert_eq!(p.to_string(), "flows[0].topics.include[2]");
    assert_eq!(
        KeyPath::root().key("clusters").key("a.b").to_string(),
        "clusters.\"a.b\""
    );
}

#[test]
fn errors_name_file_line_key_and_expectation() {
    let err = ConfigError::Invalid {
        origin: "strait.toml".into(),
        problems: vec![
            Problem::new(
                KeyPath::root()
                    .key("clusters")
                    .key("a")
                    .key("bootstrap_server"),
                "unknown key",
            )
            .expected("one of `bootstrap_servers`, `client_id`")
            .suggest(Some("bootstrap_servers".into()))
            .at_line(3),
        ],
    };
    assert_eq!(
        err.to_string(),
        "strait.toml:3: clusters.a.bootstrap_server: unknown key; expected one of \
             `bootstrap_servers`, `client_id`; did you mean `bootstrap_servers`?"
    );
}
