//! ACLs: DescribeAcls, CreateAcls, DeleteAcls (v1+, which carry pattern types).
//!
//! A binding is a resource pattern (type, name, pattern type) and an entry (principal,
//! host, operation, permission), as Kafka's `AclBinding`. Codes the protocol defines but
//! this crate has no name for are kept as they are (`Other`), never dropped or guessed.

use std::fmt;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::AclOperation;
use crate::client::Client;
use crate::error::{Error, Result};

/// A resource type (`ResourceType` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclResource {
    /// `TOPIC` (2).
    Topic,
    /// `GROUP` (3).
    Group,
    /// `CLUSTER` (4).
    Cluster,
    /// `TRANSACTIONAL_ID` (5).
    TransactionalId,
    /// Any other code.
    Other(i8),
}

/// A pattern type (`PatternType` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclPattern {
    /// `LITERAL` (3): the name exactly (or `*`: every resource of the type).
    Literal,
    /// `PREFIXED` (4): every name starting with it.
    Prefixed,
    /// Any other code.
    Other(i8),
}

/// An operation as a binding holds it: [`AclOperation`] plus `ALL` (2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclBindingOp {
    /// `ALL` (2): every operation.
    All,
    /// One operation.
    Op(AclOperation),
    /// Any other code.
    Other(i8),
}

/// A permission type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AclPermission {
    /// `DENY` (2).
    Deny,
    /// `ALLOW` (3).
    Allow,
    /// Any other code.
    Other(i8),
}

/// One ACL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// Resource type.
    pub resource: AclResource,
    /// Resource name (or prefix).
    pub name: String,
    /// How `name` matches.
    pub pattern: AclPattern,
    /// Principal, e.g. `User:alice`.
    pub principal: String,
    /// Host, `*` for any.
    pub host: String,
    /// Operation.
    pub operation: AclBindingOp,
    /// Allow or deny.
    pub permission: AclPermission,
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} {} {:?} on {:?} {:?} `{}` from host {}",
            self.permission,
            self.principal,
            self.operation,
            self.resource,
            self.pattern,
            self.name,
            self.host
        )
    }
}

impl AclResource {
    fn code(self) -> i8 {
        match self {
            AclResource::Topic => 2,
            AclResource::Group => 3,
            AclResource::Cluster => 4,
            AclResource::TransactionalId => 5,
            AclResource::Other(c) => c,
        }
    }

    fn from_code(c: i8) -> Self {
        match c {
            2 => AclResource::Topic,
            3 => AclResource::Group,
            4 => AclResource::Cluster,
            5 => AclResource::TransactionalId,
            c => AclResource::Other(c),
        }
    }
}

impl AclPattern {
    fn code(self) -> i8 {
        match self {
            AclPattern::Literal => 3,
            AclPattern::Prefixed => 4,
            AclPattern::Other(c) => c,
        }
    }

    fn from_code(c: i8) -> Self {
        match c {
            3 => AclPattern::Literal,
            4 => AclPattern::Prefixed,
            c => AclPattern::Other(c),
        }
    }
}

impl AclBindingOp {
    fn code(self) -> i8 {
        match self {
            AclBindingOp::All => 2,
            AclBindingOp::Op(op) => op.code() as i8,
            AclBindingOp::Other(c) => c,
        }
    }

    fn from_code(c: i8) -> Self {
        if c == 2 {
            return AclBindingOp::All;
        }
        AclOperation::ALL
            .iter()
            .find(|op| op.code() as i8 == c)
            .map_or(AclBindingOp::Other(c), |op| AclBindingOp::Op(*op))
    }
}

impl AclPermission {
    fn code(self) -> i8 {
        match self {
            AclPermission::Deny => 2,
            AclPermission::Allow => 3,
            AclPermission::Other(c) => c,
        }
    }

    fn from_code(c: i8) -> Self {
        match c {
            2 => AclPermission::Deny,
            3 => AclPermission::Allow,
            c => AclPermission::Other(c),
        }
    }
}

