#[test]
fn a_cluster_field_of_zero_means_describe_is_not_granted_so_nothing_is_known() {
    use super::{AclOperation, AuthorizedOps};
    // Kafka sends 0 to a principal without Describe on the cluster, even when it holds
    // Create and IdempotentWrite.
    assert_eq!(AuthorizedOps::from_describe_cluster(0), None);
    assert_eq!(
        AuthorizedOps::from_describe_cluster(AuthorizedOps::NOT_REPORTED),
        None
    );
    let ops = AuthorizedOps::of(&[AclOperation::Describe, AclOperation::Create]);
    assert_eq!(AuthorizedOps::from_describe_cluster(ops.bits()), Some(ops));
    // Topics and groups keep 0 as "nothing allowed".
    assert_eq!(AuthorizedOps::from_field(0), Some(AuthorizedOps::NONE));
}

use super::*;

#[test]
fn int32_min_is_not_reported() {
    assert_eq!(AuthorizedOps::from_field(i32::MIN), None);
    assert_eq!(AuthorizedOps::from_field(0), Some(AuthorizedOps::NONE));
}

#[test]
fn unknown_or_any_bits_are_not_an_answer() {
    // Tansu 0.6's DescribeGroups: -1.
    assert_eq!(AuthorizedOps::from_field(-1), None);
    assert_eq!(AuthorizedOps::from_field(1), None);
    assert_eq!(AuthorizedOps::from_field(1 << 1 | 1 << 3), None);
    // Operations Kafka added later (CREATE_TOKENS = 13) are kept.
    assert!(AuthorizedOps::from_field(1 << 13 | 1 << 3).is_some());
}

#[test]
fn bit_i_allows_operation_i() {
    // Kafka's answer for a topic with Read + Describe: bits 3 and 8.
    let ops = AuthorizedOps::from_field((1 << 3) | (1 << 8)).unwrap();
    assert!(ops.allows(AclOperation::Read));
    assert!(ops.allows(AclOperation::Describe));
    assert!(!ops.allows(AclOperation::Write));
    assert_eq!(
        ops.operations(),
        vec![AclOperation::Read, AclOperation::Describe]
    );
    assert_eq!(
        AuthorizedOps::of(&[AclOperation::Read, AclOperation::Describe]),
        ops
    );
    for op in AclOperation::ALL {
        assert!(AuthorizedOps::of(&[op]).allows(op), "{op}");
        assert_eq!(AuthorizedOps::of(&[op]).bits(), 1 << op.code());
    }
}

#[test]
fn the_all_bit_allows_everything() {
    let ops = AuthorizedOps::from_field(1 << 2).unwrap();
    assert!(AclOperation::ALL.iter().all(|op| ops.allows(*op)));
}
