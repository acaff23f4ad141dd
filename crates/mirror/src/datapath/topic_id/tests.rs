use super::*;

const OLD: Uuid = Uuid::from_bytes([1; 16]);
const NEW: Uuid = Uuid::from_bytes([2; 16]);

#[test]
fn without_ids_nothing_is_decided_by_id() {
    assert_eq!(compare(Uuid::nil(), Some(NEW)), Seen::Same);
    assert_eq!(compare(Uuid::nil(), None), Seen::Same);
    assert_eq!(compare(OLD, Some(Uuid::nil())), Seen::Same);
}

#[test]
fn a_topic_missing_from_the_metadata_is_gone_not_recreated() {
    assert_eq!(compare(OLD, None), Seen::Gone);
}

#[test]
fn the_same_id_is_the_same_topic() {
    assert_eq!(compare(OLD, Some(OLD)), Seen::Same);
}

#[test]
fn another_id_is_a_recreated_topic() {
    assert_eq!(
        compare(OLD, Some(NEW)),
        Seen::Recreated { old: OLD, new: NEW }
    );
}
