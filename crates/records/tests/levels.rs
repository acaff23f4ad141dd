//! strait-records's modules stand on levels: a module imports only modules on the levels
//! below its own, never one beside or above it (the slow paths and transactions above the
//! batch operations, those above the codecs and the header, the error type and the small
//! mechanisms at the ground). The test fails on an import against this table, or on two
//! files that import each other.

/// The top-level modules, from the top level down; modules on one line share a level.
const LEVELS: &[&[&str]] = &[
    &["reencode", "txn"],
    &["aborted", "builder"],
    &["classify", "decode", "merge", "patch", "test_support"],
    &["compression", "crc", "split"],
    &["header", "record"],
    &["error"],
    &["codec", "lean", "pool", "varint"],
];

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it_and_no_files_round() {
    strait_testkit::levels::assert_levels(env!("CARGO_MANIFEST_DIR"), LEVELS);
}
