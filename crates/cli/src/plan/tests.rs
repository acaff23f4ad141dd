use super::*;
use strait_client::rpc::authz::AclOperation;
use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};
use strait_mirror::acls::{Deletions, Keep};

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

fn with_deletions() -> Acls {
    Acls::Plan(AclPlan {
        create: vec![acl("primary.new")],
        present: 1,
        skipped: Vec::new(),
        deletions: Deletions {
            delete: vec![acl("primary.gone")],
            kept: vec![(acl("primary.held"), Keep::EmptySource)],
            forget: vec![acl("primary.vanished")],
        },
    })
}

#[test]
fn the_text_plan_lists_each_acl_deletion_kept_and_forgotten_binding() {
    let text = render_acls(&with_deletions());
    let line = |verb: &str, name: &str| {
        text.lines()
            .any(|l| l.contains(&format!("acl     {verb} ")) && l.contains(name))
    };
    assert!(line("create", "`primary.new`"), "{text}");
    assert!(line("delete", "`primary.gone`"), "{text}");
    assert!(line("keep  ", "`primary.held`"), "{text}");
    assert!(text.contains("deletions are held"), "{text}");
    assert!(line("forget", "`primary.vanished`"), "{text}");
    assert!(
        text.contains("1 to create, 1 present, 0 not copied, 1 to delete, 1 kept, 1 to forget"),
        "{text}"
    );
}

#[test]
fn the_json_plan_lists_the_same_deletions() {
    let v = acls_json(&with_deletions());
    assert_eq!(v["delete"], json!([acl("primary.gone").to_string()]));
    assert_eq!(v["forget"], json!([acl("primary.vanished").to_string()]));
    assert_eq!(v["kept"][0]["acl"], json!(acl("primary.held").to_string()));
    assert_eq!(v["kept"][0]["reason"], json!(Keep::EmptySource.to_string()));
}
