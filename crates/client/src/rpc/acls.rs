//! ACLs: DescribeAcls, CreateAcls, DeleteAcls (v1+, which carry pattern types).
//!
//! A binding is a resource pattern (type, name, pattern type) and an entry (principal,
//! host, operation, permission), as Kafka's `AclBinding`. Codes the protocol defines but
//! this crate has no name for are kept as they are (`Other`), never dropped or guessed.

use std::fmt;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest,
    DescribeAclsResponse,
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
    /// The protocol code.
    pub fn code(self) -> i8 {
        match self {
            AclResource::Topic => 2,
            AclResource::Group => 3,
            AclResource::Cluster => 4,
            AclResource::TransactionalId => 5,
            AclResource::Other(c) => c,
        }
    }

    /// The value of a protocol code (unknown codes kept as `Other`).
    pub fn from_code(c: i8) -> Self {
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
    /// The protocol code.
    pub fn code(self) -> i8 {
        match self {
            AclPattern::Literal => 3,
            AclPattern::Prefixed => 4,
            AclPattern::Other(c) => c,
        }
    }

    /// The value of a protocol code (unknown codes kept as `Other`).
    pub fn from_code(c: i8) -> Self {
        match c {
            3 => AclPattern::Literal,
            4 => AclPattern::Prefixed,
            c => AclPattern::Other(c),
        }
    }
}

impl AclBindingOp {
    /// The protocol code.
    pub fn code(self) -> i8 {
        match self {
            AclBindingOp::All => 2,
            AclBindingOp::Op(op) => op.code() as i8,
            AclBindingOp::Other(c) => c,
        }
    }

