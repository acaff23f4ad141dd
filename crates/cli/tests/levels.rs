//! The `strait` binary's modules stand on levels: a command's module imports only the
//! shared modules below the commands, never another command (`plan`'s flow selection is
//! shared, so it stands low). The test fails on an import against this table, or on two
//! files that import each other.

/// The top-level modules, from the top level down; modules on one line share a level.
const LEVELS: &[&[&str]] = &[
    &[
        "bench",
        "check",
        "config_cmd",
        "offsets",
        "replay",
        "run_cmd",
        "runbook",
        "status",
        "verify",
    ],
    &["logging", "status_group"],
    &["cli", "exit", "plan", "progress", "runtime"],
];

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it_and_no_files_round() {
    strait_testkit::levels::assert_levels(env!("CARGO_MANIFEST_DIR"), LEVELS);
}
