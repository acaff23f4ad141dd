//! strait-client's modules stand on levels: a module imports only modules on the levels
//! below its own, never one beside or above it (the RPCs and the producer, consumer and
//! group member above the client; the client above its brokers and connections; the
//! framing and errors at the ground). The test fails on an import against this table.

use std::path::Path;

/// The top-level modules, from the top level down; modules on one line share a level.
const LEVELS: &[&[&str]] = &[
    &["consumer", "producer", "group"],
    &["rpc"],
    &["client"],
    &["broker"],
    &["security"],
    &["connection", "decode"],
    &["frame", "versions"],
    &["backoff", "metadata", "error"],
];

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = strait_testkit::levels::imports_against(&src, LEVELS);
    assert!(
        wrong.is_empty(),
        "imports against the levels:\n{}",
        wrong.join("\n")
    );
}
