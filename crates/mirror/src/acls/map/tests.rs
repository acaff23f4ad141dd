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
