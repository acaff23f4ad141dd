//! Topic ACL sync (`sync.topic_acls`, MM2's `sync.topic.acls.enabled`): the source's
//! topic ACLs, mapped by [`map`], created on the target where missing. Strait only ever
//! creates: it never deletes or changes an ACL on the target (neither does MM2).
//!
//! A cluster without an authorizer, or one whose ACL APIs answer what cannot be decoded
//! (Tansu 0.6: an empty DescribeAcls, a malformed CreateAcls), is reported once, clearly,
//! and ACL sync stops for the run; replication goes on.

pub mod map;

use strait_client::{AclResource, Client, ErrorKind};

pub use map::{AclPlan, Skip, plan, target_binding};

use crate::config::Flow;
use crate::error::MirrorError;

/// Kafka's SECURITY_DISABLED: the cluster has no authorizer.
const SECURITY_DISABLED: i16 = 54;

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclSyncReport {
    /// ACLs created on the target.
    pub created: usize,
    /// Target ACLs already present.
    pub present: usize,
    /// Source ACLs not copied (reasons are logged at debug).
    pub skipped: usize,
}

/// Whether a side supports ACLs, as far as Strait can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// It answered.
    Yes,
    /// It does not: the reason, reported once.
    No(String),
}

/// Classifies an ACL API error: `Some(reason)` when it means the cluster does not support
/// ACLs (no authorizer, or an answer that cannot be decoded), `None` for other errors.
pub fn unsupported(e: &strait_client::Error) -> Option<String> {
    if e.kafka_code() == Some(SECURITY_DISABLED) {
        return Some("it has no authorizer (SECURITY_DISABLED)".to_owned());
    }
    match e.kind() {
        ErrorKind::Protocol(_) => Some(format!("its ACL API answer cannot be decoded ({e})")),
        ErrorKind::UnsupportedVersion { .. } => Some(format!("it lacks the ACL APIs ({e})")),
        _ => None,
    }
}

/// Why ACLs could not be synced.
#[derive(Debug)]
pub enum AclError {
    /// A side does not support ACLs (the message names it and why).
    Unsupported(String),
    /// Anything else.
    Failed(MirrorError),
}

impl std::fmt::Display for AclError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AclError::Unsupported(m) => f.write_str(m),
            AclError::Failed(e) => e.fmt(f),
        }
    }
}

/// Reads both sides' topic ACLs and plans the sync.
pub async fn plan_sync(source: &Client, target: &Client, flow: &Flow) -> Result<AclPlan, AclError> {
    let src = source
        .describe_acls(AclResource::Topic)
        .await
        .map_err(|e| acl_error("describe ACLs", e, &flow.source, flow))?;
    let dst = target
        .describe_acls(AclResource::Topic)
        .await
        .map_err(|e| acl_error("describe ACLs", e, &flow.target, flow))?;
    Ok(plan(&src, &dst, flow))
}

fn acl_error(what: &str, e: strait_client::Error, cluster: &str, flow: &Flow) -> AclError {
    match unsupported(&e) {
        Some(reason) => AclError::Unsupported(format!(
            "flow {}: cluster {cluster} does not support ACLs: {reason}; topic ACLs are not synced",
            flow.name
        )),
        None => AclError::Failed(
            MirrorError::kafka(what, e)
                .flow(&flow.name)
                .cluster(cluster),
        ),
    }
}

/// The flow's ACL sync: [`AclSync::sync_once`] every `intervals.topic_acl_sync`.
#[derive(Debug)]
pub struct AclSync {
    flow: Flow,
    source: Client,
    target: Client,
    /// Set once a side turned out not to support ACLs: nothing more is tried.
    off: Option<String>,
}

impl AclSync {
    /// The sync of `flow`.
    pub fn new(flow: &Flow, source: Client, target: Client) -> Self {
        AclSync {
            flow: flow.clone(),
            source,
            target,
            off: (!flow.sync.topic_acls).then(|| "sync.topic_acls = false".to_owned()),
        }
    }

    /// Why the sync is off, if it is.
    pub fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// One round: create the missing target ACLs. A side without ACL support turns the
    /// sync off (logged once at warn) and returns an empty report.
    pub async fn sync_once(&mut self) -> Result<AclSyncReport, MirrorError> {
        if self.off.is_some() {
            return Ok(AclSyncReport::default());
        }
        let plan = match plan_sync(&self.source, &self.target, &self.flow).await {
            Ok(p) => p,
            Err(AclError::Unsupported(why)) => return Ok(self.turn_off(why)),
            Err(AclError::Failed(e)) => return Err(e),
        };
        for (b, why) in &plan.skipped {
            tracing::debug!(flow = %self.flow.name, acl = %b, reason = %why, "ACL not copied");
        }
        let mut report = AclSyncReport {
            created: 0,
            present: plan.present,
            skipped: plan.skipped.len(),
        };
        if plan.create.is_empty() {
            return Ok(report);
        }
        let results = match self.target.create_acls(&plan.create).await {
            Ok(r) => r,
            Err(e) => match acl_error("create ACLs", e, &self.flow.target, &self.flow) {
                AclError::Unsupported(why) => return Ok(self.turn_off(why)),
                AclError::Failed(e) => return Err(e),
            },
        };
        for (b, r) in plan.create.iter().zip(results) {
            match r {
                Ok(()) => {
                    report.created += 1;
                    tracing::info!(flow = %self.flow.name, cluster = %self.flow.target, acl = %b, "created ACL");
                }
                Err(e) => {
                    tracing::warn!(flow = %self.flow.name, cluster = %self.flow.target, acl = %b, error = %e, "cannot create ACL")
                }
            }
        }
        Ok(report)
    }

    fn turn_off(&mut self, reason: String) -> AclSyncReport {
        tracing::warn!(flow = %self.flow.name, "{reason}; replication goes on");
        self.off = Some(reason);
        AclSyncReport::default()
    }
}
