//! Which source topic ACLs become which target ACLs (pure), after MM2's
//! `sync.topic.acls.enabled` (`MirrorSourceConnector`), with the naming policy applied to
//! the resource pattern.
//!
//! Rules:
//! - **topics only**: bindings on other resource types are not copied (as MM2);
//! - **no write on replicas**: ALLOW WRITE is dropped — only Strait writes replicated
//!   topics (as MM2);
//! - **ALL becomes READ**: ALLOW ALL is copied as ALLOW READ (as MM2); DENY entries are
//!   copied as they are, DENY ALL included (denying more is never less safe);
//! - **literal names through the policy**: a LITERAL binding on a replicated topic is
//!   copied onto its target name; on a topic the flow does not replicate it is skipped;
//! - **prefixes and `*` only where they can cover nothing but replicas**: with `prefix`
//!   naming, PREFIXED `p` becomes PREFIXED `<alias><sep>p` and LITERAL `*` becomes
//!   PREFIXED `<alias><sep>` (every replicated topic; MM2 would write the meaningless
//!   literal `<alias><sep>*`). With `identity` naming the same pattern would also cover the
//!   target's own topics, so such bindings are skipped and reported;
//! - any other pattern type is skipped and reported.

use std::collections::BTreeSet;

use strait_client::rpc::authz::AclOperation;
use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};

use super::delete::{Deletions, decide};
use crate::config::model::NamingPolicy;
use crate::config::{Flow, TopicDecision};

/// Why a source binding is not copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not a topic ACL.
    NotTopic,
    /// ALLOW WRITE: only Strait writes replicas.
    Write,
    /// The topic is not replicated by this flow.
    NotReplicated,
    /// A prefix or `*` that would cover target topics that are not replicas.
    WouldCoverTargetTopics,
    /// A pattern type Strait does not map.
    Pattern,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Skip::NotTopic => "not a topic ACL",
            Skip::Write => "ALLOW WRITE is never copied: only Strait writes replicated topics",
            Skip::NotReplicated => "the topic is not replicated by this flow",
            Skip::WouldCoverTargetTopics => {
                "with identity naming this prefix or wildcard would also cover the target's \
                 own topics"
            }
            Skip::Pattern => "a pattern type Strait does not map",
        })
    }
}

/// The target binding for one source binding, or why there is none.
pub fn target_binding(source: &AclBinding, flow: &Flow) -> Result<AclBinding, Skip> {
    if source.resource != AclResource::Topic {
        return Err(Skip::NotTopic);
    }
    let allow = source.permission == AclPermission::Allow;
    if allow && source.operation == AclBindingOp::Op(AclOperation::Write) {
        return Err(Skip::Write);
    }
    let operation = if allow && source.operation == AclBindingOp::All {
        AclBindingOp::Op(AclOperation::Read)
    } else {
        source.operation
    };
    let prefix = flow.policy.kind() == NamingPolicy::Prefix;
    let (name, pattern) = match source.pattern {
        AclPattern::Literal if source.name == "*" => {
            if !prefix {
                return Err(Skip::WouldCoverTargetTopics);
            }
            (flow.policy.remote_topic(""), AclPattern::Prefixed)
        }
        AclPattern::Literal => match flow.topic_decision(&source.name) {
            TopicDecision::Replicate { target_topic } => (target_topic, AclPattern::Literal),
            _ => return Err(Skip::NotReplicated),
        },
        AclPattern::Prefixed => {
            if !prefix {
                return Err(Skip::WouldCoverTargetTopics);
            }
            (flow.policy.remote_topic(&source.name), AclPattern::Prefixed)
        }
        AclPattern::Other(_) => return Err(Skip::Pattern),
    };
    Ok(AclBinding {
        resource: AclResource::Topic,
        name,
        pattern,
        principal: source.principal.clone(),
        host: source.host.clone(),
        operation,
        permission: source.permission,
    })
}

/// What one ACL sync does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclPlan {
    /// Target bindings to create (missing on the target), sorted, without repeats.
    pub create: Vec<AclBinding>,
    /// Target bindings already present.
    pub present: usize,
    /// Source bindings not copied, with the reason.
    pub skipped: Vec<(AclBinding, Skip)>,
    /// What becomes of the bindings Strait created ([`super::delete`]).
    pub deletions: Deletions,
}

/// Plans a sync: the target bindings of `source` that `target` does not hold yet, and
/// the deletions among `created` (the bindings Strait recorded as created) under
/// `sync.delete_topic_acls`.
pub fn plan(
    source: &[AclBinding],
    target: &[AclBinding],
    created: &BTreeSet<AclBinding>,
    flow: &Flow,
) -> AclPlan {
    let mut out = AclPlan::default();
    let mut wanted = BTreeSet::new();
    for b in source {
        match target_binding(b, flow) {
            Ok(t) => {
                wanted.insert(t);
            }
            Err(Skip::NotTopic) => {}
            Err(skip) => out.skipped.push((b.clone(), skip)),
        }
    }
    out.deletions = decide(
        &wanted,
        target,
        created,
        source.is_empty(),
        flow.sync.delete_topic_acls,
    );
    for t in wanted {
        if target.contains(&t) {
            out.present += 1;
        } else {
            out.create.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests;
