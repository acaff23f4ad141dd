use super::*;

fn conv(v: &str) -> (String, Vec<Reference>) {
    let (text, refs) = convert(v).ok().flatten().unwrap_or_default();
    (resolve(&text), refs)
}

#[test]
fn forms() {
    assert_eq!(convert("plain"), Ok(None));
    assert_eq!(conv("${env:HOSTS}").0, "${HOSTS}");
    assert_eq!(conv("${HOSTS},x:1").0, "${HOSTS},x:1");
    let (t, r) = conv("${file:/etc/kafka/s.properties:sasl.password}");
    assert_eq!(t, "${SASL_PASSWORD}");
    assert!(!r[0].is_env());
    assert!(r[0].how_to_export().contains("sed -n"));
    assert_eq!(conv("${vault:secret/kafka:pw}").0, "${PW}");
    assert_eq!(conv("a${b").0, "a${b", "an unclosed `${{` is literal");
    assert_eq!(convert("${a.b}"), Err(Unconvertible));
    assert_eq!(convert("${:x}"), Err(Unconvertible));
    assert_eq!(var_name("1-x"), "VAR_1_X");
    let (t, r) = conv("${k8s-secret:mm2-user:password}");
    assert_eq!(t, "${MM2_USER_PASSWORD}");
    assert!(r[0].how_to_export().contains("kubectl get secret mm2-user"));
    let (t, r) = conv("${k8s-secret-file:src-ca:ca.crt}");
    assert_eq!(t, "${SRC_CA_CA_CRT_FILE}");
    assert!(
        r[0].how_to_export().contains("{.data.ca\\.crt}"),
        "{}",
        r[0].how_to_export()
    );
}
