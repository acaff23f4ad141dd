use super::*;

const OLD: Uuid = Uuid::from_bytes([1; 16]);
const NEW: Uuid = Uuid::from_bytes([2; 16]);

#[test]
fn a_new_topic_id_is_saved_only_with_a_map_restarted_for_it() {
    assert_eq!(saved_topic_id(OLD, None, 7), OLD);
    // Told at count 3: until the pipeline applied the restart, the old map's id.
    assert_eq!(saved_topic_id(OLD, Some((NEW, 3)), 3), OLD);
    assert_eq!(saved_topic_id(OLD, Some((NEW, 3)), 4), NEW);
}
