//! ApiVersions negotiation: per connection, the highest version both sides support.
//!
//! Our side of each range is kafka-protocol 0.18's range, narrowed to versions this crate has
//! tested and encodes correctly (for instance Produce stops at v12, the last version that
//! addresses topics by name; Fetch goes to v13, which addresses them by topic id, and a fetch
//! that has no id for some topic is sent at v12 at most: `rpc::fetch`; InitProducerId starts
//! at v3 because Tansu fails v0-2).

use std::collections::HashMap;

use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use crate::error::{Error, ErrorKind, Result};

/// The versions this crate is willing to use for `api`, or `None` if it never sends it.
pub fn supported_range(api: ApiKey) -> Option<(i16, i16)> {
    use ApiKey::*;
    let ours = match api {
        Produce => (3, 12),
        Fetch => (4, 13),
        ListOffsets => (1, 9),
        Metadata => (1, 12),
        OffsetCommit => (2, 9),
        OffsetFetch => (1, 7),
        FindCoordinator => (0, 3),
        JoinGroup => (0, 9),
        Heartbeat => (0, 4),
        LeaveGroup => (3, 5),
        SyncGroup => (0, 5),
        DescribeGroups => (0, 5),
        // v5 names each group's type (classic, consumer, share, streams).
        ListGroups => (0, 5),
        // KIP-848: DescribeGroups shows a consumer-protocol group as Dead with no members.
        ConsumerGroupDescribe => (0, 1),
        ApiVersions => (0, 3),
        CreateTopics => (2, 7),
        DeleteTopics => (1, 6),
        InitProducerId => (3, 5),
        // v4+ is the broker-to-broker batched form; clients stay on v3 (as the Java client).
        AddPartitionsToTxn => (0, 3),
        AddOffsetsToTxn => (0, 4),
        EndTxn => (0, 4),
        TxnOffsetCommit => (0, 4),
        DescribeConfigs => (1, 4),
        CreatePartitions => (0, 3),
        IncrementalAlterConfigs => (0, 1),
        DescribeCluster => (0, 1),
        // v1+: pattern types (KIP-290).
        DescribeAcls => (1, 3),
        CreateAcls => (1, 3),
        DeleteAcls => (1, 3),
        // KIP-152: v1 frames SASL tokens as SaslAuthenticate requests (v0 sent them raw).
        SaslHandshake => (1, 1),
        SaslAuthenticate => (0, 2),
        _ => return None,
    };
    // Never claim more than the crate can encode.
    let crate_range = api.valid_versions();
    let lo = ours.0.max(crate_range.min);
    let hi = ours.1.min(crate_range.max);
    (lo <= hi).then_some((lo, hi))
}

/// The API ranges a broker advertised in its ApiVersions response.
#[derive(Debug, Clone, Default)]
pub struct BrokerVersions {
    ranges: HashMap<i16, (i16, i16)>,
}

impl BrokerVersions {
    /// Builds the table from an ApiVersions response.
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        BrokerVersions {
            ranges: resp
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect(),
        }
    }

    /// Builds the table from `(api, min, max)` triples (tests and fakes).
    pub fn from_ranges(ranges: impl IntoIterator<Item = (ApiKey, i16, i16)>) -> Self {
        BrokerVersions {
            ranges: ranges
                .into_iter()
                .map(|(k, lo, hi)| (k as i16, (lo, hi)))
                .collect(),
        }
    }

    /// The broker's advertised range for `api`, if any.
    pub fn broker_range(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.ranges.get(&(api as i16)).copied()
    }

    /// The version to use for `api`: the highest in both ranges. The error names the API and
    /// both ranges when there is no overlap.
    pub fn pick(&self, api: ApiKey) -> Result<i16> {
        let ours = supported_range(api)
            .ok_or_else(|| Error::invalid(format!("this client does not implement {api:?}")))?;
        let broker = self.broker_range(api);
        match broker {
            Some((lo, hi)) if lo <= ours.1 && ours.0 <= hi => Ok(hi.min(ours.1)),
            _ => Err(Error::new(ErrorKind::UnsupportedVersion { api, broker, ours }).api(api)),
        }
    }
}

#[cfg(test)]
mod tests;
