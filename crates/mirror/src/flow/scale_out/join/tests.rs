use super::*;

#[test]
fn a_refusal_for_another_protocol_version_says_to_stop_the_other_members() {
    let refused = GroupError::Refused(strait_client::Error::from(
        ResponseError::InconsistentGroupProtocol,
    ));
    let ours = Topology::protocol_name(Some(&Topology {
        slots: 4,
        transactional_id: "p".into(),
    }));
    let why = why_failed(&refused, &ours);
    assert!(
        why.contains("Strait version") && why.contains(PROTOCOL_NAME),
        "{why}"
    );
    assert!(why.contains("4 slots"), "{why}");
    let other = GroupError::Refused(strait_client::Error::from(
        ResponseError::GroupAuthorizationFailed,
    ));
    assert!(!why_failed(&other, &ours).contains("Strait version"));
}
