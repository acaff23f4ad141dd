//! The module paths a Rust source names: every `crate::…`, `super::…` and `self::…` path
//! in its code, with `{…}` groups expanded (`use super::{a, b::{C, D}}` names
//! `super::a`, `super::b::C` and `super::b::D`). Comments, string literals and character
//! literals are blanked first, so a path in a doc comment or a message is not an import.
//! A reader's approximation, not a parser: enough for the levels and cycle checks, which
//! only ask which files a file names.

/// Every `crate::`, `super::` and `self::` path in `source`'s code, in order, each as its
/// segments (`["super", "partitions", "Key"]`). `$crate::` (macros) and paths of other
/// crates (`strait_client::…`) are left out.
pub fn module_paths(source: &str) -> Vec<Vec<String>> {
    let code: Vec<char> = code_only(source).chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let starts_word = at == 0 || !is_path_char(code[at - 1]);
        let root = ["crate", "super", "self"]
            .into_iter()
            .find(|root| starts_word && word_at(&code, at, root));
        match root {
            Some(root) => at = path_tree(&code, at, &[], &mut found).max(at + root.len()),
            None => at += 1,
        }
    }
    found
}

/// Whether `word` stands at `at` as a whole word followed by `::`.
fn word_at(code: &[char], at: usize, word: &str) -> bool {
    let end = at + word.chars().count();
    code.get(at..end)
        .is_some_and(|s| s.iter().copied().eq(word.chars()))
        && code.get(end) == Some(&':')
        && code.get(end + 1) == Some(&':')
}

/// A character that continues a path or an identifier before a root word: `$crate`,
/// `strait_client::…` and `foo::crate` are not roots.
fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == ':' || c == '$'
}

/// Reads one path tree at `at` (segments joined by `::`, perhaps ending in a `{…}` group
/// of trees), pushes each complete path under `prefix`, and returns where it ended.
fn path_tree(code: &[char], mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        at = skip_space(code, at);
        if code.get(at) == Some(&'{') {
            at += 1;
            loop {
                at = skip_space(code, at);
                match code.get(at) {
                    Some('}') => return at + 1,
                    Some(',') => at += 1,
                    Some(_) => {
                        let next = path_tree(code, at, &path, out);
                        if next == at {
                            return at; // not a tree: give up on this group
                        }
                        at = next;
                    }
                    None => return at,
                }
            }
        }
        let start = at;
        while code
            .get(at)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            at += 1;
        }
        if at == start {
            break;
        }
        path.push(code[start..at].iter().collect());
        let after = skip_space(code, at);
        if code.get(after) == Some(&':') && code.get(after + 1) == Some(&':') {
            at = after + 2;
        } else {
            break;
        }
    }
    if path.len() > prefix.len() {
        out.push(path);
    }
    skip_rename(code, at)
}

/// Past a `use` rename (` as Name`, ` as _`) at `at`, if one stands there.
fn skip_rename(code: &[char], at: usize) -> usize {
    let word = skip_space(code, at);
    let is_as = code.get(word..word + 2) == Some(&['a', 's'])
        && code.get(word + 2).is_some_and(|c| c.is_whitespace());
    if !is_as {
        return at;
    }
    let mut end = skip_space(code, word + 2);
    while code
        .get(end)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        end += 1;
    }
    end
}

fn skip_space(code: &[char], mut at: usize) -> usize {
    while code.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

/// `source` with comments and the insides of string and character literals replaced by
/// spaces (newlines kept), so only code is left to read. Lifetimes (`'a`) stay code.
pub fn code_only(source: &str) -> String {
    let s: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with(&['/', '/']) {
            while i < s.len() && s[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            while i < s.len() {
                if s[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if s[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(s[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br"…": no escapes; ends at a quote and as many hashes.
            let open = rest.iter().position(|c| *c == '"').unwrap_or(0) + 1;
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            while i < s.len() && !s[i..].starts_with(&close) {
                out.push(blank(s[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(' ', close.len().min(s.len() - i)));
            i += close.len();
        } else if s[i] == '"' {
            out.push(' ');
            i += 1;
            while i < s.len() && s[i] != '"' {
                let step = if s[i] == '\\' { 2 } else { 1 };
                for c in &s[i..(i + step).min(s.len())] {
                    out.push(blank(*c));
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if s[i] == '\'' && char_literal_len(rest) > 0 {
            let len = char_literal_len(rest);
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// The number of `#`s of a raw string literal starting at `rest[0]`, or `None`.
fn raw_string_start(rest: &[char]) -> Option<usize> {
    let after_r = match rest {
        ['r', ..] => 1,
        ['b', 'r', ..] => 2,
        _ => return None,
    };
    let hashes = rest[after_r..].iter().take_while(|c| **c == '#').count();
    (rest.get(after_r + hashes) == Some(&'"')).then_some(hashes)
}

/// The length of the character literal at `rest[0] == '\''` (`'x'`, `'\n'`, `'\u{1F600}'`),
/// or 0 for a lifetime or a label (`'a`, `'outer:`).
fn char_literal_len(rest: &[char]) -> usize {
    match rest {
        ['\'', '\\', _, ..] => rest[3..]
            .iter()
            .position(|c| *c == '\'')
            .map_or(0, |end| end + 4),
        ['\'', _, '\'', ..] => 3,
        _ => 0,
    }
}
