//! strait-client's modules stand on levels: a module imports only modules on the levels
//! below its own, never one beside or above it (the RPCs and the producer, consumer and
//! group member above the client; the client above its brokers and connections; the
//! framing and errors at the ground). The test fails on an import against this table, or
//! on two files that import each other.

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
fn every_module_imports_only_modules_on_the_levels_below_it_and_no_files_round() {
    strait_testkit::levels::assert_levels(env!("CARGO_MANIFEST_DIR"), LEVELS);
}
