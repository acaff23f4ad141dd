//! strait-mirror's modules stand on levels (docs/architecture.md, "strait-mirror's modules,
//! by level"): a module imports only modules on the levels below its own, never one beside
//! or above it. This table is that picture; the test fails on an import against it, so the
//! docs and the code cannot drift apart. It fails on two files that import each other too.

/// The top-level modules, from the top level down; modules on one line share a level.
const LEVELS: &[&[&str]] = &[
    &["engine"],
    &["flow"],
    &["control", "fuzzing"],
    &["takeover"],
    &["runbook", "heartbeat", "acls", "replay", "verify"],
    &["groups"],
    &["state"],
    &["topics"],
    &["datapath"],
    &["metrics"],
    &["connect", "restarts", "incident", "progress"],
    &["scale", "config", "error", "clock", "pruned"],
];

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it_and_no_files_round() {
    strait_testkit::levels::assert_levels(env!("CARGO_MANIFEST_DIR"), LEVELS);
}