/// The protocol's `ANY` code in filters (resource, pattern, operation and permission).
const ANY: i8 = 1;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_owned())
}

/// DescribeAcls for every binding on resources of type `resource` (any name, pattern,
/// principal, host, operation and permission).
pub fn describe_request(resource: AclResource) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(resource.code())
        .with_resource_name_filter(None)
        .with_pattern_type_filter(ANY)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

/// CreateAcls for `bindings`.
pub fn create_request(bindings: &[AclBinding]) -> CreateAclsRequest {
    CreateAclsRequest::default().with_creations(
        bindings
            .iter()
            .map(|b| {
                AclCreation::default()
                    .with_resource_type(b.resource.code())
                    .with_resource_name(s(&b.name))
                    .with_resource_pattern_type(b.pattern.code())
                    .with_principal(s(&b.principal))
                    .with_host(s(&b.host))
                    .with_operation(b.operation.code())
                    .with_permission_type(b.permission.code())
            })
            .collect(),
    )
}

/// DeleteAcls with one exact filter per binding (matches that binding only).
pub fn delete_request(bindings: &[AclBinding]) -> DeleteAclsRequest {
    DeleteAclsRequest::default().with_filters(
        bindings
            .iter()
            .map(|b| {
                DeleteAclsFilter::default()
                    .with_resource_type_filter(b.resource.code())
                    .with_resource_name_filter(Some(s(&b.name)))
                    .with_pattern_type_filter(b.pattern.code())
                    .with_principal_filter(Some(s(&b.principal)))
                    .with_host_filter(Some(s(&b.host)))
                    .with_operation(b.operation.code())
                    .with_permission_type(b.permission.code())
            })
            .collect(),
    )
}

/// The bindings of a DescribeAcls response, or its error.
pub fn described(resp: DescribeAclsResponse) -> Result<Vec<AclBinding>> {
    Error::check_code(
        resp.error_code,
        resp.error_message.as_ref().map(|m| m.as_str()),
    )
    .map_err(|e| e.api(ApiKey::DescribeAcls))?;
    let mut out = Vec::new();
    for r in resp.resources {
        for a in r.acls {
            out.push(AclBinding {
                resource: AclResource::from_code(r.resource_type),
                name: r.resource_name.to_string(),
                pattern: AclPattern::from_code(r.pattern_type),
                principal: a.principal.to_string(),
                host: a.host.to_string(),
                operation: AclBindingOp::from_code(a.operation),
                permission: AclPermission::from_code(a.permission_type),
            });
        }
    }
    out.sort();
    Ok(out)
}

impl Client {
    /// Every ACL on resources of type `resource`, sorted.
    pub async fn describe_acls(&self, resource: AclResource) -> Result<Vec<AclBinding>> {
        let (_, _, resp) = self
            .with_retries("describe_acls", || {
                self.send_any(|_| Ok(describe_request(resource)))
            })
            .await?;
        described(resp)
    }

