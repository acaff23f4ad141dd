#[test]
fn urls_in_errors_carry_no_userinfo_query_or_fragment() {
    assert_eq!(
        redact_url("https://id:s3cret@idp.example:8443/oauth/token?client_secret=x#f"),
        "https://<redacted>@idp.example:8443/oauth/token"
    );
    assert_eq!(redact_url("https://idp/token"), "https://idp/token");
    let err = OidcTokenProvider::new(
        "http://id:s3cret@idp/token",
        "c",
        Secret::new("x"),
        None,
        CaRoots::default(),
    )
    .expect_err("http is refused")
    .to_string();
    assert!(!err.contains("s3cret") && err.contains("https://"), "{err}");
}

use super::*;

fn jwt(claims: &str) -> String {
    format!(
        "{}.{}.sig",
        B64URL.encode(br#"{"alg":"none"}"#),
        B64URL.encode(claims)
    )
}

#[test]
fn jwt_claims_are_read_without_verification() {
    let (exp, sub) = jwt_claims(&jwt(r#"{"sub":"svc-strait","exp":2000000000}"#));
    assert_eq!(sub.as_deref(), Some("svc-strait"));
    assert_eq!(exp, Some(UNIX_EPOCH + Duration::from_secs(2_000_000_000)));
    assert_eq!(jwt_claims("opaque-token"), (None, None));
    assert_eq!(jwt_claims("a.!!!.c"), (None, None));
    assert_eq!(jwt_claims(&jwt(r#"{"exp":-5}"#)).0, None);
}

#[test]
fn client_first_follows_rfc7628() {
    let t = Token {
        value: Secret::new("tok"),
        expires_at: None,
        principal: None,
    };
    assert_eq!(client_first(&t, &[]), b"n,,\x01auth=Bearer tok\x01\x01");
    let ext = [("logicalCluster".to_owned(), "lkc-1".to_owned())];
    assert_eq!(
        client_first(&t, &ext),
        b"n,,\x01auth=Bearer tok\x01logicalCluster=lkc-1\x01\x01"
    );
}

#[test]
fn token_file_is_re_read_and_expiry_checked() {
    let dir = std::env::temp_dir().join(format!("strait-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let p = dir.join("token");
    let provider = FileTokenProvider::new(&p);
    assert!(provider.read().is_err(), "missing file");
    std::fs::write(&p, format!("{}\n", jwt(r#"{"sub":"a","exp":4000000000}"#))).expect("w");
    assert_eq!(
        provider.read().expect("token").principal.as_deref(),
        Some("a")
    );
    std::fs::write(&p, jwt(r#"{"sub":"b","exp":4000000000}"#)).expect("w");
    assert_eq!(
        provider.read().expect("token").principal.as_deref(),
        Some("b")
    );
    std::fs::write(&p, jwt(r#"{"sub":"b","exp":1000}"#)).expect("w");
    let e = provider.read().expect_err("expired");
    assert!(e.to_string().contains("expired"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn oidc_requires_https_and_hides_the_secret() {
    let e = OidcTokenProvider::new(
        "http://idp/token",
        "id",
        Secret::new("s3cr3t"),
        None,
        CaRoots::System,
    )
    .expect_err("http refused");
    assert!(e.to_string().contains("https://"), "{e}");
    let p = OidcTokenProvider::new(
        "https://idp.example/token",
        "id",
        Secret::new("s3cr3t"),
        Some("kafka".into()),
        CaRoots::System,
    )
    .expect("https ok");
    assert!(!format!("{p:?}").contains("s3cr3t"));
    assert!(!p.describe().contains("s3cr3t"));
}

#[test]
fn refresh_happens_at_80_percent() {
    let now = UNIX_EPOCH + Duration::from_secs(1000);
    let minute = Duration::from_secs(60);
    let at = refresh_at(now, Some(now + Duration::from_secs(100)), minute);
    assert_eq!(at, now + Duration::from_secs(80));
    assert_eq!(refresh_at(now, None, minute), now + minute);
    assert_eq!(refresh_at(now, Some(now), minute), now + minute);
}
