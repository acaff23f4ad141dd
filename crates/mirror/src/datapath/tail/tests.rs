use super::*;

#[test]
fn a_chunk_is_one_partitions_fetch_at_most_a_sixteenth_of_the_budget() {
    assert_eq!(chunk_bytes(1 << 20, 24 << 20), 1 << 20);
    assert_eq!(chunk_bytes(1 << 20, 8 << 20), 512 << 10);
    assert_eq!(chunk_bytes(0, 0), 1, "never nothing");
}
