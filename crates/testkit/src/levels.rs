//! Module levels: a crate's top-level modules stand on levels, and a module imports only
//! modules on the levels below its own, never one beside or above it. [`imports_against`]
//! reads every product file under a crate's `src/` and lists each `crate::x` path that
//! breaks the crate's table (docs/architecture.md draws strait-mirror's). Below the top
//! level, [`file_cycles`] finds files that import each other round. [`assert_levels`] is
//! both checks, for a crate's `tests/levels.rs`. Unit-test files (`tests.rs`,
//! `*_tests.rs`) may reach anywhere and are left out.
//!
//! `paths.rs` reads the module paths a source names; `cycles.rs` finds the cycles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod cycles;
mod paths;

pub use cycles::file_cycles;
pub use paths::{code_only, module_paths};

/// The whole check for the crate at `manifest_dir` (its `CARGO_MANIFEST_DIR`): every
/// import against `levels` ([`imports_against`]) and no cycle between files
/// ([`file_cycles`]). Panics with one line per fault.
pub fn assert_levels(manifest_dir: &str, levels: &[&[&str]]) {
    let src = Path::new(manifest_dir).join("src");
    let mut wrong = imports_against(&src, levels);
    wrong.extend(file_cycles(&src));
    assert!(
        wrong.is_empty(),
        "imports against the levels, or round between files:\n{}",
        wrong.join("\n")
    );
}

/// Every `crate::x` import under `src` against `levels` (top level first; modules on one
/// line share a level), one line per import that is not below its module, or that names
/// a module on no level. Also a line for a top-level module missing from the table.
/// Panics when `src` cannot be read (a test's setup error).
pub fn imports_against(src: &Path, levels: &[&[&str]]) -> Vec<String> {
    let level: BTreeMap<&str, usize> = levels
        .iter()
        .rev()
        .enumerate()
        .flat_map(|(n, modules)| modules.iter().map(move |m| (*m, n)))
        .collect();
    let mut files = Vec::new();
    product_files(src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs");
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(&own) = level.get(top) else {
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
            match level.get(import.as_str()) {
                Some(&l) if l < own => {}
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
    assert!(!files.is_empty(), "no source files under {}", src.display());
    wrong
}

/// The product files under `dir` (unit-test files left out), in path order.
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

/// The module names that follow `crate::` in `source` (each item of a `crate::{…}`
/// group), comments, strings and other crates' paths left out.
pub fn crate_imports(source: &str) -> Vec<String> {
    module_paths(source)
        .into_iter()
        .filter(|path| path[0] == "crate")
        .filter_map(|path| path.into_iter().nth(1))
        .filter(|name| name.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .collect()
}

#[cfg(test)]
mod tests;
