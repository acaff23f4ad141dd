use std::ffi::OsStr;

use super::colour;

#[test]
fn colour_only_on_a_terminal_without_no_color() {
    assert!(colour(true, None));
    assert!(colour(true, Some(OsStr::new(""))));
    assert!(!colour(true, Some(OsStr::new("1"))));
    assert!(!colour(false, None));
}
