use super::*;

#[test]
fn picks_highest_common_version() {
    let v = BrokerVersions::from_ranges([
        (ApiKey::Produce, 0, 11),
        (ApiKey::Fetch, 0, 17),
        (ApiKey::InitProducerId, 0, 1),
        (ApiKey::Metadata, 0, 4),
    ]);
    assert_eq!(v.pick(ApiKey::Produce).unwrap(), 11);
    assert_eq!(v.pick(ApiKey::Fetch).unwrap(), 13); // capped by us
    assert_eq!(v.pick(ApiKey::Metadata).unwrap(), 4);
    let e = v.pick(ApiKey::InitProducerId).unwrap_err();
    assert!(e.is_unsupported());
    let msg = e.to_string();
    assert!(
        msg.contains("InitProducerId") && msg.contains("v0..v1"),
        "{msg}"
    );
    let e = v.pick(ApiKey::CreatePartitions).unwrap_err();
    assert!(
        e.to_string().contains("does not support CreatePartitions"),
        "{e}"
    );
}

#[test]
fn our_ranges_are_within_the_crate() {
    for k in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::DescribeCluster,
        ApiKey::EndTxn,
    ] {
        let (lo, hi) = supported_range(k).unwrap();
        let c = k.valid_versions();
        assert!(c.min <= lo && hi <= c.max);
    }
}
