use super::*;

#[test]
fn window_bound() {
    assert_eq!(window_log_max(0), 23);
    assert_eq!(window_log_max(64 << 20), 26);
    assert_eq!(window_log_max((64 << 20) + 1), 27);
    assert_eq!(window_log_max(usize::MAX), 31);
}
