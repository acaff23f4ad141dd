use super::*;

fn failed(error: &str) -> FrontEvent {
    serde_json::from_value(serde_json::json!({
        "ts": 0.0, "event": "tls_failed", "conn": 1, "error": error
    }))
    .expect("event")
}

#[test]
fn a_refused_handshake_counts_and_a_peer_gone_mid_handshake_does_not() {
    assert!(is_tls_refusal(&failed(
        "SSLError: [SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca"
    )));
    assert!(is_tls_refusal(&failed("TimeoutError: ")));
    assert!(!is_tls_refusal(&failed("ConnectionResetError: ")));
    assert!(!is_tls_refusal(&failed(
        "BrokenPipeError: [Errno 32] Broken pipe"
    )));
    assert!(!is_tls_refusal(&failed(
        "SSLEOFError: [SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred"
    )));
    let ok: FrontEvent =
        serde_json::from_value(serde_json::json!({"ts": 0.0, "event": "tls_ok", "conn": 1}))
            .expect("event");
    assert!(!is_tls_refusal(&ok));
}
