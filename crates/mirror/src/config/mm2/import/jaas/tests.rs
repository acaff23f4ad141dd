use super::*;

const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

#[test]
fn jaas_lines() {
    let j = parse_jaas(
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="s3\"cret";"#,
    )
    .ok()
    .unwrap();
    assert_eq!(j.module, SCRAM_MODULE);
    assert_eq!(j.option("username"), Some("mm2"));
    assert_eq!(j.option("password"), Some("s3\"cret"));
    assert!(!j.more_modules);
    let j = parse_jaas(
        "x.OAuthBearerLoginModule REQUIRED /* c */ clientId=abc\n scope='a b' extension_logicalCluster=\"lkc-1\" ;",
    )
    .ok()
    .unwrap();
    assert_eq!(j.option("clientId"), Some("abc"));
    assert_eq!(j.option("scope"), Some("a b"));
    assert_eq!(j.option("extension_logicalCluster"), Some("lkc-1"));
    for bad in [
        "",
        "Mod",
        "Mod required",
        "Mod required a=;",
        "Mod required a=\"x;",
        "Mod nope;",
    ] {
        assert!(parse_jaas(bad).is_err(), "{bad}");
    }
}
