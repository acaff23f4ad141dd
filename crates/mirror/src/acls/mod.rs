//! Topic ACL sync (`sync.topic_acls`, MM2's `sync.topic.acls.enabled`): the source's
//! topic ACLs, mapped by [`map`], created on the target where missing. Each binding Strait
//! creates is recorded in the flow's state topic ([`crate::state::acls`]); with
//! `sync.delete_topic_acls` the recorded ones whose source ACL is gone are deleted
//! ([`delete`] has the rules). An ACL Strait did not create is never deleted or changed.
//!
//! A cluster without an authorizer, or one whose ACL APIs answer what cannot be decoded
//! (Tansu 0.6: an empty DescribeAcls, a malformed CreateAcls), is reported once, clearly,
//! and ACL sync stops for the run; replication goes on.

pub mod delete;
pub mod ledger;
pub mod map;

use std::collections::BTreeSet;

use strait_client::{AclBinding, AclResource, Client, ErrorKind};

pub use delete::{Deletions, Keep};
pub use ledger::Ledger;
pub use map::{AclPlan, Skip, plan, target_binding};

use crate::config::Flow;
use crate::error::MirrorError;
use crate::state::{StateWriter, acls as record, read_created_acls};

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
    /// ACLs Strait created that it deleted from the target.
    pub deleted: usize,
    /// ACLs Strait created, no longer desired, that it kept (reasons logged at debug).
    pub kept: usize,
    /// ACLs Strait created that the target no longer held: forgotten.
    pub forgotten: usize,
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

/// Reads both sides' topic ACLs and the bindings Strait recorded as created (the flow's
/// state topic), and plans the sync.
pub async fn plan_sync(source: &Client, target: &Client, flow: &Flow) -> Result<AclPlan, AclError> {
    let created = read_created_acls(target, flow)
        .await
        .map_err(AclError::Failed)?;
    plan_with(source, target, flow, &created).await
}

/// [`plan_sync`] with the created set known.
async fn plan_with(
    source: &Client,
    target: &Client,
    flow: &Flow,
    created: &BTreeSet<AclBinding>,
) -> Result<AclPlan, AclError> {
    let src = source
        .describe_acls(AclResource::Topic)
        .await
        .map_err(|e| acl_error("describe ACLs", e, &flow.source, flow))?;
    let dst = target
        .describe_acls(AclResource::Topic)
        .await
        .map_err(|e| acl_error("describe ACLs", e, &flow.target, flow))?;
    Ok(plan(&src, &dst, created, flow))
}

