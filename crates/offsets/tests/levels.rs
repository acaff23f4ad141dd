//! strait-offsets's modules stand on levels: a module imports only modules on the levels
//! below its own, never one beside or above it (the registry above the checkpoints, those
//! above the encodings and lookups, all above the map, its runs and updates, with the frame
//! and sides at the ground). The test fails on an import against this table, or on two
//! files that import each other.

/// The top-level modules, from the top level down; modules on one line share a level.
const LEVELS: &[&[&str]] = &[
    &["registry"],
    &["checkpoint"],
    &["encoding", "translate", "truncate"],
    &["map"],
    &["coarsen"],
    &["error", "run", "update"],
    &["frame", "side"],
];

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it_and_no_files_round() {
    strait_testkit::levels::assert_levels(env!("CARGO_MANIFEST_DIR"), LEVELS);
}
