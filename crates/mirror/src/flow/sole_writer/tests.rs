use super::*;

#[test]
fn a_refusal_says_what_to_do() {
    let refused = |e| GroupError::Refused(strait_client::Error::from(e));
    let mixed = why_refused(&refused(ResponseError::InconsistentGroupProtocol));
    assert!(mixed.contains("[flows.scale_out]"), "{mixed}");
    let denied = why_refused(&refused(ResponseError::GroupAuthorizationFailed));
    assert!(denied.contains("Read on this group"), "{denied}");
}
