use super::*;
use strait_client::rpc::authz::AclOperation;

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

fn set(names: &[&str]) -> BTreeSet<AclBinding> {
    names.iter().map(|n| acl(n)).collect()
}

fn list(names: &[&str]) -> Vec<AclBinding> {
    names.iter().map(|n| acl(n)).collect()
}

#[test]
fn only_what_strait_created() {
    // `b` and `c` are on the target and no longer desired, but Strait created only `b`.
    let d = decide(&set(&[]), &list(&["b", "c"]), &set(&["b"]), false, true);
    assert_eq!(d.delete, list(&["b"]));
    assert!(d.kept.is_empty() && d.forget.is_empty());
}

#[test]
fn only_what_the_source_no_longer_has() {
    let d = decide(
        &set(&["a"]),
        &list(&["a", "b"]),
        &set(&["a", "b"]),
        false,
        true,
    );
    assert_eq!(d.delete, list(&["b"]));
}

#[test]
fn only_what_is_there_the_rest_is_forgotten() {
    // `a` (still desired) and `b` (not) are recorded but gone from the target.
    let d = decide(&set(&["a"]), &list(&[]), &set(&["a", "b"]), false, true);
    assert!(d.delete.is_empty());
    assert_eq!(d.forget, list(&["a", "b"]));
}

#[test]
fn only_exact_filters() {
    let mut any_op = acl("b");
    any_op.operation = AclBindingOp::Other(1);
    let mut match_pattern = acl("c");
    match_pattern.pattern = AclPattern::Other(2);
    let mut group = acl("d");
    group.resource = AclResource::Group;
    let mut any_perm = acl("e");
    any_perm.permission = AclPermission::Other(1);
    let odd = [any_op, match_pattern, group, any_perm];
    let created: BTreeSet<_> = odd.iter().cloned().collect();
    let d = decide(&set(&["x"]), &odd, &created, false, true);
    assert!(d.delete.is_empty());
    assert_eq!(d.kept.len(), 4);
    assert!(d.kept.iter().all(|(_, k)| *k == Keep::NotExact));
    let mut prefixed_deny_all = acl("p.");
    prefixed_deny_all.pattern = AclPattern::Prefixed;
    prefixed_deny_all.operation = AclBindingOp::All;
    prefixed_deny_all.permission = AclPermission::Deny;
    assert!(exact(&prefixed_deny_all));
}

#[test]
fn off_by_default_stale_bindings_are_kept_and_reported() {
    let d = decide(&set(&["x"]), &list(&["b"]), &set(&["b"]), false, false);
    assert!(d.delete.is_empty());
    assert_eq!(d.kept, vec![(acl("b"), Keep::Disabled)]);
}

#[test]
fn an_empty_source_deletes_nothing() {
    let d = decide(&set(&[]), &list(&["b"]), &set(&["b"]), true, true);
    assert!(d.delete.is_empty());
    assert_eq!(d.kept, vec![(acl("b"), Keep::EmptySource)]);
    // Forgetting is not deleting: it still happens.
    let d = decide(&set(&[]), &list(&[]), &set(&["b"]), true, true);
    assert_eq!(d.forget, list(&["b"]));
}

#[test]
fn nothing_created_nothing_to_do() {
    let d = decide(&set(&["a"]), &list(&["b"]), &set(&[]), false, true);
    assert_eq!(d, Deletions::default());
}
