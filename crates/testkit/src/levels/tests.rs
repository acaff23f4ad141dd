use super::crate_imports;

#[test]
fn the_reader_finds_crate_paths_and_skips_comments_and_other_crates() {
    let source = "use crate::config::Flow;\n\
                  // crate::engine in a comment\n\
                  let x = strait_client::Client::new(); crate::error::MirrorError::other(\"\");\n\
                  use crate::{clock, metrics::Metrics};";
    assert_eq!(
        crate_imports(source),
        ["config", "error", "clock", "metrics"]
    );
}
