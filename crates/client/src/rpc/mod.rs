//! Typed RPCs, one module per API group. Each module adds methods to [`crate::Client`].
//!
//! The [`Request`] trait links a kafka-protocol request type to its response and API key
//! (kafka-protocol only provides that link with its `broker` feature, which we do not ship).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};

pub mod acls;
pub mod admin;
pub mod authz;
pub mod fetch;
pub mod groups;
pub mod offsets;
pub mod produce;
pub mod txn;

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
        $(impl Request for $req {
            const KEY: ApiKey = ApiKey::$key;
            type Response = $resp;
            fn throttle_ms(resp: &$resp) -> i32 {
                resp.throttle_time_ms
            }
        })*
    };
}

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
        $(impl Request for $req {
            const KEY: ApiKey = ApiKey::$key;
            type Response = $resp;
            fn throttle_ms(_: &$resp) -> i32 {
                0
            }
        })*
    };
}

unthrottled_requests! {
    SaslHandshakeRequest => SaslHandshakeResponse: SaslHandshake,
    SaslAuthenticateRequest => SaslAuthenticateResponse: SaslAuthenticate,
}
