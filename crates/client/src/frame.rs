//! Kafka framing: `[i32 size][header][body]`, with a cap on every length read off the wire.
//!
//! Pure helpers plus one async reader. Requests are built as a list of `Bytes` parts so that
//! Produce can hand the broker the caller's batch bytes without copying them (vectored write).
//!
//! The [`Request`] trait links a kafka-protocol request type to its response and API key
//! (kafka-protocol only provides that link with its `broker` feature, which we do not ship):
//! what a connection needs to frame a request and decode its answer.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{self, ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt};

use strait_records::BufferPool;

use crate::error::{Error, Result};

/// Default cap on a response frame (a Fetch response can be large; this is a safety net
/// against a corrupt length prefix, not a tuning knob).
pub const DEFAULT_MAX_FRAME: usize = 256 * 1024 * 1024;

/// An encoded request frame: the parts, concatenated, are the bytes on the wire.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    pub(crate) parts: Vec<Bytes>,
}

impl Frame {
    /// Concatenates the parts (tests and diagnostics only).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        for p in &self.parts {
            v.extend_from_slice(p);
        }
        v
    }
}

/// A request message this crate can send, with its API key and response type.
pub trait Request: Encodable + Send + Sync {
    /// The API key.
    const KEY: ApiKey;
    /// The response message.
    type Response: Decodable + Send + 'static;
    /// The response's `throttle_time_ms` (0 where the version has none).
    fn throttle_ms(resp: &Self::Response) -> i32;
}

macro_rules! requests {
    ($($req:ident => $resp:ident : $key:ident),* $(,)?) => {
        $(impl Request for messages::$req {
            const KEY: ApiKey = ApiKey::$key;
            type Response = messages::$resp;
            fn throttle_ms(resp: &messages::$resp) -> i32 {
                resp.throttle_time_ms
            }
        })*
    };
}

// The table of every request this crate sends, one line each (request => response: API
// key), each answering `throttle_ms` from its response's `throttle_time_ms`. A flat table of
// cases, kept whole: split, it would only be harder to check against the API keys.
requests! {
    ProduceRequest => ProduceResponse: Produce,
    FetchRequest => FetchResponse: Fetch,
    ListOffsetsRequest => ListOffsetsResponse: ListOffsets,
    MetadataRequest => MetadataResponse: Metadata,
    OffsetCommitRequest => OffsetCommitResponse: OffsetCommit,
    OffsetFetchRequest => OffsetFetchResponse: OffsetFetch,
    FindCoordinatorRequest => FindCoordinatorResponse: FindCoordinator,
    JoinGroupRequest => JoinGroupResponse: JoinGroup,
    HeartbeatRequest => HeartbeatResponse: Heartbeat,
    LeaveGroupRequest => LeaveGroupResponse: LeaveGroup,
    SyncGroupRequest => SyncGroupResponse: SyncGroup,
    DescribeGroupsRequest => DescribeGroupsResponse: DescribeGroups,
    ListGroupsRequest => ListGroupsResponse: ListGroups,
    ConsumerGroupDescribeRequest => ConsumerGroupDescribeResponse: ConsumerGroupDescribe,
    ApiVersionsRequest => ApiVersionsResponse: ApiVersions,
    CreateTopicsRequest => CreateTopicsResponse: CreateTopics,
    DeleteTopicsRequest => DeleteTopicsResponse: DeleteTopics,
    InitProducerIdRequest => InitProducerIdResponse: InitProducerId,
    AddPartitionsToTxnRequest => AddPartitionsToTxnResponse: AddPartitionsToTxn,
    AddOffsetsToTxnRequest => AddOffsetsToTxnResponse: AddOffsetsToTxn,
    EndTxnRequest => EndTxnResponse: EndTxn,
    TxnOffsetCommitRequest => TxnOffsetCommitResponse: TxnOffsetCommit,
    DescribeConfigsRequest => DescribeConfigsResponse: DescribeConfigs,
    CreatePartitionsRequest => CreatePartitionsResponse: CreatePartitions,
    IncrementalAlterConfigsRequest => IncrementalAlterConfigsResponse: IncrementalAlterConfigs,
    DescribeClusterRequest => DescribeClusterResponse: DescribeCluster,
    DescribeAclsRequest => DescribeAclsResponse: DescribeAcls,
    CreateAclsRequest => CreateAclsResponse: CreateAcls,
    DeleteAclsRequest => DeleteAclsResponse: DeleteAcls,
}

macro_rules! unthrottled_requests {
    ($($req:ident => $resp:ident : $key:ident),* $(,)?) => {
        $(impl Request for messages::$req {
            const KEY: ApiKey = ApiKey::$key;
            type Response = messages::$resp;
            fn throttle_ms(_: &messages::$resp) -> i32 {
                0
            }
        })*
    };
}

unthrottled_requests! {
    SaslHandshakeRequest => SaslHandshakeResponse: SaslHandshake,
    SaslAuthenticateRequest => SaslAuthenticateResponse: SaslAuthenticate,
}

