use super::*;

#[test]
fn a_tls_alert_read_as_a_frame_size_says_tls() {
    // A TLS 1.2 alert record (21, 3, 3, len 0x0002) where a frame size should be.
    let e = check_frame_len(i32::from_be_bytes([0x15, 3, 3, 0]), 1 << 20).unwrap_err();
    assert!(matches!(e.kind(), crate::error::ErrorKind::Tls(_)), "{e:?}");
    assert!(!e.is_retriable());
    let e = check_frame_len(i32::from_be_bytes([0x16, 3, 1, 0]), 1 << 20).unwrap_err();
    assert!(e.to_string().contains("TLS listener"), "{e}");
    let e = check_frame_len(i32::from_be_bytes([0x7f, 3, 3, 0]), 1 << 20).unwrap_err();
    assert!(matches!(e.kind(), crate::error::ErrorKind::Protocol(_)));
}
use kafka_protocol::messages::ApiVersionsRequest;

#[test]
fn request_frame_matches_reference_bytes() {
    // The ApiVersions v3 frame from the reference notes (§1.6).
    let body = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("replicator"))
        .with_client_software_version(StrBytes::from_static_str("0.1.0"));
    let f = encode_request(
        ApiKey::ApiVersions,
        3,
        7,
        &StrBytes::from_static_str("replicator"),
        &body,
    )
    .unwrap();
    let v = f.to_vec();
    assert_eq!(v.len(), 43);
    assert_eq!(&v[..4], &[0, 0, 0, 39]);
    assert_eq!(&v[4..12], &[0, 18, 0, 3, 0, 0, 0, 7]);
}

#[test]
fn frame_len_caps() {
    assert!(check_frame_len(-1, 100).is_err());
    assert!(check_frame_len(3, 100).is_err());
    assert!(check_frame_len(101, 100).is_err());
    assert_eq!(check_frame_len(100, 100).unwrap(), 100);
}

fn framed(payloads: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    for p in payloads {
        v.extend_from_slice(&(p.len() as i32).to_be_bytes());
        v.extend_from_slice(p);
    }
    v
}

#[tokio::test]
async fn reader_splits_frames_small_and_large() {
    let big = vec![7u8; SMALL_FRAME * 3 + 5];
    let data = framed(&[b"abcd", &big, b"efghij"]);
    // A duplex with a tiny buffer forces many short reads.
    let (mut a, b) = tokio::io::duplex(1000);
    let w = tokio::spawn(async move {
        tokio::io::AsyncWriteExt::write_all(&mut a, &data)
            .await
            .unwrap();
    });
    let mut r = FrameReader::new(b, 1 << 20);
    assert_eq!(&r.read_frame().await.unwrap().unwrap()[..], b"abcd");
    let f = r.read_frame().await.unwrap().unwrap();
    assert_eq!(f.len(), big.len());
    assert!(f.iter().all(|&x| x == 7));
    assert_eq!(&r.read_frame().await.unwrap().unwrap()[..], b"efghij");
    w.await.unwrap();
    assert!(r.read_frame().await.unwrap().is_none());
}

#[tokio::test]
async fn large_frame_buffers_are_reused_once_dropped() {
    let big = vec![9u8; SMALL_FRAME * 2];
    let data = framed(&[&big, &big, &big]);
    let (mut a, b) = tokio::io::duplex(1 << 16);
    let w = tokio::spawn(async move {
        tokio::io::AsyncWriteExt::write_all(&mut a, &data)
            .await
            .unwrap();
    });
    // A pool of its own: the process's is shared with the other tests.
    let mut r = FrameReader::with_pool(b, 1 << 20, BufferPool::new(BIG_POOL_BYTES));
    let f1 = r.read_frame().await.unwrap().unwrap();
    let p1 = f1.as_ptr();
    // f1 is still alive: the next frame cannot reuse its buffer.
    let f2 = r.read_frame().await.unwrap().unwrap();
    let p2 = f2.as_ptr();
    assert_ne!(p2, p1.wrapping_add(f1.len()), "not carved after f1");
    assert!(f1.iter().chain(f2.iter()).all(|&x| x == 9));
    drop(f1);
    drop(f2);
    // Both dropped: the third frame lands in one of their buffers.
    let f3 = r.read_frame().await.unwrap().unwrap();
    assert_eq!(f3.len(), big.len());
    assert!(
        f3.as_ptr() == p1 || f3.as_ptr() == p2,
        "reused a freed buffer"
    );
    assert!(f3.iter().all(|&x| x == 9));
    assert!(r.big.idle_bytes() >= big.len(), "the other one is kept");
    w.await.unwrap();
}

#[tokio::test]
async fn reader_rejects_oversized_and_truncated() {
    let (mut a, b) = tokio::io::duplex(1000);
    tokio::io::AsyncWriteExt::write_all(&mut a, &framed(&[&[0u8; 200]]))
        .await
        .unwrap();
    let mut r = FrameReader::new(b, 100);
    let e = r.read_frame().await.unwrap_err();
    assert!(e.to_string().contains("exceeds the cap"), "{e}");

    let (mut a, b) = tokio::io::duplex(1000);
    tokio::io::AsyncWriteExt::write_all(&mut a, &[0, 0, 0, 10, 1, 2])
        .await
        .unwrap();
    drop(a);
    let mut r = FrameReader::new(b, 100);
    let e = r.read_frame().await.unwrap_err();
    assert!(e.is_retriable());
}
