use super::*;
use bytes::BytesMut;
use kafka_protocol::protocol::{Decodable, Encodable};

fn binding() -> AclBinding {
    AclBinding {
        resource: AclResource::Topic,
        name: "orders".into(),
        pattern: AclPattern::Prefixed,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclBindingOp::Op(AclOperation::Read),
        permission: AclPermission::Allow,
    }
}

fn encode<R: Encodable>(r: &R, version: i16) -> Vec<u8> {
    let mut b = BytesMut::new();
    r.encode(&mut b, version).expect("encode");
    b.to_vec()
}

fn str16(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i16).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

#[test]
fn create_acls_v1_is_the_bytes_the_protocol_defines() {
    // CreateAcls v1: creations => resource_type INT8, resource_name STRING,
    // resource_pattern_type INT8, principal STRING, host STRING, operation INT8,
    // permission_type INT8 (an INT32 array length first).
    let mut want = 1i32.to_be_bytes().to_vec();
    want.push(2);
    want.extend(str16("orders"));
    want.push(4);
    want.extend(str16("User:alice"));
    want.extend(str16("*"));
    want.push(3);
    want.push(3);
    assert_eq!(encode(&create_request(&[binding()]), 1), want);
}

#[test]
fn describe_acls_v1_asks_for_any_binding_on_topics() {
    // resource_type_filter INT8, resource_name_filter NULLABLE_STRING,
    // pattern_type_filter INT8, principal_filter, host_filter, operation, permission.
    let mut want = vec![2u8];
    want.extend((-1i16).to_be_bytes());
    want.push(1);
    want.extend((-1i16).to_be_bytes());
    want.extend((-1i16).to_be_bytes());
    want.push(1);
    want.push(1);
    assert_eq!(encode(&describe_request(AclResource::Topic), 1), want);
}

#[test]
fn delete_acls_v1_is_one_exact_filter_per_binding_in_the_protocol_bytes() {
    // DeleteAcls v1: filters => resource_type_filter INT8, resource_name_filter
    // NULLABLE_STRING, pattern_type_filter INT8, principal_filter NULLABLE_STRING,
    // host_filter NULLABLE_STRING, operation INT8, permission_type INT8. Every field is
    // set: no ANY (1), no null name, principal or host, so it matches that binding only.
    let mut want = 1i32.to_be_bytes().to_vec();
    want.push(2);
    want.extend(str16("orders"));
    want.push(4);
    want.extend(str16("User:alice"));
    want.extend(str16("*"));
    want.push(3);
    want.push(3);
    assert_eq!(encode(&delete_request(&[binding()]), 1), want);
}

#[test]
fn delete_acls_v2_is_the_flexible_form_of_the_same_filter() {
    // v2+: compact array (n + 1), compact strings (len + 1), a tag buffer per filter
    // and one for the request.
    fn compact(s: &str) -> Vec<u8> {
        let mut v = vec![s.len() as u8 + 1];
        v.extend_from_slice(s.as_bytes());
        v
    }
    let mut want = vec![2u8, 2];
    want.extend(compact("orders"));
    want.push(4);
    want.extend(compact("User:alice"));
    want.extend(compact("*"));
    want.extend([3, 3, 0, 0]);
    assert_eq!(encode(&delete_request(&[binding()]), 2), want);
}

/// A DeleteAcls v1 response body: per filter result, its error and matching ACLs.
fn delete_response_v1(results: &[(i16, Vec<AclBinding>)]) -> DeleteAclsResponse {
    let mut b = 0i32.to_be_bytes().to_vec(); // throttle_time_ms
    b.extend((results.len() as i32).to_be_bytes());
    for (code, acls) in results {
        b.extend(code.to_be_bytes());
        b.extend((-1i16).to_be_bytes()); // error_message: null
        b.extend((acls.len() as i32).to_be_bytes());
        for a in acls {
            b.extend(0i16.to_be_bytes());
            b.extend((-1i16).to_be_bytes());
            b.push(a.resource.code() as u8);
            b.extend(str16(&a.name));
            b.push(a.pattern.code() as u8);
            b.extend(str16(&a.principal));
            b.extend(str16(&a.host));
            b.push(a.operation.code() as u8);
            b.push(a.permission.code() as u8);
        }
    }
    let mut bytes = bytes::Bytes::from(b);
    let r = DeleteAclsResponse::decode(&mut bytes, 1).expect("decode");
    assert!(bytes.is_empty(), "the whole body is read");
    r
}

#[test]
fn a_delete_acls_response_counts_what_each_filter_deleted() {
    let other = AclBinding {
        name: "payments".into(),
        ..binding()
    };
    let resp = delete_response_v1(&[(0, vec![binding()]), (0, vec![])]);
    let got = deleted(resp, &[binding(), other]).expect("results");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().ok(), Some(&1));
    assert_eq!(got[1].as_ref().ok(), Some(&0));
}

#[test]
fn a_delete_acls_error_is_typed_per_binding() {
    let resp = delete_response_v1(&[(31, vec![])]);
    let got = deleted(resp, &[binding()]).expect("results");
    let e = got[0].as_ref().expect_err("CLUSTER_AUTHORIZATION_FAILED");
    assert_eq!(e.kafka_code(), Some(31));
    assert_eq!(e.api_key(), Some(ApiKey::DeleteAcls));
}

#[test]
fn a_delete_acls_answer_with_another_count_or_another_acl_is_refused() {
    let resp = delete_response_v1(&[(0, vec![]), (0, vec![])]);
    let e = deleted(resp, &[binding()]).expect_err("2 results for 1 filter");
    assert!(
        matches!(e.kind(), crate::error::ErrorKind::Protocol(_)),
        "{e}"
    );
    let stranger = AclBinding {
        principal: "User:mallory".into(),
        ..binding()
    };
    let resp = delete_response_v1(&[(0, vec![stranger])]);
    let got = deleted(resp, &[binding()]).expect("results");
    let e = got[0].as_ref().expect_err("a different ACL was deleted");
    assert!(e.to_string().contains("User:mallory"), "{e}");
}

#[test]
fn a_delete_acls_response_declaring_more_results_than_it_holds_is_a_decode_error() {
    // The count is read off the wire: 1,000,000 filter results in a 10-byte body is
    // refused by the (bounded) decoder, not allocated.
    let mut b = 0i32.to_be_bytes().to_vec();
    b.extend(1_000_000i32.to_be_bytes());
    b.extend([0, 0]);
    let r = DeleteAclsResponse::decode(&mut bytes::Bytes::from(b), 1);
    assert!(r.is_err());
}

#[test]
fn unknown_codes_are_kept_not_guessed() {
    for c in -3..20i8 {
        assert_eq!(AclBindingOp::from_code(c).code(), c);
        assert_eq!(AclResource::from_code(c).code(), c);
        assert_eq!(AclPattern::from_code(c).code(), c);
        assert_eq!(AclPermission::from_code(c).code(), c);
    }
    assert_eq!(AclBindingOp::from_code(2), AclBindingOp::All);
    assert_eq!(
        AclBindingOp::from_code(4),
        AclBindingOp::Op(AclOperation::Write)
    );
}

#[test]
fn a_describe_error_is_typed() {
    let resp = DescribeAclsResponse::default()
        .with_error_code(31)
        .with_error_message(Some(s("no authorizer")));
    let e = described(resp).unwrap_err();
    assert_eq!(e.kafka_code(), Some(31));
}