    /// Creates `bindings`; one outcome per binding, in order.
    pub async fn create_acls(&self, bindings: &[AclBinding]) -> Result<Vec<Result<()>>> {
        if bindings.is_empty() {
            return Ok(Vec::new());
        }
        let (_, _, resp) = self
            .with_retries("create_acls", || {
                self.send_any(|_| Ok(create_request(bindings)))
            })
            .await?;
        if resp.results.len() != bindings.len() {
            return Err(Error::protocol(format!(
                "CreateAcls answered {} results for {} creations",
                resp.results.len(),
                bindings.len()
            )));
        }
        Ok(resp
            .results
            .into_iter()
            .map(|r| {
                Error::check_code(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))
                    .map_err(|e| e.api(ApiKey::CreateAcls))
            })
            .collect())
    }

    /// Deletes exactly `bindings`; per binding, how many ACLs matched, or its error.
    pub async fn delete_acls(&self, bindings: &[AclBinding]) -> Result<Vec<Result<usize>>> {
        if bindings.is_empty() {
            return Ok(Vec::new());
        }
        let (_, _, resp) = self
            .with_retries("delete_acls", || {
                self.send_any(|_| Ok(delete_request(bindings)))
            })
            .await?;
        if resp.filter_results.len() != bindings.len() {
            return Err(Error::protocol(format!(
                "DeleteAcls answered {} results for {} filters",
                resp.filter_results.len(),
                bindings.len()
            )));
        }
        Ok(resp
            .filter_results
            .into_iter()
            .map(|r| {
                Error::check_code(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))
                    .map(|()| r.matching_acls.len())
                    .map_err(|e| e.api(ApiKey::DeleteAcls))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable};

    fn binding() -> AclBinding {
        AclBinding {
            resource: AclResource::Topic,
            name: "orders".into(),
            pattern: AclPattern::Prefixed,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclBindingOp::Op(AclOperation::Read),
            permission: AclPermission::Allow,
        }
    }

    fn encode<R: Encodable>(r: &R, version: i16) -> Vec<u8> {
        let mut b = BytesMut::new();
        r.encode(&mut b, version).expect("encode");
        b.to_vec()
    }

    fn str16(s: &str) -> Vec<u8> {
        let mut v = (s.len() as i16).to_be_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v
    }

    #[test]
    fn create_acls_v1_is_the_bytes_the_protocol_defines() {
        // CreateAcls v1: creations => resource_type INT8, resource_name STRING,
        // resource_pattern_type INT8, principal STRING, host STRING, operation INT8,
        // permission_type INT8 (an INT32 array length first).
        let mut want = 1i32.to_be_bytes().to_vec();
        want.push(2);
        want.extend(str16("orders"));
        want.push(4);
        want.extend(str16("User:alice"));
        want.extend(str16("*"));
        want.push(3);
        want.push(3);
        assert_eq!(encode(&create_request(&[binding()]), 1), want);
    }

    #[test]
    fn describe_acls_v1_asks_for_any_binding_on_topics() {
        // resource_type_filter INT8, resource_name_filter NULLABLE_STRING,
        // pattern_type_filter INT8, principal_filter, host_filter, operation, permission.
        let mut want = vec![2u8];
        want.extend((-1i16).to_be_bytes());
        want.push(1);
        want.extend((-1i16).to_be_bytes());
        want.extend((-1i16).to_be_bytes());
        want.push(1);
        want.push(1);
        assert_eq!(encode(&describe_request(AclResource::Topic), 1), want);
    }

    #[test]
    fn delete_acls_filters_match_one_binding_exactly() {
        let bytes = encode(&delete_request(&[binding()]), 1);
        let back = DeleteAclsRequest::decode(&mut bytes::Bytes::from(bytes), 1).expect("decode");
        let f = &back.filters[0];
        assert_eq!(f.resource_type_filter, 2);
        assert_eq!(f.resource_name_filter.as_deref(), Some("orders"));
        assert_eq!(f.pattern_type_filter, 4);
        assert_eq!(f.principal_filter.as_deref(), Some("User:alice"));
        assert_eq!(f.host_filter.as_deref(), Some("*"));
        assert_eq!((f.operation, f.permission_type), (3, 3));
    }

    #[test]
    fn unknown_codes_are_kept_not_guessed() {
        for c in -3..20i8 {
            assert_eq!(AclBindingOp::from_code(c).code(), c);
            assert_eq!(AclResource::from_code(c).code(), c);
            assert_eq!(AclPattern::from_code(c).code(), c);
            assert_eq!(AclPermission::from_code(c).code(), c);
        }
        assert_eq!(AclBindingOp::from_code(2), AclBindingOp::All);
        assert_eq!(
            AclBindingOp::from_code(4),
            AclBindingOp::Op(AclOperation::Write)
        );
    }

    #[test]
    fn a_describe_error_is_typed() {
        let resp = DescribeAclsResponse::default()
            .with_error_code(31)
            .with_error_message(Some(s("no authorizer")));
        let e = described(resp).unwrap_err();
        assert_eq!(e.kafka_code(), Some(31));
    }
}
