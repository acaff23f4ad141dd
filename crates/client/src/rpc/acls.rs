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
mod tests;
