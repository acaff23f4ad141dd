//! The state topic's record of the topic ACLs Strait created on the target (pure codec,
//! and the reader): one record per binding, so that `sync.delete_topic_acls` deletes only
//! ACLs Strait itself created ([`crate::acls`]). A binding is recorded after CreateAcls
//! succeeded for it and tombstoned once it is deleted or found gone from the target.
//!
//! Key: `u8 kind (4) | i8 resource type | u16 length + resource name | i8 pattern type |
//! u16 length + principal | u16 length + host | i8 operation | i8 permission`, big-endian
//! (the protocol's codes, unknown ones kept as they are) — one key per binding, so
//! compaction keeps each until its tombstone.
//!
//! Value: `u8 version (1) | u32 CRC-32C` of the key's bytes followed by the version byte:
//! the checksum covers the binding in the key. Unknown versions are refused.

use std::collections::BTreeSet;

use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource, Client};

use super::codec::{Reader, StateDecodeError};
use crate::config::Flow;
use crate::error::MirrorError;

/// The first key byte of a created-ACL record.
pub const ACL_KEY_KIND: u8 = super::codec::kind::ACL;
/// The value encoding version written.
pub const ACL_VALUE_VERSION: u8 = 1;

/// Encodes a binding's key; `None` when a field is longer than 65,535 bytes (such a
/// binding cannot be recorded, so Strait never claims it).
pub fn encode_acl_key(b: &AclBinding) -> Option<Vec<u8>> {
    let mut k = Vec::with_capacity(12 + b.name.len() + b.principal.len() + b.host.len());
    k.push(ACL_KEY_KIND);
    k.push(b.resource.code() as u8);
    put(&mut k, &b.name)?;
    k.push(b.pattern.code() as u8);
    put(&mut k, &b.principal)?;
    put(&mut k, &b.host)?;
    k.push(b.operation.code() as u8);
    k.push(b.permission.code() as u8);
    Some(k)
}

fn put(out: &mut Vec<u8>, s: &str) -> Option<()> {
    let len = u16::try_from(s.len()).ok()?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes());
    Some(())
}

/// Decodes a binding's key.
pub fn decode_acl_key(bytes: &[u8]) -> Result<AclBinding, StateDecodeError> {
    let mut r = Reader::new(bytes);
    let kind = r.u8()?;
    if kind != ACL_KEY_KIND {
        return Err(StateDecodeError::Version(kind));
    }
    let code = |r: &mut Reader<'_>| r.u8().map(|c| c as i8);
    let resource = AclResource::from_code(code(&mut r)?);
    let name = r.str()?;
    let pattern = AclPattern::from_code(code(&mut r)?);
    let principal = r.str()?;
    let host = r.str()?;
    let operation = AclBindingOp::from_code(code(&mut r)?);
    let permission = AclPermission::from_code(code(&mut r)?);
    r.end()?;
    Ok(AclBinding {
        resource,
        name,
        pattern,
        principal,
        host,
        operation,
        permission,
    })
}

/// Encodes the value recorded under `key` (an [`encode_acl_key`]).
pub fn encode_acl_value(key: &[u8]) -> Vec<u8> {
    let mut v = vec![ACL_VALUE_VERSION];
    let crc = crc32c::crc32c_append(crc32c::crc32c(key), &v);
    v.extend_from_slice(&crc.to_be_bytes());
    v
}

/// Checks the value recorded under `key`.
pub fn decode_acl_value(key: &[u8], value: &[u8]) -> Result<(), StateDecodeError> {
    let mut r = Reader::new(value);
    let version = r.u8()?;
    if version != ACL_VALUE_VERSION {
        return Err(StateDecodeError::Version(version));
    }
    let crc = u32::from_be_bytes(r.array()?);
    r.end()?;
    if crc32c::crc32c_append(crc32c::crc32c(key), &value[..1]) != crc {
        return Err(StateDecodeError::Checksum);
    }
    Ok(())
}

/// Folds one state record into the set of created bindings: a record adds its binding,
/// a tombstone removes it. Records of other kinds are left alone.
pub fn apply(
    set: &mut BTreeSet<AclBinding>,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), StateDecodeError> {
    if super::codec::key_kind(key) != Some(ACL_KEY_KIND) {
        return Ok(());
    }
    let b = decode_acl_key(key)?;
    match value {
        None => {
            set.remove(&b);
        }
        Some(v) => {
            decode_acl_value(key, v)?;
            set.insert(b);
        }
    }
    Ok(())
}

/// State records that record `add` as created and forget `remove` (tombstones), for
/// [`super::StateWriter::write_raw`]; the removals come first, so a binding in both ends
/// up recorded. A binding that cannot be encoded is left out ([`encode_acl_key`]).
pub fn records(add: &[AclBinding], remove: &[AclBinding]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let gone = remove.iter().filter_map(encode_acl_key).map(|k| (k, None));
    let added = add.iter().filter_map(encode_acl_key).map(|k| {
        let v = encode_acl_value(&k);
        (k, Some(v))
    });
    gone.chain(added).collect()
}

/// Reads the bindings recorded as created by Strait from `flow`'s state topic (empty when
/// the topic is missing).
pub async fn read_created_acls(
    target: &Client,
    flow: &Flow,
) -> Result<BTreeSet<AclBinding>, MirrorError> {
    let mut set = BTreeSet::new();
    super::store::read_records(target, flow, |key, value, _| {
        apply(&mut set, key, value).map_err(|e| format!("created ACL record: {e}"))
    })
    .await
    .map(|()| set)
}

#[cfg(test)]
mod tests;
