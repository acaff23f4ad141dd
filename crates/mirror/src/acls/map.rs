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
mod tests {
    use super::*;
    use crate::config::load_str;

    fn flow(naming: &str) -> Flow {
        let cfg = load_str(
            &format!(
                "[clusters.primary]\nbootstrap_servers = \"a:9092\"\n[clusters.dr]\n\
             bootstrap_servers = \"b:9092\"\n[[flows]]\nsource = \"primary\"\n\
             target = \"dr\"\n[flows.topics]\ninclude = [\"orders.*\", \"payments\"]\n\
             [flows.naming]\npolicy = \"{naming}\"\n"
            ),
            "test.toml",
            &|_| None,
        )
        .expect("config");
        cfg.flows[0].clone()
    }

    fn acl(name: &str, pattern: AclPattern, op: AclBindingOp, perm: AclPermission) -> AclBinding {
        AclBinding {
            resource: AclResource::Topic,
            name: name.into(),
            pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        }
    }

    const READ: AclBindingOp = AclBindingOp::Op(AclOperation::Read);
    const WRITE: AclBindingOp = AclBindingOp::Op(AclOperation::Write);
    const DESCRIBE: AclBindingOp = AclBindingOp::Op(AclOperation::Describe);
    use AclPattern::{Literal, Prefixed};
    use AclPermission::{Allow, Deny};

    #[test]
    fn every_operation_and_permission_under_prefix_naming() {
        let f = flow("prefix");
        let ops = [AclBindingOp::All, READ, WRITE, DESCRIBE]
            .into_iter()
            .chain(AclOperation::ALL.iter().map(|o| AclBindingOp::Op(*o)));
        for op in ops {
            for perm in [Allow, Deny] {
                let got = target_binding(&acl("payments", Literal, op, perm), &f);
                let want_op = match (perm, op) {
                    (Allow, AclBindingOp::All) => READ,
                    _ => op,
                };
                if perm == Allow && op == WRITE {
                    assert_eq!(got, Err(Skip::Write));
                } else {
                    assert_eq!(
                        got,
                        Ok(acl("primary.payments", Literal, want_op, perm)),
                        "{op:?} {perm:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn literal_names_through_the_policy_identity_keeps_them() {
        let f = flow("identity");
        assert_eq!(
            target_binding(&acl("orders.eu", Literal, READ, Allow), &f),
            Ok(acl("orders.eu", Literal, READ, Allow))
        );
        assert_eq!(
            target_binding(&acl("audit", Literal, READ, Allow), &f),
            Err(Skip::NotReplicated)
        );
    }

    #[test]
    fn prefixes_and_wildcards_only_where_they_cover_nothing_but_replicas() {
        let p = flow("prefix");
        assert_eq!(
            target_binding(&acl("orders.", Prefixed, READ, Allow), &p),
            Ok(acl("primary.orders.", Prefixed, READ, Allow))
        );
        assert_eq!(
            target_binding(&acl("*", Literal, AclBindingOp::All, Allow), &p),
            Ok(acl("primary.", Prefixed, READ, Allow))
        );
        let i = flow("identity");
        for b in [
            acl("orders.", Prefixed, READ, Allow),
            acl("*", Literal, READ, Allow),
        ] {
            assert_eq!(target_binding(&b, &i), Err(Skip::WouldCoverTargetTopics));
        }
        assert_eq!(
            target_binding(&acl("x", AclPattern::Other(2), READ, Allow), &p),
            Err(Skip::Pattern)
        );
    }

    #[test]
    fn topics_only() {
        let mut b = acl("billing", Literal, READ, Allow);
        b.resource = AclResource::Group;
        assert_eq!(target_binding(&b, &flow("prefix")), Err(Skip::NotTopic));
    }

    #[test]
    fn a_plan_creates_only_what_the_target_lacks_once() {
        let f = flow("prefix");
        let source = vec![
            acl("payments", Literal, AclBindingOp::All, Allow),
            acl("payments", Literal, READ, Allow),
            acl("payments", Literal, WRITE, Allow),
            acl("orders.", Prefixed, DESCRIBE, Allow),
        ];
        let target = vec![acl("primary.orders.", Prefixed, DESCRIBE, Allow)];
        let p = plan(&source, &target, &BTreeSet::new(), &f);
        // ALL→READ and READ map to the same binding: created once.
        assert_eq!(
            p.create,
            vec![acl("primary.payments", Literal, READ, Allow)]
        );
        assert_eq!(p.present, 1);
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].1, Skip::Write);
        assert_eq!(p.deletions, Deletions::default());
    }

    #[test]
    fn a_plan_deletes_the_created_bindings_whose_source_acl_is_gone_when_enabled() {
        let cfg = |delete: bool| {
            let mut f = flow("prefix");
            f.sync.delete_topic_acls = delete;
            f
        };
        let source = vec![acl("payments", Literal, READ, Allow)];
        let kept = acl("primary.payments", Literal, READ, Allow);
        let stale = acl("primary.orders.eu", Literal, READ, Allow);
        let foreign = acl("primary.orders.us", Literal, READ, Allow);
        let target = vec![kept.clone(), stale.clone(), foreign];
        let created = BTreeSet::from([kept, stale.clone()]);
        let p = plan(&source, &target, &created, &cfg(true));
        assert_eq!(p.deletions.delete, vec![stale.clone()]);
        assert_eq!((p.create.len(), p.present), (0, 1));
        let p = plan(&source, &target, &created, &cfg(false));
        assert!(p.deletions.delete.is_empty());
        assert_eq!(
            p.deletions.kept,
            vec![(stale, crate::acls::delete::Keep::Disabled)]
        );
    }
}
