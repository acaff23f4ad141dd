use super::*;
use strait_client::rpc::authz::AclOperation;

fn binding() -> AclBinding {
    AclBinding {
        resource: AclResource::Topic,
        name: "primary.orders".into(),
        pattern: AclPattern::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclBindingOp::Op(AclOperation::Read),
        permission: AclPermission::Allow,
    }
}

#[test]
fn a_binding_round_trips_with_unknown_codes_kept() {
    let mut odd = binding();
    odd.pattern = AclPattern::Other(9);
    odd.operation = AclBindingOp::Other(-3);
    for b in [binding(), odd] {
        let k = encode_acl_key(&b).expect("encodable");
        assert_eq!(k[0], ACL_KEY_KIND);
        assert_eq!(decode_acl_key(&k), Ok(b));
        assert_eq!(decode_acl_value(&k, &encode_acl_value(&k)), Ok(()));
    }
}

#[test]
fn every_single_bit_flip_of_key_or_value_and_every_truncation_is_rejected() {
    let k = encode_acl_key(&binding()).expect("encodable");
    let v = encode_acl_value(&k);
    for i in 0..v.len() {
        for bit in 0..8 {
            let mut c = v.clone();
            c[i] ^= 1 << bit;
            assert!(
                decode_acl_value(&k, &c).is_err(),
                "value byte {i} bit {bit}"
            );
        }
    }
    // A flipped key either does not decode or no longer matches its checksum.
    for i in 0..k.len() {
        for bit in 0..8 {
            let mut c = k.clone();
            c[i] ^= 1 << bit;
            let ok = decode_acl_key(&c).is_ok() && decode_acl_value(&c, &v).is_ok();
            assert!(!ok, "key byte {i} bit {bit}");
        }
    }
    for n in 0..k.len() {
        assert!(decode_acl_key(&k[..n]).is_err(), "key truncated to {n}");
    }
    for n in 0..v.len() {
        assert!(
            decode_acl_value(&k, &v[..n]).is_err(),
            "value truncated to {n}"
        );
    }
    let mut longer = v.clone();
    longer.push(0);
    assert!(decode_acl_value(&k, &longer).is_err());
}

#[test]
fn unknown_versions_are_refused() {
    let k = encode_acl_key(&binding()).expect("encodable");
    let mut v = encode_acl_value(&k);
    v[0] = 2;
    assert_eq!(decode_acl_value(&k, &v), Err(StateDecodeError::Version(2)));
}

#[test]
fn a_field_too_long_to_record_is_never_claimed() {
    let mut b = binding();
    b.principal = "U".repeat(70_000);
    assert_eq!(encode_acl_key(&b), None);
    assert!(records(&[b], &[]).is_empty());
}

#[test]
fn records_then_tombstones_fold_into_the_set_and_other_kinds_are_ignored() {
    let a = binding();
    let b = AclBinding {
        name: "primary.payments".into(),
        ..binding()
    };
    let mut set = BTreeSet::new();
    let feed = |recs: Vec<(Vec<u8>, Option<Vec<u8>>)>, set: &mut BTreeSet<AclBinding>| {
        for (k, v) in recs {
            apply(set, &k, v.as_deref()).expect("apply");
        }
    };
    feed(records(&[a.clone(), b.clone()], &[]), &mut set);
    // A flow partition key (kind 1) and a delta key (kind 3) are not ACL records.
    apply(
        &mut set,
        &super::super::codec::encode_key("orders", 0),
        Some(b"x"),
    )
    .expect("kind 1");
    apply(&mut set, &[3, 0, 0], None).expect("kind 3");
    assert_eq!(set, BTreeSet::from([a.clone(), b.clone()]));
    // Removed and added in one write: recorded.
    feed(records(std::slice::from_ref(&a), &[a.clone(), b]), &mut set);
    assert_eq!(set, BTreeSet::from([a]));
}
