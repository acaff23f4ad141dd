//! The crate's modules stand on levels (docs/architecture.md, "strait-mirror's modules, by
//! level"): a module imports only modules on the levels below its own, never one beside or
//! above it. This test reads every product file under `src/` and checks each `crate::x`
//! path against that table, so that the picture in the docs and the code cannot drift apart.
//! Unit-test files (`tests.rs`, `*_tests.rs`) may reach anywhere and are left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Level of each module: higher stands above lower.
fn levels() -> BTreeMap<&'static str, usize> {
    LEVELS
        .iter()
        .rev()
        .enumerate()
        .flat_map(|(level, modules)| modules.iter().map(move |m| (*m, level)))
        .collect()
}

fn product_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            product_files(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// The module names that follow `crate::` in `source`, comments left out.
fn crate_imports(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `strait_client::…` and the like
            }
            let names = match rest.strip_prefix('{') {
                // `crate::{a, b::c}`: the first name of each item of the group (on this line).
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|item| leading_name(item.trim()))
                    .collect(),
                None => vec![leading_name(rest)],
            };
            found.extend(
                names
                    .into_iter()
                    .filter(|n| n.chars().next().is_some_and(|c| c.is_ascii_lowercase())),
            );
        }
    }
    found
}

fn leading_name(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

#[test]
fn every_module_imports_only_modules_on_the_levels_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let levels = levels();
    let mut files = Vec::new();
    product_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs");
        if top == "lib" {
            continue;
        }
        let Some(&own) = levels.get(top) else {
            wrong.push(format!(
                "{}: module `{top}` is on no level",
                relative.display()
            ));
            continue;
        };
        let source = std::fs::read_to_string(file).expect("read a source file");
        for import in crate_imports(&source) {
            if import == top {
                continue;
            }
            match levels.get(import.as_str()) {
                Some(&level) if level < own => {}
                Some(_) => wrong.push(format!(
                    "{}: `{top}` imports `{import}`, which is not below it",
                    relative.display()
                )),
                None => wrong.push(format!(
                    "{}: imports `crate::{import}`, on no level (a root re-export? import \
                     the module)",
                    relative.display()
                )),
            }
        }
    }
    assert!(files.len() > 100, "found only {} files", files.len());
    assert!(
        wrong.is_empty(),
        "imports against the levels:\n{}",
        wrong.join("\n")
    );
}

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
