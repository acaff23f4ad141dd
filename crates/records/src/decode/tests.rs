use super::*;
use crate::test_support::{control_batch, one, txn_batch};

#[test]
fn control_keys() {
    assert_eq!(
        control_record_type(Some(&[0, 0, 0, 0])).unwrap(),
        ControlRecordType::Abort
    );
    assert_eq!(
        control_record_type(Some(&[0, 0, 0, 1])).unwrap(),
        ControlRecordType::Commit
    );
    assert_eq!(
        control_record_type(Some(&[0, 1, 0, 5, 9])).unwrap(),
        ControlRecordType::Other(5)
    );
    assert!(control_record_type(None).is_err());
    assert!(control_record_type(Some(&[0, 0, 0])).is_err());
    assert!(control_record_type(Some(&[0xff, 0xff, 0, 0])).is_err());
}

#[test]
fn control_type_is_read_from_the_first_record() {
    let limits = Limits::default();
    assert_eq!(
        one(control_batch(0, 1, 0)).control_type(&limits).unwrap(),
        Some(ControlRecordType::Abort)
    );
    assert_eq!(
        one(control_batch(0, 1, 1)).control_type(&limits).unwrap(),
        Some(ControlRecordType::Commit)
    );
    assert_eq!(one(txn_batch(0, 1, 1)).control_type(&limits).unwrap(), None);
}
