use super::crate_imports;

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

#[test]
fn the_reader_expands_groups_over_lines_and_leaves_strings_and_literals_out() {
    let source = "use super::{\n    a,\n    b::{C, D as E},\n};\n\
                  let s = \"crate::in_a_string\"; let r = r#\"self::raw\"#;\n\
                  let q = '\"'; let e = '\\''; fn f<'a>(x: &'a str) { self::g::h(x) }\n\
                  $crate::macro_path; strait_client::crate_like; /* crate::block */";
    let paths: Vec<String> = super::module_paths(source)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        ["super::a", "super::b::C", "super::b::D", "self::g::h"]
    );
}

/// Writes `files` (path under `src/`, contents) into a fresh directory; returns it.
fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }
    dir
}

#[test]
fn two_sibling_files_that_import_each_other_are_a_cycle() {
    let dir = crate_with(&[
        ("lib.rs", "mod flow;"),
        ("flow.rs", "mod a; mod b;"),
        ("flow/a.rs", "use super::b::Thing;"),
        ("flow/b.rs", "use crate::flow::{a::Other, self};"),
    ]);
    let found = super::file_cycles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("in `flow`: `a`, `b` import each other round"),
        "{found:?}"
    );
    assert!(found[0].contains("flow/a.rs → flow/b.rs"), "{found:?}");
}

#[test]
fn a_cycle_through_three_files_and_through_a_folder_is_found() {
    let dir = crate_with(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "use crate::b::X;"),
        ("b/mod.rs", "mod inner;"),
        ("b/inner.rs", "fn f() { crate::c::y() }"),
        ("c.rs", "use crate::a;"),
    ]);
    let found = super::file_cycles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("in `crate`: `a`, `b`, `c`"),
        "{found:?}"
    );
    assert!(found[0].contains("b/inner.rs → c.rs"), "{found:?}");
}

#[test]
fn a_child_naming_its_parent_and_a_parent_its_children_is_no_cycle() {
    let dir = crate_with(&[
        ("lib.rs", "mod flow;"),
        ("flow.rs", "mod a; mod b; use a::A; use b::B;"),
        ("flow/a.rs", "use super::Run; use super::b::B;"),
        (
            "flow/b.rs",
            "use super::super::flow::Run; // super::a::A in a comment",
        ),
    ]);
    assert_eq!(super::file_cycles(dir.path()), Vec::<String>::new());
}
