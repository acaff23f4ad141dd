//! An in-process fake broker over `tokio::io::duplex`, decoding requests with
//! kafka-protocol's `broker` feature (dev-dependency only).

use super::*;
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, decode_request_header_from_buffer};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// Reads one request frame: header + remaining body bytes.
pub(crate) async fn read_request<S: AsyncRead + Unpin>(
    s: &mut S,
) -> Option<(RequestHeader, Bytes)> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).await.ok()?;
    let mut b = Bytes::from(buf);
    let h = decode_request_header_from_buffer(&mut b).ok()?;
    Some((h, b))
}

/// Writes a response frame for `h`.
pub(crate) async fn write_response<M: Encodable, S: AsyncWrite + Unpin>(
    s: &mut S,
    h: &RequestHeader,
    body: &M,
) {
    let api = ApiKey::try_from(h.request_api_key).unwrap();
    let hv = api.response_header_version(h.request_api_version);
    let rh = ResponseHeader::default().with_correlation_id(h.correlation_id);
    let mut b = BytesMut::new();
    b.put_i32(0);
    rh.encode(&mut b, hv).unwrap();
    body.encode(&mut b, h.request_api_version).unwrap();
    let n = (b.len() - 4) as i32;
    b[..4].copy_from_slice(&n.to_be_bytes());
    s.write_all(&b).await.unwrap();
}

pub(crate) fn versions_response(ranges: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        ranges
            .iter()
            .map(|&(k, lo, hi)| {
                ApiVersion::default()
                    .with_api_key(k as i16)
                    .with_min_version(lo)
                    .with_max_version(hi)
            })
            .collect(),
    )
}

/// Answers ApiVersions like a broker that rejects v3 (to exercise the v0 fallback).
pub(crate) async fn answer_api_versions<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    ranges: &[(ApiKey, i16, i16)],
) {
    let (h, _) = read_request(s).await.unwrap();
    assert_eq!(h.request_api_key, ApiKey::ApiVersions as i16);
    if h.request_api_version > 0 {
        let mut r = versions_response(&[(ApiKey::ApiVersions, 0, 2)]);
        r.error_code = 35;
        // UNSUPPORTED_VERSION answers are encoded as v0 whatever the request version.
        let mut h0 = h.clone();
        h0.request_api_version = 0;
        write_response(s, &h0, &r).await;
        let (h, _) = read_request(s).await.unwrap();
        assert_eq!(h.request_api_version, 0);
        write_response(s, &h, &versions_response(ranges)).await;
    } else {
        write_response(s, &h, &versions_response(ranges)).await;
    }
}

/// A connection to a fake broker that advertised `ranges`, and the broker's end.
pub(crate) async fn connected(ranges: &[(ApiKey, i16, i16)]) -> (Connection, DuplexStream) {
    let (a, mut b) = tokio::io::duplex(1 << 16);
    let ranges = ranges.to_vec();
    let srv = tokio::spawn(async move {
        answer_api_versions(&mut b, &ranges).await;
        b
    });
    let c = Connection::handshake(
        a,
        1,
        StrBytes::from_static_str("t"),
        1 << 20,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    (c, srv.await.unwrap())
}

#[tokio::test]
async fn negotiation_falls_back_to_v0_and_picks_versions() {
    let (c, _srv) = connected(&[(ApiKey::Metadata, 0, 9), (ApiKey::Produce, 3, 9)]).await;
    assert_eq!(c.versions().pick(ApiKey::Metadata).unwrap(), 9);
    assert_eq!(c.versions().pick(ApiKey::Produce).unwrap(), 9);
    assert!(
        c.versions()
            .pick(ApiKey::Fetch)
            .unwrap_err()
            .is_unsupported()
    );
}

#[tokio::test]
async fn pipelined_requests_match_in_order() {
    let (c, mut srv) = connected(&[(ApiKey::Metadata, 0, 12)]).await;
    let c = Arc::new(c);
    let mut calls = Vec::new();
    for i in 0..10 {
        let c = c.clone();
        calls.push(tokio::spawn(async move {
            let req = MetadataRequest::default().with_allow_auto_topic_creation(i % 2 == 0);
            let (_, r) = c
                .call_negotiated(&req, Duration::from_secs(5))
                .await
                .unwrap();
            r.throttle_time_ms
        }));
    }
    // Read all ten before answering any: they are genuinely in flight together.
    let mut hs = Vec::new();
    for _ in 0..10 {
        let (h, mut body) = read_request(&mut srv).await.unwrap();
        MetadataRequest::decode(&mut body, h.request_api_version).unwrap();
        hs.push(h);
    }
    for h in &hs {
        let r = MetadataResponse::default().with_throttle_time_ms(h.correlation_id);
        write_response(&mut srv, h, &r).await;
    }
    let mut got = Vec::new();
    for c in calls {
        got.push(c.await.unwrap());
    }
    got.sort();
    let mut want: Vec<i32> = hs.iter().map(|h| h.correlation_id).collect();
    want.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn broken_connection_fails_pending_retriably() {
    let (c, mut srv) = connected(&[(ApiKey::Metadata, 0, 12)]).await;
    let c = Arc::new(c);
    let c2 = c.clone();
    let call = tokio::spawn(async move {
        c2.call_negotiated(&MetadataRequest::default(), Duration::from_secs(30))
            .await
    });
    read_request(&mut srv).await.unwrap();
    drop(srv);
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_retriable(), "{e}");
    assert!(c.is_closed());
    let e = c
        .call_negotiated(&MetadataRequest::default(), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(e.is_retriable());
}

#[tokio::test]
async fn timeout_poisons_and_cancelled_caller_leaves_frames_whole() {
    let (c, mut srv) = connected(&[(ApiKey::Metadata, 0, 12)]).await;
    // A caller dropped right after submitting: the frame is still written whole.
    {
        let req = MetadataRequest::default();
        let fut = c.call_negotiated(&req, Duration::from_secs(5));
        let _ = tokio::time::timeout(Duration::from_millis(1), fut).await;
    }
    let (h, mut body) = read_request(&mut srv).await.unwrap();
    MetadataRequest::decode(&mut body, h.request_api_version).unwrap();
    // No answer: the next call times out and poisons the connection.
    let e = c
        .call_negotiated(&MetadataRequest::default(), Duration::from_millis(50))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Timeout);
    assert!(e.is_retriable());
    assert!(c.is_closed());
}

#[tokio::test]
async fn wrong_correlation_id_is_a_protocol_error() {
    let (c, mut srv) = connected(&[(ApiKey::Metadata, 0, 12)]).await;
    let c = Arc::new(c);
    let c2 = c.clone();
    let call = tokio::spawn(async move {
        c2.call_negotiated(&MetadataRequest::default(), Duration::from_secs(5))
            .await
    });
    let (mut h, _) = read_request(&mut srv).await.unwrap();
    h.correlation_id += 1000;
    write_response(&mut srv, &h, &MetadataResponse::default()).await;
    let e = call.await.unwrap().unwrap_err();
    assert!(e.to_string().contains("correlation id"), "{e}");
}
