//! strait-mirror's modules stand on levels (docs/architecture.md, "strait-mirror's modules,
//! by level"): a module imports only modules on the levels below its own, never one beside
//! or above it. This table is that picture; the test fails on an import against it, so the
//! docs and the code cannot drift apart.

use std::path::Path;

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
fn every_module_imports_only_modules_on_the_levels_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = strait_testkit::levels::imports_against(&src, LEVELS);
    assert!(
        wrong.is_empty(),
        "imports against the levels:\n{}",
        wrong.join("\n")
    );
}
