use super::*;

fn header(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap()
}

#[test]
fn accepts_only_the_right_credentials() {
    let auth = BasicAuth::new(&MetricsBasicAuth::new("prom", "s3cret:x"));
    let good = format!("Basic {}", STANDARD.encode("prom:s3cret:x"));
    assert!(auth.check(Some(&header(&good))));
    assert!(auth.check(Some(&header(&good.replace("Basic", "basic")))));
    assert!(!auth.check(None));
    assert!(!auth.check(Some(&header(&format!(
        "Basic {}",
        STANDARD.encode("prom:wrong")
    )))));
    assert!(!auth.check(Some(&header(&format!(
        "Bearer {}",
        STANDARD.encode("prom:s3cret:x")
    )))));
    assert!(!auth.check(Some(&header("Basic"))));
    assert!(!format!("{auth:?}").contains("s3cret"));
}
