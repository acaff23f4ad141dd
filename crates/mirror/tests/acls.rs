//! Topic ACL sync against two real Tansu brokers. Tansu 0.6 has no authorizer: its
//! DescribeAcls answers an empty list and its CreateAcls answer cannot be decoded
//! (docs/compatibility.md). The mapping itself is unit-tested in `acls::map`; here, the
//! product's behaviour on such a cluster: nothing to copy is not an error, and a target
//! whose CreateAcls cannot be decoded is classified as "does not support ACLs".

mod control;

use control::Pair;
use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};
use strait_mirror::acls::{self, AclSync};

#[tokio::test]
async fn a_sync_with_nothing_to_copy_does_nothing_and_stays_on() {
    let pair = Pair::start().await;
    let flow = pair.flow("");
    assert!(flow.sync.topic_acls, "MM2's default: on");
    let mut sync = AclSync::new(&flow, pair.source.clone(), pair.target.clone());
    let report = sync.sync_once().await.expect("sync");
    assert_eq!((report.created, report.present, report.skipped), (0, 0, 0));
    assert_eq!(sync.off(), None);
}

#[tokio::test]
async fn a_target_whose_create_acls_answer_cannot_be_decoded_does_not_support_acls() {
    let pair = Pair::start().await;
    let binding = AclBinding {
        resource: AclResource::Topic,
        name: "src.orders".into(),
        pattern: AclPattern::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclBindingOp::All,
        permission: AclPermission::Allow,
    };
    let e = pair
        .target
        .create_acls(&[binding])
        .await
        .expect_err("Tansu's CreateAcls answer");
    let why = acls::unsupported(&e).expect("classified as no ACL support");
    assert!(why.contains("cannot be decoded"), "{why}");
}

#[tokio::test]
async fn turned_off_by_config() {
    let pair = Pair::start().await;
    let flow = pair.flow("[flows.sync]\ntopic_acls = false\n");
    let sync = AclSync::new(&flow, pair.source.clone(), pair.target.clone());
    assert_eq!(sync.off(), Some("sync.topic_acls = false"));
}
