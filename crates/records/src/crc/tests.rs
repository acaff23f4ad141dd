use super::*;
use proptest::prelude::*;

#[test]
fn zeros_operator_matches_appending_zeros() {
    for n in [0usize, 1, 7, 255, 256, 257, 16_323, 65_536, 1_000_003] {
        let v = 0x1234_5678u32;
        let mut state = !v; // crc32c_append inverts; feed it the raw state `v`
        state = !crc32c::crc32c_append(state, &vec![0u8; n]);
        assert_eq!(mul_mod(v, zeros_operator(n as u32)), state, "n = {n}");
    }
}

proptest! {
    #[test]
    fn update_head_equals_full_recompute(
        old in any::<[u8; HEAD_LEN]>(),
        new in any::<[u8; HEAD_LEN]>(),
        tail in proptest::collection::vec(any::<u8>(), 0..3000),
    ) {
        let old_crc = crc32c::crc32c_append(crc32c::crc32c(&old), &tail);
        let new_crc = crc32c::crc32c_append(crc32c::crc32c(&new), &tail);
        prop_assert_eq!(update_head(old_crc, &old, &new, tail.len()), Some(new_crc));
    }
}
