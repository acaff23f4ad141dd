//! Hostile bodies, one per shape of the bug, each through the connection's decode path.

use super::*;
use crate::error::ErrorKind;
use bytes::BufMut;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Asserts `r` is a protocol error that names `api` (kind, context and message).
#[track_caller]
fn assert_typed(r: Result<()>, api: ApiKey) -> String {
    let e = r.expect_err("hostile input must not decode");
    assert!(matches!(e.kind(), ErrorKind::Protocol(_)), "{e:?}");
    assert_eq!(e.api_key(), Some(api), "{e:?}");
    let s = e.to_string();
    assert!(s.contains(&format!("{api:?}")), "{s}");
    s
}

fn uvarint(buf: &mut Vec<u8>, v: u32) {
    strait_records::put_uvarint(buf, u64::from(v));
}

/// The reproduction from issue 12: error 0, then a compact array length of 2^31 (+1, the
/// compact encoding), which upstream turned into a 64 GiB `Vec::with_capacity`.
pub(crate) const HOSTILE_API_VERSIONS_BODY: [u8; 7] = [0, 0, 0x81, 0x80, 0x80, 0x80, 0x08];

#[test]
fn hostile_api_versions_compact_array_of_2_pow_31() {
    let body = Bytes::from_static(&HOSTILE_API_VERSIONS_BODY);
    let s = assert_typed(
        decode_response_body(ApiKey::ApiVersions, 3, body.clone()),
        ApiKey::ApiVersions,
    );
    assert!(s.contains("exceeds"), "{s}");
    // The same bytes as v0-v2 (what the connection's v0 fallback tries): a negative
    // classic array length.
    for v in 0..=2 {
        assert_typed(
            decode_response_body(ApiKey::ApiVersions, v, body.clone()),
            ApiKey::ApiVersions,
        );
    }
    // With two more bytes (a 9-byte body) and as a whole frame with its header.
    let mut nine = HOSTILE_API_VERSIONS_BODY.to_vec();
    nine.extend_from_slice(&[0, 0]);
    assert_typed(
        decode_response_body(ApiKey::ApiVersions, 3, Bytes::from(nine)),
        ApiKey::ApiVersions,
    );
    let mut frame = 7i32.to_be_bytes().to_vec();
    frame.extend_from_slice(&HOSTILE_API_VERSIONS_BODY);
    assert_typed(
        decode_response_frame(ApiKey::ApiVersions, 3, Bytes::from(frame)),
        ApiKey::ApiVersions,
    );
}

#[test]
fn hostile_classic_array_lengths_up_to_i32_max() {
    // ApiVersions v0-v2: error 0, array length i32::MAX.
    for v in 0..=2 {
        let mut b = vec![0, 0];
        b.put_i32(i32::MAX);
        assert_typed(
            decode_response_body(ApiKey::ApiVersions, v, Bytes::from(b)),
            ApiKey::ApiVersions,
        );
    }
}

#[test]
fn hostile_metadata_brokers_array() {
    // Metadata v1 (classic): brokers array first; v12 (flexible): throttle, then brokers.
    let mut b = Vec::new();
    b.put_i32(i32::MAX);
    assert_typed(
        decode_response_body(ApiKey::Metadata, 1, Bytes::from(b)),
        ApiKey::Metadata,
    );
    let mut b = Vec::new();
    b.put_i32(0); // throttle_time_ms
    uvarint(&mut b, u32::MAX);
    let s = assert_typed(
        decode_response_body(ApiKey::Metadata, 12, Bytes::from(b)),
        ApiKey::Metadata,
    );
    assert!(s.contains("CompactArray length 4294967294 exceeds"), "{s}");
}

#[test]
fn hostile_fetch_partition_count() {
    // Fetch v12: throttle, error, session id, one topic named "t", then 2^32-2 partitions.
    let mut b = Vec::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(0);
    uvarint(&mut b, 2); // one topic
    uvarint(&mut b, 2); // name length 1
    b.push(b't');
    uvarint(&mut b, u32::MAX); // partitions
    assert_typed(
        decode_response_body(ApiKey::Fetch, 12, Bytes::from(b)),
        ApiKey::Fetch,
    );
    // Fetch v4 (classic): throttle, then a topics array of i32::MAX.
    let mut b = Vec::new();
    b.put_i32(0);
    b.put_i32(i32::MAX);
    assert_typed(
        decode_response_body(ApiKey::Fetch, 4, Bytes::from(b)),
        ApiKey::Fetch,
    );
}

#[test]
fn hostile_offset_fetch_topics() {
    // OffsetFetch v1 (classic): topics first; v7 (flexible): throttle, then topics.
    let mut b = Vec::new();
    b.put_i32(i32::MAX);
    assert_typed(
        decode_response_body(ApiKey::OffsetFetch, 1, Bytes::from(b)),
        ApiKey::OffsetFetch,
    );
    let mut b = Vec::new();
    b.put_i32(0);
    uvarint(&mut b, 0x8000_0001);
    assert_typed(
        decode_response_body(ApiKey::OffsetFetch, 7, Bytes::from(b)),
        ApiKey::OffsetFetch,
    );
}

