use super::*;

fn frame(version: u8, kind: u8, body: &[u8]) -> Vec<u8> {
    let mut b = open(version, kind, body.len());
    b.extend_from_slice(body);
    seal(b)
}

#[test]
fn a_sealed_frame_unseals_to_its_body() {
    let f = frame(3, 7, b"body");
    assert_eq!(f.len(), HEADER + 4 + TRAILER);
    assert_eq!(unseal(&f, 3, 7), Ok(&b"body"[..]));
    assert_eq!(unseal(&frame(1, 1, b""), 1, 1), Ok(&b""[..]));
}

#[test]
fn damage_is_a_checksum_error_before_any_version_or_kind_check() {
    let mut f = frame(1, 2, b"xyz");
    f[0] = 9; // the version byte: covered by the checksum
    assert!(matches!(unseal(&f, 1, 2), Err(FrameError::Checksum { .. })));
    let mut f = frame(1, 2, b"xyz");
    let last = f.len() - 1;
    f[last] ^= 1;
    assert!(matches!(unseal(&f, 1, 2), Err(FrameError::Checksum { .. })));
}

#[test]
fn another_version_or_kind_is_refused() {
    let f = frame(2, 1, b"b");
    assert_eq!(
        unseal(&f, 1, 1),
        Err(FrameError::UnknownVersion {
            found: 2,
            expected: 1
        })
    );
    assert_eq!(
        unseal(&f, 2, 5),
        Err(FrameError::WrongKind {
            found: 1,
            expected: 5
        })
    );
}

#[test]
fn short_input_is_truncated_never_a_panic() {
    for n in 0..HEADER + TRAILER {
        assert_eq!(unseal(&vec![0u8; n], 1, 1), Err(FrameError::Truncated));
    }
}
