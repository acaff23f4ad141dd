//! Scale-out members' reports in the state topic (key kind 5): each member of a flow's
//! group records what it owns — host, version, capacity, the generation, its partitions
//! and their loads — whenever its assignment changes, and tombstones the record when it
//! leaves or its member id changes. `strait status` joins them with the coordinator's
//! member list: DescribeGroups carries the same metadata on Apache Kafka, but Tansu
//! answers it with empty metadata and assignments (docs/compatibility.md), and a report
//! also shows what a member is still releasing.
//!
//! Key: `u8 kind (5) | u16 length + member id` (big-endian). Value: the member's
//! [`MemberMetadata`] encoding (versioned and checksummed, `scale::codec`).

use std::collections::BTreeMap;

use strait_client::Client;

use super::codec::{Reader, StateDecodeError, key_kind, put_str};
use crate::config::Flow;
use crate::error::MirrorError;
use crate::scale::MemberMetadata;

/// The first key byte of a member report.
pub const MEMBER_KEY_KIND: u8 = super::codec::kind::MEMBER;

/// The key of `member_id`'s report.
pub fn encode_member_key(member_id: &str) -> Vec<u8> {
    let mut k = vec![MEMBER_KEY_KIND];
    put_str(&mut k, member_id);
    k
}

/// The member id in a report's key.
pub fn decode_member_key(key: &[u8]) -> Result<String, StateDecodeError> {
    let mut r = Reader::new(key);
    if r.u8()? != MEMBER_KEY_KIND {
        return Err(StateDecodeError::Version(MEMBER_KEY_KIND));
    }
    let id = r.str()?;
    r.end()?;
    Ok(id)
}

/// Reads every member report of `flow` (by member id; empty when the topic is missing).
pub async fn read_members(
    target: &Client,
    flow: &Flow,
) -> Result<BTreeMap<String, MemberMetadata>, MirrorError> {
    let mut out = BTreeMap::new();
    super::store::read_records(target, flow, |key, value, _| {
        if key_kind(key) != Some(MEMBER_KEY_KIND) {
            return Ok(());
        }
        let id = decode_member_key(key).map_err(|e| format!("member key: {e}"))?;
        match value {
            None => {
                out.remove(&id);
            }
            Some(v) => {
                let m = MemberMetadata::decode(v).map_err(|e| format!("member report: {e}"))?;
                out.insert(id, m);
            }
        }
        Ok(())
    })
    .await
    .map(|()| out)
}

#[cfg(test)]
mod tests;