#[test]
fn string_longer_than_the_frame() {
    // Metadata v1: one broker (node id), then a host string of 32767 bytes in a tiny frame.
    let mut b = Vec::new();
    b.put_i32(1);
    b.put_i32(0);
    b.put_i16(i16::MAX);
    b.extend_from_slice(b"abc");
    assert_typed(
        decode_response_body(ApiKey::Metadata, 1, Bytes::from(b)),
        ApiKey::Metadata,
    );
    // Compact string of 2^32-2 bytes (FindCoordinator v3: throttle, error, message).
    let mut b = Vec::new();
    b.put_i32(0);
    b.put_i16(0);
    uvarint(&mut b, u32::MAX);
    assert_typed(
        decode_response_body(ApiKey::FindCoordinator, 3, Bytes::from(b)),
        ApiKey::FindCoordinator,
    );
    // Bytes field larger than the frame: SyncGroup v3 assignment (classic bytes).
    let mut b = Vec::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(i32::MAX);
    assert_typed(
        decode_response_body(ApiKey::SyncGroup, 3, Bytes::from(b)),
        ApiKey::SyncGroup,
    );
}

#[test]
fn negative_lengths() {
    // Array length -2 (only -1 means null).
    let mut b = vec![0, 0];
    b.put_i32(-2);
    assert_typed(
        decode_response_body(ApiKey::ApiVersions, 1, Bytes::from(b)),
        ApiKey::ApiVersions,
    );
    // String length -2: Metadata v1, one broker, host length -2.
    let mut b = Vec::new();
    b.put_i32(1);
    b.put_i32(0);
    b.put_i16(-2);
    assert_typed(
        decode_response_body(ApiKey::Metadata, 1, Bytes::from(b)),
        ApiKey::Metadata,
    );
    // Bytes length i32::MIN: SyncGroup v3 assignment.
    let mut b = Vec::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(i32::MIN);
    assert_typed(
        decode_response_body(ApiKey::SyncGroup, 3, Bytes::from(b)),
        ApiKey::SyncGroup,
    );
}

/// A populated response (one element in each top-level array) encodes and decodes
/// unchanged through the bounded decoders: valid input is unaffected.
#[test]
fn valid_responses_still_decode() {
    let resp = MetadataResponse::default()
        .with_brokers(vec![
            metadata_response::MetadataResponseBroker::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("h"))
                .with_port(9092),
        ])
        .with_topics(vec![
            metadata_response::MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
                .with_partitions(vec![metadata_response::MetadataResponsePartition::default()]),
        ]);
    for v in negotiable_versions(ApiKey::Metadata) {
        let mut b = bytes::BytesMut::new();
        resp.encode(&mut b, v).unwrap();
        let back = MetadataResponse::decode(&mut b.freeze(), v).unwrap();
        assert_eq!(back.brokers.len(), 1);
        assert_eq!(back.topics[0].partitions.len(), 1);
    }
}

/// Every API and version the crate negotiates: take the encoding of a default response
/// and, at every offset, overwrite four bytes with `7f ff ff ff` (a huge classic length)
/// or insert a 5-byte varint of 2^32-1 (a huge compact length). Each must decode or fail
/// with a typed error; before the patch the first count position aborted the process.
#[test]
fn huge_length_at_every_offset_of_every_response() {
    let mut cases = 0;
    for &api in DECODED_APIS {
        for v in negotiable_versions(api) {
            let base = default_encoded(api, v);
            for i in 0..=base.len() {
                let mut a = base.clone();
                let end = (i + 4).min(a.len());
                a.splice(i..end, [0x7f, 0xff, 0xff, 0xff]);
                let mut b = base.clone();
                b.splice(i..i, [0xff, 0xff, 0xff, 0xff, 0x0f]);
                for body in [a, b] {
                    if let Err(e) = decode_response_body(api, v, Bytes::from(body)) {
                        assert!(matches!(e.kind(), ErrorKind::Protocol(_)), "{e:?}");
                        assert_eq!(e.api_key(), Some(api));
                    }
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 2000, "{cases}");
}

/// The encoding of `R::default()` for `api` at `version` (needs the `broker` feature,
/// which the dev-dependency turns on).
fn default_encoded(api: ApiKey, version: i16) -> Vec<u8> {
    fn enc<R: Encodable + Default>(version: i16) -> Vec<u8> {
        let mut b = bytes::BytesMut::new();
        R::default()
            .encode(&mut b, version)
            .expect("encode default");
        b.to_vec()
    }
    macro_rules! by_api {
        ($($key:ident => $resp:ident),* $(,)?) => {
            match api {
                $(ApiKey::$key => enc::<$resp>(version),)*
                other => panic!("{other:?}"),
            }
        };
    }
    with_responses!(by_api)
}

#[test]
fn every_api_and_version_is_reachable_from_the_fuzz_selector() {
    let mut seen = std::collections::HashSet::new();
    for a in 0..=255u8 {
        for v in 0..=255u8 {
            let api = DECODED_APIS[a as usize % DECODED_APIS.len()];
            let r = negotiable_versions(api);
            let span = (r.end() - r.start() + 1) as usize;
            seen.insert((api as i16, r.start() + (v as usize % span) as i16));
        }
    }
    let all: usize = DECODED_APIS
        .iter()
        .map(|&api| negotiable_versions(api).count())
        .sum();
    assert_eq!(seen.len(), all);
    for &api in DECODED_APIS {
        assert!(!negotiable_versions(api).is_empty(), "{api:?}");
    }
}

#[test]
fn stream_entry_point_survives_a_hostile_stream() {
    let mut s = vec![13u8]; // ApiVersions
    for _ in 0..3 {
        s.extend_from_slice(&11i32.to_be_bytes());
        s.extend_from_slice(&1i32.to_be_bytes());
        s.extend_from_slice(&HOSTILE_API_VERSIONS_BODY);
    }
    s.extend_from_slice(&i32::MAX.to_be_bytes());
    fuzz_stream(&s);
    assert!(fuzz_response(&[]).is_none());
}
