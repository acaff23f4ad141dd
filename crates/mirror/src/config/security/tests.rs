use super::*;

#[test]
fn a_sasl_spec_s_debug_never_shows_its_password_or_client_secret() {
    let mut spec = SaslSpec::new(SaslMechanism::ScramSha512);
    spec.username = Some("alice".into());
    spec.password = Some("hunter2-pw".into());
    spec.client_secret = Some("s3cr3t-cs".into());
    let shown = format!("{spec:?} {spec:#?}");
    assert!(
        shown.contains("alice") && shown.contains("<redacted>"),
        "{shown}"
    );
    assert!(
        !shown.contains("hunter2-pw") && !shown.contains("s3cr3t-cs"),
        "{shown}"
    );
}
