use super::*;
use strait_client::rpc::authz::AclOperation;
use strait_client::{AclBindingOp, AclPattern, AclPermission, AclResource};

fn acl(name: &str) -> AclBinding {
    AclBinding {
        resource: AclResource::Topic,
        name: name.into(),
        pattern: AclPattern::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclBindingOp::Op(AclOperation::Read),
        permission: AclPermission::Allow,
    }
}

#[test]
fn recorded_at_once_written_after() {
    let mut l = Ledger::new(BTreeSet::from([acl("a")]));
    assert_eq!(l.unsaved(), (vec![], vec![]));
    l.record(&[acl("b")], &[acl("a")]);
    assert_eq!(l.created(), &BTreeSet::from([acl("b")]));
    assert_eq!(l.unsaved(), (vec![acl("b")], vec![acl("a")]));
    l.saved();
    assert_eq!(l.unsaved(), (vec![], vec![]));
    assert_eq!(l.created(), &BTreeSet::from([acl("b")]));
}

#[test]
fn a_failed_write_loses_nothing() {
    let mut l = Ledger::default();
    l.record(&[acl("a")], &[]);
    // The write failed: saved() not called; the next round adds more.
    l.record(&[acl("b")], &[]);
    assert_eq!(l.unsaved(), (vec![acl("a"), acl("b")], vec![]));
}

#[test]
fn the_last_change_of_a_binding_wins() {
    let mut l = Ledger::new(BTreeSet::from([acl("a")]));
    // Forgotten (gone from the target) and created again in one round.
    l.record(&[], &[acl("a")]);
    l.record(&[acl("a")], &[]);
    assert_eq!(l.unsaved(), (vec![acl("a")], vec![]));
    assert!(l.created().contains(&acl("a")));
    // Created, then deleted before the write.
    l.record(&[], &[acl("a")]);
    assert_eq!(l.unsaved(), (vec![], vec![acl("a")]));
    assert!(l.created().is_empty());
}