    /// The value of a protocol code (unknown codes kept as `Other`).
    pub fn from_code(c: i8) -> Self {
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
    /// The protocol code.
    pub fn code(self) -> i8 {
        match self {
            AclPermission::Deny => 2,
            AclPermission::Allow => 3,
            AclPermission::Other(c) => c,
        }
    }

    /// The value of a protocol code (unknown codes kept as `Other`).
    pub fn from_code(c: i8) -> Self {
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

/// The outcome of a DeleteAcls response for the `bindings` of [`delete_request`], one per
/// binding in order: how many ACLs it deleted (0: it was not there), or its error. A
/// response with another number of results than filters is a protocol error; so is a
/// deleted ACL that is not the binding its exact filter names (reported on that binding:
/// the broker deleted something Strait did not ask for).
pub fn deleted(resp: DeleteAclsResponse, bindings: &[AclBinding]) -> Result<Vec<Result<usize>>> {
    if resp.filter_results.len() != bindings.len() {
        return Err(Error::protocol(format!(
            "DeleteAcls answered {} results for {} filters",
            resp.filter_results.len(),
            bindings.len()
        ))
        .api(ApiKey::DeleteAcls));
    }
    let check = |code, msg: &Option<StrBytes>| {
        Error::check_code(code, msg.as_ref().map(|m| m.as_str()))
            .map_err(|e| e.api(ApiKey::DeleteAcls))
    };
    Ok(resp
        .filter_results
        .into_iter()
        .zip(bindings)
        .map(|(r, b)| {
            check(r.error_code, &r.error_message)?;
            for m in &r.matching_acls {
                check(m.error_code, &m.error_message)?;
                let got = AclBinding {
                    resource: AclResource::from_code(m.resource_type),
                    name: m.resource_name.to_string(),
                    pattern: AclPattern::from_code(m.pattern_type),
                    principal: m.principal.to_string(),
                    host: m.host.to_string(),
                    operation: AclBindingOp::from_code(m.operation),
                    permission: AclPermission::from_code(m.permission_type),
                };
                if &got != b {
                    return Err(Error::protocol(format!(
                        "DeleteAcls for {b} reports deleting another ACL: {got}"
                    ))
                    .api(ApiKey::DeleteAcls));
                }
            }
            Ok(r.matching_acls.len())
        })
        .collect())
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

    /// Deletes exactly `bindings` (one exact filter each); per binding, how many ACLs it
    /// deleted, or its error ([`deleted`]).
    pub async fn delete_acls(&self, bindings: &[AclBinding]) -> Result<Vec<Result<usize>>> {
        if bindings.is_empty() {
            return Ok(Vec::new());
        }
        let (_, _, resp) = self
            .with_retries("delete_acls", || {
                self.send_any(|_| Ok(delete_request(bindings)))
            })
            .await?;
        deleted(resp, bindings)
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
    fn delete_acls_v1_is_one_exact_filter_per_binding_in_the_protocol_bytes() {
        // DeleteAcls v1: filters => resource_type_filter INT8, resource_name_filter
        // NULLABLE_STRING, pattern_type_filter INT8, principal_filter NULLABLE_STRING,
        // host_filter NULLABLE_STRING, operation INT8, permission_type INT8. Every field is
        // set: no ANY (1), no null name, principal or host, so it matches that binding only.
        let mut want = 1i32.to_be_bytes().to_vec();
        want.push(2);
        want.extend(str16("orders"));
        want.push(4);
        want.extend(str16("User:alice"));
        want.extend(str16("*"));
        want.push(3);
        want.push(3);
        assert_eq!(encode(&delete_request(&[binding()]), 1), want);
    }

    #[test]
    fn delete_acls_v2_is_the_flexible_form_of_the_same_filter() {
        // v2+: compact array (n + 1), compact strings (len + 1), a tag buffer per filter
        // and one for the request.
        fn compact(s: &str) -> Vec<u8> {
            let mut v = vec![s.len() as u8 + 1];
            v.extend_from_slice(s.as_bytes());
            v
        }
        let mut want = vec![2u8, 2];
        want.extend(compact("orders"));
        want.push(4);
        want.extend(compact("User:alice"));
        want.extend(compact("*"));
        want.extend([3, 3, 0, 0]);
        assert_eq!(encode(&delete_request(&[binding()]), 2), want);
    }

    /// A DeleteAcls v1 response body: per filter result, its error and matching ACLs.
    fn delete_response_v1(results: &[(i16, Vec<AclBinding>)]) -> DeleteAclsResponse {
        let mut b = 0i32.to_be_bytes().to_vec(); // throttle_time_ms
        b.extend((results.len() as i32).to_be_bytes());
        for (code, acls) in results {
            b.extend(code.to_be_bytes());
            b.extend((-1i16).to_be_bytes()); // error_message: null
            b.extend((acls.len() as i32).to_be_bytes());
            for a in acls {
                b.extend(0i16.to_be_bytes());
                b.extend((-1i16).to_be_bytes());
                b.push(a.resource.code() as u8);
                b.extend(str16(&a.name));
                b.push(a.pattern.code() as u8);
                b.extend(str16(&a.principal));
                b.extend(str16(&a.host));
                b.push(a.operation.code() as u8);
                b.push(a.permission.code() as u8);
            }
        }
        let mut bytes = bytes::Bytes::from(b);
        let r = DeleteAclsResponse::decode(&mut bytes, 1).expect("decode");
        assert!(bytes.is_empty(), "the whole body is read");
        r
    }

    #[test]
    fn a_delete_acls_response_counts_what_each_filter_deleted() {
        let other = AclBinding {
            name: "payments".into(),
            ..binding()
        };
        let resp = delete_response_v1(&[(0, vec![binding()]), (0, vec![])]);
        let got = deleted(resp, &[binding(), other]).expect("results");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().ok(), Some(&1));
        assert_eq!(got[1].as_ref().ok(), Some(&0));
    }

    #[test]
    fn a_delete_acls_error_is_typed_per_binding() {
        let resp = delete_response_v1(&[(31, vec![])]);
        let got = deleted(resp, &[binding()]).expect("results");
        let e = got[0].as_ref().expect_err("CLUSTER_AUTHORIZATION_FAILED");
        assert_eq!(e.kafka_code(), Some(31));
        assert_eq!(e.api_key(), Some(ApiKey::DeleteAcls));
    }

    #[test]
    fn a_delete_acls_answer_with_another_count_or_another_acl_is_refused() {
        let resp = delete_response_v1(&[(0, vec![]), (0, vec![])]);
        let e = deleted(resp, &[binding()]).expect_err("2 results for 1 filter");
        assert!(
            matches!(e.kind(), crate::error::ErrorKind::Protocol(_)),
            "{e}"
        );
        let stranger = AclBinding {
            principal: "User:mallory".into(),
            ..binding()
        };
        let resp = delete_response_v1(&[(0, vec![stranger])]);
        let got = deleted(resp, &[binding()]).expect("results");
        let e = got[0].as_ref().expect_err("a different ACL was deleted");
        assert!(e.to_string().contains("User:mallory"), "{e}");
    }

    #[test]
    fn a_delete_acls_response_declaring_more_results_than_it_holds_is_a_decode_error() {
        // The count is read off the wire: 1,000,000 filter results in a 10-byte body is
        // refused by the (bounded) decoder, not allocated.
        let mut b = 0i32.to_be_bytes().to_vec();
        b.extend(1_000_000i32.to_be_bytes());
        b.extend([0, 0]);
        let r = DeleteAclsResponse::decode(&mut bytes::Bytes::from(b), 1);
        assert!(r.is_err());
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
