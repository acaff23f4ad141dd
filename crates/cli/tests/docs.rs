//! Every `strait …` command line the docs show parses with the binary's own clap
//! definition: the command path, every flag and every enumerated value. Each line is run
//! as `strait <args> --help`, which clap answers with exit 0 once everything before it
//! parsed, and with a usage error (exit 2) otherwise; nothing connects anywhere.

use std::path::PathBuf;
use std::process::Command;

/// The README, every guide in docs/, and the configs that show commands.
fn docs() -> Vec<String> {
    let mut guides: Vec<String> = std::fs::read_dir(repo("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    guides.sort();
    let mut all = vec!["README.md".to_owned()];
    all.extend(guides);
    all.extend(["examples/strait.toml", "deploy/kubernetes/strait.toml"].map(str::to_owned));
    all
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// The command lines of a doc: `strait …` in code blocks (continuation lines joined,
/// `$ ` prompts and `# comments` dropped) and in inline code spans.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let line = line.trim_start().trim_start_matches("$ ");
            let mut code = line.split(" #").next().unwrap_or("").trim_end().to_owned();
            if code.starts_with('#') {
                code.clear();
            }
            if !pending.is_empty() {
                pending.push(' ');
                pending.push_str(code.trim());
            } else if code.starts_with("strait ") {
                pending = code;
            } else {
                continue;
            }
            if pending.ends_with('\\') {
                pending.pop();
                continue;
            }
            out.push(std::mem::take(&mut pending));
        } else {
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1 && span.starts_with("strait ") {
                    out.push(span.to_owned());
                }
            }
        }
    }
    out
}

/// The arguments after `strait`, placeholders filled in, optional parts (`[--once]`)
/// taken; `None` for a line that is not one command (`strait bench ...`, `a | b`).
fn args(line: &str) -> Option<Vec<String>> {
    if line.contains("...") || line.contains('…') || line.contains('|') || line.contains('<') {
        return None;
    }
    let line = line.replace(['[', ']'], "");
    let mut words = shell_words(&line)?;
    assert_eq!(words.remove(0), "strait");
    for w in &mut words {
        let filled = match w.as_str() {
            "FILE" => "strait.toml",
            "G" => "billing",
            "T" => "orders",
            "F" => "primary-to-dr",
            "TOPIC" => "orders-replayed",
            "TIME" => "2026-11-30T10:00:00Z",
            "ID" => "r0123456789abcdef",
            _ => continue,
        };
        *w = filled.to_owned();
    }
    Some(words)
}

/// Splits on spaces, honouring single and double quotes (all the docs use).
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if any {
        words.push(word);
    }
    Some(words)
}

#[test]
fn every_documented_command_line_parses() {
    let bin = env!("CARGO_BIN_EXE_strait");
    let mut checked = 0;
    let mut skipped = Vec::new();
    let mut wrong = Vec::new();
    for doc in &docs() {
        let text = std::fs::read_to_string(repo(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        for line in command_lines(&text) {
            let Some(mut args) = args(&line) else {
                skipped.push(format!("{doc}: {line}"));
                continue;
            };
            args.push("--help".into());
            let out = Command::new(bin).args(&args).output().expect("run strait");
            checked += 1;
            if !out.status.success() {
                wrong.push(format!(
                    "{doc}: `{line}` ({:?}): {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                ));
            }
        }
    }
    println!(
        "{checked} command lines parsed; skipped {}: {skipped:#?}",
        skipped.len()
    );
    assert!(
        checked >= 40,
        "only {checked} command lines found in the docs"
    );
    assert!(
        wrong.is_empty(),
        "command lines the CLI refuses: {wrong:#?}"
    );
}
