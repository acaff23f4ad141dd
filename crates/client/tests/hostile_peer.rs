//! A hostile peer on a real socket: `Client::connect` must come back quickly with a typed
//! protocol error naming the API, never abort on a wire-sized allocation (issue 12, item 5).

use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, api_versions_response::ApiVersion};
use kafka_protocol::protocol::Encodable;
use strait_client::{Client, ClientConfig, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The reproduction: ApiVersions error 0, compact array length 2^31 (+1, compact encoding).
const HOSTILE_API_VERSIONS: [u8; 7] = [0, 0, 0x81, 0x80, 0x80, 0x80, 0x08];

/// Reads one request frame; returns (api key, api version, correlation id).
async fn read_request(s: &mut TcpStream) -> Option<(i16, i16, i32)> {
    let len = s.read_i32().await.ok()?;
    let mut buf = vec![0; usize::try_from(len).ok()?];
    s.read_exact(&mut buf).await.ok()?;
    let api = i16::from_be_bytes([buf[0], buf[1]]);
    let version = i16::from_be_bytes([buf[2], buf[3]]);
    let corr = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    Some((api, version, corr))
}

async fn respond(s: &mut TcpStream, corr: i32, flexible_header: bool, body: &[u8]) {
    let mut f = BytesMut::new();
    let header = if flexible_header { 5 } else { 4 };
    f.put_i32((header + body.len()) as i32);
    f.put_i32(corr);
    if flexible_header {
        f.put_u8(0); // no tagged fields
    }
    f.put_slice(body);
    let _ = s.write_all(&f).await;
}

/// Starts a peer that answers every connection with `answer(api, version)`; returns its address.
async fn peer<F>(answer: F) -> String
where
    F: Fn(ApiKey, i16) -> Vec<u8> + Send + Sync + Copy + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                while let Some((api, version, corr)) = read_request(&mut s).await {
                    let api = ApiKey::try_from(api).unwrap();
                    let flexible = api.response_header_version(version) >= 1;
                    respond(&mut s, corr, flexible, &answer(api, version)).await;
                }
            });
        }
    });
    addr
}

fn config(addr: &str) -> ClientConfig {
    ClientConfig::new([addr])
        .with_connect_timeout(Duration::from_secs(2))
        .with_request_timeout(Duration::from_secs(2))
        .with_retry_timeout(Duration::from_secs(5))
}

#[tokio::test]
async fn hostile_api_versions_answer_is_a_typed_error() {
    let addr = peer(|_, _| HOSTILE_API_VERSIONS.to_vec()).await;
    let started = Instant::now();
    let e = Client::connect(config(&addr))
        .await
        .expect_err("a hostile ApiVersions answer must fail the connect");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e.kind(), ErrorKind::Protocol(_)), "{e:?}");
    assert_eq!(e.api_key(), Some(ApiKey::ApiVersions), "{e:?}");
    assert!(!e.is_retriable(), "{e:?}");
    let s = e.to_string();
    assert!(s.contains("ApiVersions") && s.contains("exceeds"), "{s}");
}

/// A peer that negotiates properly, then answers Metadata with a brokers array of 2^32-2
/// (compact) or 2^31-1 (classic) elements: the bound holds past the handshake too.
#[tokio::test]
async fn hostile_metadata_answer_is_a_typed_error() {
    fn answer(api: ApiKey, version: i16) -> Vec<u8> {
        let mut b = BytesMut::new();
        match api {
            ApiKey::ApiVersions => {
                let keys = [(ApiKey::ApiVersions, 0, 3), (ApiKey::Metadata, 1, 12)]
                    .into_iter()
                    .map(|(k, lo, hi)| {
                        ApiVersion::default()
                            .with_api_key(k as i16)
                            .with_min_version(lo)
                            .with_max_version(hi)
                    })
                    .collect();
                ApiVersionsResponse::default()
                    .with_api_keys(keys)
                    .encode(&mut b, version)
                    .unwrap();
            }
            _ => {
                if version >= 3 {
                    b.put_i32(0); // throttle_time_ms
                }
                if version >= 9 {
                    b.put_slice(&[0xfe, 0xff, 0xff, 0xff, 0x0f]); // compact length u32::MAX - 1
                } else {
                    b.put_i32(i32::MAX);
                }
            }
        }
        b.to_vec()
    }
    let addr = peer(answer).await;
    let started = Instant::now();
    let e = Client::connect(config(&addr))
        .await
        .expect_err("a hostile Metadata answer must fail the connect");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e.kind(), ErrorKind::Protocol(_)), "{e:?}");
    assert_eq!(e.api_key(), Some(ApiKey::Metadata), "{e:?}");
    assert!(e.to_string().contains("exceeds"), "{e}");
}
