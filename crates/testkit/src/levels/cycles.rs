//! Cycles between files. Inside every module, its children (files, or folders with their
//! files) must not import each other round in a circle: `a.rs` naming `b.rs` and `b.rs`
//! naming `a.rs` means neither can be read, changed or tested without the other. A file may
//! name its own ancestors and descendants (a child using its parent's types, a parent
//! driving its children); those are not cycles. The top level of a crate is held more
//! strictly by its levels table ([`super::imports_against`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::paths::module_paths;
use super::product_files;

/// A module's path inside its crate (`["flow", "start"]`; the crate root is `[]`).
type ModPath = Vec<String>;

/// One line per cycle among the children of a module under `src`, naming the module, the
/// children in the cycle, and for each step of it one import that makes it (file → file).
/// Panics when `src` cannot be read (a test's setup error).
pub fn file_cycles(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    product_files(src, &mut files);
    let modules: BTreeMap<ModPath, String> = files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(src).expect("under src");
            (module_of(relative), relative.display().to_string())
        })
        .collect();
    // (parent, child a, child b) → one import of a file under a from a file under b.
    let mut edges: BTreeMap<(ModPath, String, String), (String, String)> = BTreeMap::new();
    for (module, file) in &modules {
        let source = std::fs::read_to_string(src.join(file)).expect("read a source file");
        for path in module_paths(&source) {
            let Some(target) = resolve(module, &path, &modules) else {
                continue;
            };
            let shared = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if shared == module.len() || shared == target.len() {
                continue; // itself, an ancestor or a descendant
            }
            edges
                .entry((
                    module[..shared].to_vec(),
                    module[shared].clone(),
                    target[shared].clone(),
                ))
                .or_insert_with(|| (file.clone(), modules[&target].clone()));
        }
    }
    cycles(&edges)
}

/// The module a file under `src/` holds: `flow/start.rs` → `flow::start`, `flow/mod.rs`
/// and `flow.rs` → `flow`, `lib.rs` → the root.
fn module_of(relative: &Path) -> ModPath {
    let mut parts: ModPath = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The module file a path from `module` names: the path made absolute (`crate::`,
/// `super::`, `self::`), then its longest prefix that is a module with a file.
fn resolve(
    module: &ModPath,
    path: &[String],
    modules: &BTreeMap<ModPath, String>,
) -> Option<ModPath> {
    let mut absolute: ModPath = match path.first()?.as_str() {
        "crate" => Vec::new(),
        _ => module.clone(),
    };
    let mut rest = &path[usize::from(path[0] == "crate")..];
    while let Some(step) = rest.first() {
        match step.as_str() {
            "super" => {
                absolute.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    absolute.extend(rest.iter().cloned());
    (0..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|prefix| modules.contains_key(prefix))
}

/// The strongly connected groups of more than one child, per parent, as report lines.
fn cycles(edges: &BTreeMap<(ModPath, String, String), (String, String)>) -> Vec<String> {
    let mut by_parent: BTreeMap<&ModPath, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (parent, a, b) in edges.keys() {
        by_parent
            .entry(parent)
            .or_default()
            .entry(a)
            .or_default()
            .insert(b);
    }
    let mut lines = Vec::new();
    for (parent, next) in &by_parent {
        let reach: BTreeMap<&str, BTreeSet<&str>> =
            next.keys().map(|a| (*a, reachable(next, a))).collect();
        let mut seen = BTreeSet::new();
        for (a, from_a) in &reach {
            if seen.contains(a) || !from_a.contains(a) {
                continue;
            }
            let group: BTreeSet<&str> = from_a
                .iter()
                .copied()
                .filter(|b| reach.get(b).is_some_and(|r| r.contains(a)))
                .collect();
            seen.extend(group.iter().copied());
            let steps: Vec<String> = edges
                .iter()
                .filter(|((p, x, y), _)| {
                    p == *parent && group.contains(x.as_str()) && group.contains(y.as_str())
                })
                .map(|(_, (from, to))| format!("{from} → {to}"))
                .collect();
            lines.push(format!(
                "in `{}`: {} import each other round ({})",
                if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                },
                group
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                steps.join("; ")
            ));
        }
    }
    lines
}

/// Every child reachable from `start` in one or more steps.
fn reachable<'a>(next: &BTreeMap<&'a str, BTreeSet<&'a str>>, start: &'a str) -> BTreeSet<&'a str> {
    let mut found = BTreeSet::new();
    let mut todo = vec![start];
    while let Some(at) = todo.pop() {
        for b in next.get(at).into_iter().flatten() {
            if found.insert(*b) {
                todo.push(b);
            }
        }
    }
    found
}
