use super::*;

/// RFC 7677 §3: the SCRAM-SHA-256 example exchange.
fn rfc7677() -> ScramClient {
    ScramClient::with_nonce(
        ScramHash::Sha256,
        "user",
        Secret::new("pencil"),
        "rOprNGfwEbeRWgbNEkqO".into(),
    )
}
const SERVER_FIRST: &[u8] =
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

#[test]
fn rfc7677_test_vector_client_messages() {
    let mut c = rfc7677();
    assert_eq!(c.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let fin = c.server_first(SERVER_FIRST).expect("server-first");
    assert_eq!(
        String::from_utf8(fin).expect("utf8"),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    c.server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .expect("server signature verifies");
    assert!(c.is_done());
}

#[test]
fn a_server_that_does_not_know_the_password_is_refused() {
    let mut c = rfc7677();
    c.client_first();
    c.server_first(SERVER_FIRST).expect("server-first");
    let forged = B64.encode([7u8; 32]);
    assert_eq!(
        c.server_final(format!("v={forged}").as_bytes()),
        Err(ScramError::BadServerSignature)
    );
    assert!(!c.is_done());
}

#[test]
fn server_error_attribute_is_an_error() {
    let mut c = rfc7677();
    c.client_first();
    c.server_first(SERVER_FIRST).expect("server-first");
    assert_eq!(
        c.server_final(b"e=invalid-proof"),
        Err(ScramError::Server("invalid-proof".into()))
    );
}

#[test]
fn nonce_must_extend_ours() {
    let mut c = rfc7677();
    c.client_first();
    let e = c.server_first(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    assert_eq!(e, Err(ScramError::NonceMismatch));
    let mut c = rfc7677();
    c.client_first();
    let e = c.server_first(b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    assert_eq!(
        e,
        Err(ScramError::NonceMismatch),
        "the server must add to the nonce"
    );
}

#[test]
fn iteration_count_is_bounded() {
    for i in [1u32, 4095, 100_001, u32::MAX] {
        let mut c = rfc7677();
        c.client_first();
        let msg = format!("r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={i}");
        assert_eq!(
            c.server_first(msg.as_bytes()),
            Err(ScramError::Iterations(i))
        );
    }
}

#[test]
fn malformed_server_messages_are_errors_not_panics() {
    for msg in [
        &b""[..],
        b"garbage",
        b"r=rOprNGfwEbeRWgbNEkqOx",
        b"r=rOprNGfwEbeRWgbNEkqOx,s=!!!,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOx,s=AA==,i=many",
        b"\xff\xfe",
        b"=,=,=",
    ] {
        let mut c = rfc7677();
        c.client_first();
        assert!(c.server_first(msg).is_err(), "{msg:?}");
    }
    let mut c = rfc7677();
    assert_eq!(
        c.server_final(b"v=AA=="),
        Err(ScramError::State("server-final"))
    );
}

#[test]
fn user_names_are_escaped() {
    let mut c =
        ScramClient::with_nonce(ScramHash::Sha512, "a=b,c", Secret::new("x"), "nonce".into());
    assert_eq!(c.client_first(), b"n,,n=a=3Db=2Cc,r=nonce");
}

#[test]
fn debug_never_shows_the_password() {
    let c = ScramClient::new(ScramHash::Sha512, "alice", Secret::new("hunter2-secret"));
    let s = format!("{c:?}");
    assert!(!s.contains("hunter2-secret"), "{s}");
    assert!(s.contains("alice"));
}