fn acl_error(what: &str, e: strait_client::Error, cluster: &str, flow: &Flow) -> AclError {
    match unsupported(&e) {
        Some(reason) => AclError::Unsupported(format!(
            "flow {}: cluster {cluster} does not support ACLs: {reason}; topic ACLs are not synced",
            flow.name
        )),
        None => AclError::Failed(MirrorError::kafka(what, e).cluster(cluster)),
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
    /// The bindings recorded as created (read from the state topic at the first sync; this
    /// job is their only writer), with the changes not written yet ([`ledger`]).
    ledger: Option<Ledger>,
    state: StateWriter,
}

impl AclSync {
    /// The sync of `flow`.
    pub fn new(flow: &Flow, source: Client, target: Client) -> Self {
        AclSync {
            flow: flow.clone(),
            state: StateWriter::new(target.clone(), flow),
            source,
            target,
            off: (!flow.sync.topic_acls).then(|| "sync.topic_acls = false".to_owned()),
            ledger: None,
        }
    }

    /// Why the sync is off, if it is.
    pub fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// One round: create the missing target ACLs and record them, then (with
    /// `sync.delete_topic_acls`) delete the recorded ones whose source ACL is gone. A side
    /// without ACL support turns the sync off (logged once at warn).
    pub async fn sync_once(&mut self) -> Result<AclSyncReport, MirrorError> {
        if self.off.is_some() {
            return Ok(AclSyncReport::default());
        }
        self.save().await?;
        let created = match &self.ledger {
            Some(l) => l.created().clone(),
            None => {
                let c = read_created_acls(&self.target, &self.flow).await?;
                self.ledger = Some(Ledger::new(c.clone()));
                c
            }
        };
        let plan = match plan_with(&self.source, &self.target, &self.flow, &created).await {
            Ok(p) => p,
            Err(AclError::Unsupported(why)) => return Ok(self.turn_off(why)),
            Err(AclError::Failed(e)) => return Err(e),
        };
        let flow = &self.flow.name;
        for (b, why) in &plan.skipped {
            tracing::debug!(flow = %flow, acl = %b, reason = %why, "ACL not copied");
        }
        let d = &plan.deletions;
        for (b, why) in &d.kept {
            // Kept by config: debug. Held for a reason the operator should look at: warn.
            if *why == Keep::Disabled {
                tracing::debug!(flow = %flow, acl = %b, reason = %why, "ACL Strait created kept");
            } else {
                tracing::warn!(flow = %flow, cluster = %self.flow.target, acl = %b, reason = %why,
                    "ACL Strait created, whose source ACL is gone, not deleted");
            }
        }
        for b in &d.forget {
            tracing::info!(flow = %flow, cluster = %self.flow.target, acl = %b,
                "ACL Strait created is no longer on the target: forgotten");
        }
        let mut report = AclSyncReport {
            present: plan.present,
            skipped: plan.skipped.len(),
            kept: d.kept.len(),
            forgotten: d.forget.len(),
            ..AclSyncReport::default()
        };
        self.record(&[], &d.forget);
        let outcome = self.create(&plan, &mut report).await;
        let outcome = match outcome {
            Ok(()) => self.delete(&plan, &mut report).await,
            e => e,
        };
        // What was created or deleted is recorded even when a later step failed.
        let saved = self.save().await;
        match outcome {
            Ok(()) => saved.map(|()| report),
            Err(AclError::Unsupported(why)) => {
                saved?;
                Ok(self.turn_off(why))
            }
            Err(AclError::Failed(e)) => Err(e),
        }
    }

    async fn create(&mut self, plan: &AclPlan, report: &mut AclSyncReport) -> Result<(), AclError> {
        if plan.create.is_empty() {
            return Ok(());
        }
        let (flow, cluster) = (&self.flow, &self.flow.target);
        let results = self
            .target
            .create_acls(&plan.create)
            .await
            .map_err(|e| acl_error("create ACLs", e, cluster, flow))?;
        let mut done = Vec::new();
        for (b, r) in plan.create.iter().zip(results) {
            match r {
                Ok(()) => {
                    report.created += 1;
                    tracing::info!(flow = %flow.name, cluster = %cluster, acl = %b, "created ACL");
                    done.push(b.clone());
                }
                Err(e) => {
                    tracing::warn!(flow = %flow.name, cluster = %cluster, acl = %b, error = %e, "cannot create ACL")
                }
            }
        }
        self.record(&done, &[]);
        Ok(())
    }

    async fn delete(&mut self, plan: &AclPlan, report: &mut AclSyncReport) -> Result<(), AclError> {
        let delete = &plan.deletions.delete;
        if delete.is_empty() {
            return Ok(());
        }
        let (flow, cluster) = (&self.flow, &self.flow.target);
        let results = self
            .target
            .delete_acls(delete)
            .await
            .map_err(|e| acl_error("delete ACLs", e, cluster, flow))?;
        let mut gone = Vec::new();
        for (b, r) in delete.iter().zip(results) {
            match r {
                Ok(0) => {
                    report.forgotten += 1;
                    tracing::info!(flow = %flow.name, cluster = %cluster, acl = %b,
                        "ACL Strait created was already gone from the target: forgotten");
                    gone.push(b.clone());
                }
                Ok(_) => {
                    report.deleted += 1;
                    tracing::info!(flow = %flow.name, cluster = %cluster, acl = %b,
                        "deleted ACL Strait created (its source ACL is gone)");
                    gone.push(b.clone());
                }
                Err(e) => {
                    tracing::warn!(flow = %flow.name, cluster = %cluster, acl = %b, error = %e, "cannot delete ACL")
                }
            }
        }
        self.record(&[], &gone);
        Ok(())
    }

    /// Notes bindings recorded as created (`add`) and forgotten (`remove`).
    fn record(&mut self, add: &[AclBinding], remove: &[AclBinding]) {
        self.ledger
            .get_or_insert_with(Ledger::default)
            .record(add, remove);
    }

    /// Writes the unsaved changes to the state topic.
    async fn save(&mut self) -> Result<(), MirrorError> {
        let Some(ledger) = &mut self.ledger else {
            return Ok(());
        };
        let (add, remove) = ledger.unsaved();
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        self.state.write_raw(record::records(&add, &remove)).await?;
        ledger.saved();
        Ok(())
    }

    fn turn_off(&mut self, reason: String) -> AclSyncReport {
        tracing::warn!(flow = %self.flow.name, "{reason}; replication goes on");
        self.off = Some(reason);
        AclSyncReport::default()
    }
}