/// The request header every request starts with.
pub(crate) fn request_header(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
) -> RequestHeader {
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        // Always send client_id: some brokers (Redpanda) fail to parse requests without it.
        .with_client_id(Some(client_id.clone()))
}

/// Encodes `[size][header][body]` into one contiguous frame.
pub(crate) fn encode_request<B: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
    body: &B,
) -> Result<Frame> {
    let header = request_header(api, version, correlation_id, client_id);
    let hv = api.request_header_version(version);
    let size = header
        .compute_size(hv)
        .and_then(|h| Ok(h + body.compute_size(version)?))
        .map_err(|e| Error::encode(api, version, &e))?;
    let size32 = i32::try_from(size).map_err(|_| Error::invalid("request larger than 2 GiB"))?;
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.put_i32(size32);
    header
        .encode(&mut buf, hv)
        .and_then(|_| body.encode(&mut buf, version))
        .map_err(|e| Error::encode(api, version, &e))?;
    debug_assert_eq!(buf.len(), 4 + size);
    Ok(Frame {
        parts: vec![buf.freeze()],
    })
}

/// Encodes `[size][header]` followed by a pre-encoded body given as parts (the hand-encoded
/// Produce path). `body_len` is the total length of `body`.
pub(crate) fn encode_request_parts(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
    mut body: Vec<Bytes>,
) -> Result<Frame> {
    let header = request_header(api, version, correlation_id, client_id);
    let hv = api.request_header_version(version);
    let body_len: usize = body.iter().map(Bytes::len).sum();
    let hsize = header
        .compute_size(hv)
        .map_err(|e| Error::encode(api, version, &e))?;
    let size =
        i32::try_from(hsize + body_len).map_err(|_| Error::invalid("request larger than 2 GiB"))?;
    let mut buf = BytesMut::with_capacity(4 + hsize);
    buf.put_i32(size);
    header
        .encode(&mut buf, hv)
        .map_err(|e| Error::encode(api, version, &e))?;
    let mut parts = Vec::with_capacity(1 + body.len());
    parts.push(buf.freeze());
    parts.append(&mut body);
    Ok(Frame { parts })
}

/// Checks a size prefix against the cap. Negative or oversized lengths are protocol errors
/// (invariant 9: every length read off the wire is checked before allocating).
pub(crate) fn check_frame_len(raw: i32, max: usize) -> Result<usize> {
    let len = usize::try_from(raw)
        .map_err(|_| Error::protocol(format!("negative frame length {raw}")))?;
    if len < 4 {
        return Err(Error::protocol(format!("frame length {len} < 4")));
    }
    if len > max {
        if looks_like_tls_record(raw) {
            return Err(Error::new(crate::error::ErrorKind::Tls(
                "the broker answered with a TLS record: this is a TLS listener; set \
                 protocol = \"ssl\" or \"sasl_ssl\""
                    .into(),
            )));
        }
        return Err(Error::protocol(format!(
            "frame length {len} exceeds the cap of {max} bytes"
        )));
    }
    Ok(len)
}

/// True when a "size prefix" is the start of a TLS record (an alert or a handshake, TLS
/// 1.0–1.3): what a TLS listener sends back to a plaintext client.
fn looks_like_tls_record(raw: i32) -> bool {
    let [content_type, major, minor, _] = raw.to_be_bytes();
    matches!(content_type, 0x15 | 0x16) && major == 3 && minor <= 4
}

/// The correlation id at the start of a response frame (both header versions begin with it).
pub(crate) fn peek_correlation_id(frame: &Bytes) -> Result<i32> {
    match frame.get(..4) {
        Some(b) => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(Error::protocol("response frame shorter than its header")),
    }
}

/// Strips the response header (v0 or v1) and returns the body, still a slice of `frame`.
pub(crate) fn strip_response_header(api: ApiKey, version: i16, mut frame: Bytes) -> Result<Bytes> {
    let hv = api.response_header_version(version);
    ResponseHeader::decode(&mut frame, hv).map_err(|e| Error::decode(api, version, &e))?;
    Ok(frame)
}

/// Decodes a response body; it must consume the body exactly (trailing bytes mean we and the
/// broker disagree on the version's layout: a bug worth failing loudly on).
///
/// # Bounded decoding (invariant 9)
///
/// The body is at most [`DEFAULT_MAX_FRAME`] (or the configured cap) bytes, but the counts
/// *inside* it are read off the wire too: upstream kafka-protocol 0.18 sized a
/// `Vec::with_capacity(n)` (and `vec![0; n]` for owned strings/bytes) with them, so a 7-byte
/// ApiVersions body asking for 2^31 elements aborted the process with a 64 GiB allocation.
/// The workspace builds a patched copy instead (`vendor/kafka-protocol`, wired through
/// `[patch.crates-io]`; spots listed in its `STRAIT-PATCH.md`): an array count or string/bytes
/// length larger than the bytes left in the body is a decode error, and preallocation is
/// capped at 1 MiB per array. The patch sits in the primitive array/string/bytes decoders
/// that every generated message decoder calls, so it covers every response type and version
/// (including nested arrays and ones added later) with a few lines; a pre-validation pass here
/// would have to re-implement each message's schema, per version, and drift from it. Such a
/// body comes back from here as [`ErrorKind::Protocol`](crate::error::ErrorKind::Protocol) naming the
/// API (`cannot decode ApiVersions v3 response: CompactArray length … exceeds the 5 bytes left
/// in the buffer`). `crate::decode` puts every decoder behind one entry point for the hostile-
/// input tests and the fuzz targets.
pub(crate) fn decode_body<R: Decodable>(api: ApiKey, version: i16, mut body: Bytes) -> Result<R> {
    let r = R::decode(&mut body, version).map_err(|e| Error::decode(api, version, &e))?;
    if body.has_remaining() {
        return Err(Error::protocol(format!(
            "{api:?} v{version} response has {} trailing bytes",
            body.remaining()
        ))
        .api(api));
    }
    Ok(r)
}

