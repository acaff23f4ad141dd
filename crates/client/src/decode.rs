//! Response decoding for every API this crate speaks, behind one entry point, so that hostile
//! and fuzzed inputs go through exactly the code a live connection uses (`frame`'s
//! correlation-id peek, header strip and `frame::decode_body`).
//!
//! Not part of the stable API: it exists for the fuzz targets (`crates/client/fuzz`) and the
//! corpus replay test (`tests/decode_corpus.rs`).

use bytes::Bytes;
use kafka_protocol::messages::*;

use crate::error::Result;
use crate::frame;
use crate::versions::supported_range;

/// Calls `$m!` with every API whose responses this crate decodes and its response type
/// (the [`crate::frame::Request`] impls): the one list the decoder, [`DECODED_APIS`] and the
/// tests use.
macro_rules! with_responses {
    ($m:ident) => {
        $m! {
            Produce => ProduceResponse,
            Fetch => FetchResponse,
            ListOffsets => ListOffsetsResponse,
            Metadata => MetadataResponse,
            OffsetCommit => OffsetCommitResponse,
            OffsetFetch => OffsetFetchResponse,
            FindCoordinator => FindCoordinatorResponse,
            JoinGroup => JoinGroupResponse,
            Heartbeat => HeartbeatResponse,
            LeaveGroup => LeaveGroupResponse,
            SyncGroup => SyncGroupResponse,
            DescribeGroups => DescribeGroupsResponse,
            ListGroups => ListGroupsResponse,
            ConsumerGroupDescribe => ConsumerGroupDescribeResponse,
            ApiVersions => ApiVersionsResponse,
            CreateTopics => CreateTopicsResponse,
            DeleteTopics => DeleteTopicsResponse,
            InitProducerId => InitProducerIdResponse,
            AddPartitionsToTxn => AddPartitionsToTxnResponse,
            AddOffsetsToTxn => AddOffsetsToTxnResponse,
            EndTxn => EndTxnResponse,
            TxnOffsetCommit => TxnOffsetCommitResponse,
            DescribeConfigs => DescribeConfigsResponse,
            CreatePartitions => CreatePartitionsResponse,
            IncrementalAlterConfigs => IncrementalAlterConfigsResponse,
            DescribeCluster => DescribeClusterResponse,
            DescribeAcls => DescribeAclsResponse,
            CreateAcls => CreateAclsResponse,
            DeleteAcls => DeleteAclsResponse,
            SaslHandshake => SaslHandshakeResponse,
            SaslAuthenticate => SaslAuthenticateResponse,
        }
    };
}

macro_rules! api_list {
    ($($key:ident => $resp:ident),* $(,)?) => {
        &[$(ApiKey::$key),*]
    };
}

/// Every API whose responses this crate decodes (the [`crate::frame::Request`] impls).
pub const DECODED_APIS: &[ApiKey] = with_responses!(api_list);

/// The versions of `api` a connection can negotiate (ApiVersions also falls back to v0).
pub fn negotiable_versions(api: ApiKey) -> std::ops::RangeInclusive<i16> {
    match supported_range(api) {
        Some((lo, hi)) => lo..=hi,
        #[allow(clippy::reversed_empty_ranges)]
        None => 1..=0,
    }
}

/// Decodes a response body of `api` at `version` as the connection does, discarding the
/// result. A hostile body must give `Err` (of kind [`crate::error::ErrorKind::Protocol`], naming the
/// API), never a panic or an abort.
pub fn decode_response_body(api: ApiKey, version: i16, body: Bytes) -> Result<()> {
    macro_rules! decode {
        ($($key:ident => $resp:ident),* $(,)?) => {
            match api {
                $(ApiKey::$key => frame::decode_body::<$resp>(api, version, body).map(drop),)*
                other => Err(crate::error::Error::invalid(format!("{other:?} is not decoded by this crate"))),
            }
        };
    }
    with_responses!(decode)
}

/// Decodes a whole response frame (without its size prefix): correlation id, response header
/// for `api`/`version`, then the body, as the read loop and the waiting caller do.
pub fn decode_response_frame(api: ApiKey, version: i16, frame: Bytes) -> Result<()> {
    frame::peek_correlation_id(&frame)?;
    let body = frame::strip_response_header(api, version, frame)?;
    decode_response_body(api, version, body)
}

/// The fuzz entry point: byte 0 picks the API (modulo [`DECODED_APIS`]), byte 1 a version
/// among the negotiable ones, the rest is a response frame. Every (API, version) pair is
/// reachable. Returns the decode result so tests can check the error's kind.
pub fn fuzz_response(data: &[u8]) -> Option<Result<()>> {
    let (&a, rest) = data.split_first()?;
    let (&v, frame) = rest.split_first()?;
    let api = DECODED_APIS[a as usize % DECODED_APIS.len()];
    let versions = negotiable_versions(api);
    let span = (versions.end() - versions.start() + 1) as usize;
    let version = versions.start() + (v as usize % span) as i16;
    Some(decode_response_frame(
        api,
        version,
        Bytes::copy_from_slice(frame),
    ))
}

/// The second fuzz entry point: `data` is a byte stream of size-prefixed frames, split by the
/// connection's `frame::FrameReader` (frame cap 1 MiB); byte 0 picks the API as in
/// [`fuzz_response`] and each frame is decoded at the next negotiable version in turn.
pub fn fuzz_stream(data: &[u8]) {
    let Some((&a, stream)) = data.split_first() else {
        return;
    };
    let api = DECODED_APIS[a as usize % DECODED_APIS.len()];
    let mut versions = negotiable_versions(api).cycle();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("current-thread runtime");
    rt.block_on(async {
        let mut reader = frame::FrameReader::new(stream, 1 << 20);
        while let Ok(Some(f)) = reader.read_frame().await {
            if let Some(version) = versions.next() {
                let _ = decode_response_frame(api, version, f);
            }
        }
    });
}

#[cfg(test)]
mod tests;
