use super::*;

#[test]
fn host_of_strips_port_and_brackets() {
    assert_eq!(host_of("kafka-1.example.com:9093"), "kafka-1.example.com");
    assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
    assert_eq!(host_of("[::1]:9093"), "::1");
    assert_eq!(host_of("broker"), "broker");
}

#[test]
fn missing_files_are_named_in_the_error() {
    let cfg = TlsConfig {
        ca: CaRoots::PemFile("/nonexistent/ca.pem".into()),
        ..TlsConfig::default()
    };
    let e = Connector::new(&cfg).err().expect("must fail");
    assert!(matches!(e.kind(), ErrorKind::Tls(_)));
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    assert!(!e.is_retriable());
}

#[test]
fn a_file_without_certificates_is_refused() {
    let dir = std::env::temp_dir().join(format!("strait-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let p = dir.join("empty.pem");
    std::fs::write(&p, "not a pem\n").expect("write");
    let e = load_certs("CA file", &p).expect_err("must fail");
    assert!(e.to_string().contains("no `BEGIN CERTIFICATE`"), "{e}");
    let e = load_key(&p).expect_err("must fail");
    assert!(e.to_string().contains("no PKCS#8"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
