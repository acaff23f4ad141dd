//! strait-records's modules stand on levels: a module imports only modules on the levels below
//! its own, never one beside or above it (the slow paths and transactions above the batch operations, those above the codecs and the header, the error type and the small mechanisms at the ground). The test fails on an import against
//! this table.

use std::path::Path;

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
fn every_module_imports_only_modules_on_the_levels_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = strait_testkit::levels::imports_against(&src, LEVELS);
    assert!(
        wrong.is_empty(),
        "imports against the levels:\n{}",
        wrong.join("\n")
    );
}