/// Reads frames from a byte stream. Small frames are carved out of a shared read buffer;
/// large ones get a buffer of their own so that zero-copy `Bytes` slices of one Fetch
/// response never pin unrelated data. The size prefix is read first and the frame's buffer
/// is sized once (never grown by doubling). A large frame's buffer goes back to a pool
/// when the last `Bytes` of the frame is dropped, and the next large frame is read into
/// it: its pages stay mapped and warm in cache, where a fresh multi-MiB allocation per
/// Fetch response cost page faults and cold-cache copies (measured: the kernel's copy
/// into our buffers took 2.6 times as long). The pool is the process's, shared by every
/// connection ([`large_frame_pool`]).
#[derive(Debug)]
pub(crate) struct FrameReader<R> {
    io: R,
    buf: BytesMut,
    /// Freed large-frame buffers ([`large_frame_pool`]).
    big: BufferPool,
    max_frame: usize,
}

/// Frames up to this size share the read buffer.
const SMALL_FRAME: usize = 64 * 1024;
/// Capacity of the freed large-frame buffers the process keeps for reuse, over all its
/// connections.
const BIG_POOL_BYTES: usize = 24 * 1024 * 1024;

/// The process's pool of freed large-frame buffers, up to [`BIG_POOL_BYTES`].
///
/// One pool for every connection, sized like a replicator's in-flight data (Fetch responses
/// stay referenced until their batches are acknowledged, so several are alive at once):
/// with 8 MiB per connection, a copy of 512 MiB allocated about 60 fresh multi-MiB
/// buffers, and where the allocator hands large blocks straight back to the kernel (musl,
/// which the static binary links) every byte received landed on a freshly zeroed page:
/// 90,000–160,000 page faults and about 30 % more CPU per GiB than with the buffers
/// reused (docs/benchmarks.md). Shared rather than per connection, so that many brokers
/// do not multiply what is kept idle.
fn large_frame_pool() -> &'static BufferPool {
    static POOL: std::sync::OnceLock<BufferPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| BufferPool::new(BIG_POOL_BYTES))
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(io: R, max_frame: usize) -> Self {
        Self::with_pool(io, max_frame, large_frame_pool().clone())
    }

    /// A reader whose large frames come from and go back to `big`.
    fn with_pool(io: R, max_frame: usize, big: BufferPool) -> Self {
        FrameReader {
            io,
            buf: BytesMut::with_capacity(SMALL_FRAME),
            big,
            max_frame,
        }
    }

    /// Reads one frame (without its size prefix). `Ok(None)` on a clean close between frames.
    pub(crate) async fn read_frame(&mut self) -> Result<Option<Bytes>> {
        while self.buf.len() < 4 {
            if self.buf.capacity() - self.buf.len() < 4 {
                self.buf.reserve(SMALL_FRAME);
            }
            if self.io.read_buf(&mut self.buf).await? == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(Error::new(crate::error::ErrorKind::ConnectionClosed)
                    .message("connection closed inside a frame header"));
            }
        }
        let raw = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        let len = check_frame_len(raw, self.max_frame)?;
        if len <= SMALL_FRAME {
            while self.buf.len() < 4 + len {
                self.buf.reserve(4 + len - self.buf.len());
                if self.io.read_buf(&mut self.buf).await? == 0 {
                    return Err(Error::new(crate::error::ErrorKind::ConnectionClosed)
                        .message("connection closed inside a frame"));
                }
            }
            self.buf.advance(4);
            return Ok(Some(self.buf.split_to(len).freeze()));
        }
        // Large frame: move what we have into a buffer of its own, read the rest into it.
        self.buf.advance(4);
        let have = self.buf.len().min(len);
        let mut frame = self.big.take(len);
        frame.extend_from_slice(&self.buf[..have]);
        self.buf.advance(have);
        while frame.len() < len {
            let want = len - frame.len();
            let n = (&mut self.io)
                .take(want as u64)
                .read_buf(&mut frame)
                .await?;
            if n == 0 {
                self.big.put(frame);
                return Err(Error::new(crate::error::ErrorKind::ConnectionClosed)
                    .message("connection closed inside a frame"));
            }
        }
        Ok(Some(self.big.freeze(frame)))
    }
}

#[cfg(test)]
mod tests;
