//! Topic ACL sync against two real Tansu brokers. Tansu 0.6 has no authorizer: its
//! DescribeAcls answers an empty list and its CreateAcls answer cannot be decoded
//! (docs/compatibility.md). The mapping itself is unit-tested in `acls::map`; here, the
//! product's behaviour on such a cluster: nothing to copy is not an error, a target
//! whose CreateAcls cannot be decoded is classified as "does not support ACLs", and with
//! `sync.delete_topic_acls` a binding recorded as created that the target does not hold
//! is forgotten — never deleted — while the flow's own state reads past the record.

mod control;

use control::Pair;
use strait_client::{AclBinding, AclBindingOp, AclPattern, AclPermission, AclResource};
use strait_mirror::acls::{self, AclSync};
use strait_mirror::state::{self, StateWriter, ensure_state_topic, read_created_acls};

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

fn binding(name: &str) -> AclBinding {
    AclBinding {
        resource: AclResource::Topic,
        name: name.into(),
        pattern: AclPattern::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclBindingOp::Op(strait_client::rpc::authz::AclOperation::Read),
        permission: AclPermission::Allow,
    }
}

#[tokio::test]
async fn a_recorded_acl_the_target_does_not_hold_is_forgotten_not_deleted() {
    let pair = Pair::start().await;
    let flow = pair.flow("[flows.sync]\ndelete_topic_acls = true\n");
    assert!(flow.sync.delete_topic_acls);
    ensure_state_topic(&pair.target, &flow)
        .await
        .expect("state topic");
    let gone = binding("source.orders");
    let mut writer = StateWriter::new(pair.target.clone(), &flow);
    let partition = state::PartitionState {
        topic_id: uuid::Uuid::nil(),
        target_topic: "source.orders".into(),
        snapshot: strait_offsets::OffsetMap::new().snapshot().bytes,
    };
    writer
        .write(&[(("orders".into(), 0), partition.clone())])
        .await
        .expect("partition record");
    writer
        .write_raw(state::acls::records(std::slice::from_ref(&gone), &[]))
        .await
        .expect("created-ACL record");
    assert_eq!(
        read_created_acls(&pair.target, &flow).await.expect("read"),
        [gone].into()
    );
    // The flow's and the replays' readers skip the kind-4 record.
    let saved = state::read_state(&pair.target, &flow)
        .await
        .expect("flow state");
    assert_eq!(saved.get(&("orders".into(), 0)), Some(&partition));
    assert!(
        state::read_replays(&pair.target, &flow)
            .await
            .expect("replays")
            .is_empty()
    );

    let mut sync = AclSync::new(&flow, pair.source.clone(), pair.target.clone());
    let report = sync.sync_once().await.expect("sync");
    assert_eq!((report.deleted, report.forgotten, report.kept), (0, 1, 0));
    assert_eq!(sync.off(), None);
    assert!(
        read_created_acls(&pair.target, &flow)
            .await
            .expect("read")
            .is_empty()
    );
    let again = sync.sync_once().await.expect("second sync");
    assert_eq!(again.forgotten, 0);
    assert_eq!(
        state::read_state(&pair.target, &flow)
            .await
            .expect("flow state")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_target_without_delete_acls_does_not_support_acls() {
    // Tansu 0.6 does not list DeleteAcls in ApiVersions: the request is never sent.
    let pair = Pair::start().await;
    let e = pair
        .target
        .delete_acls(&[binding("source.orders")])
        .await
        .expect_err("Tansu has no DeleteAcls");
    let why = acls::unsupported(&e).expect("classified as no ACL support");
    assert!(why.contains("lacks the ACL APIs"), "{why}");
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
