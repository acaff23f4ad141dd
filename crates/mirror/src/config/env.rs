//! `${VAR}` and `${VAR:-default}` substitution, applied to the file's text before parsing
//! so secrets and addresses can stay out of the file.
//!
//! Rules:
//! - `${NAME}` is replaced by the variable's value; a missing variable is an error that
//!   names it. `${NAME:-default}` uses `default` when the variable is missing or empty.
//! - `$${` is a literal `${`. A `$` not followed by `{` is left alone.
//! - Comments are not substituted, so commented-out examples cannot fail a load.
//! - Inside a `"basic string"` the value is escaped, so a password containing `"` or `\`
//!   stays one string. Inside a `'literal string'` no escaping exists: a value containing
//!   `'` or a newline there is an error. Elsewhere (e.g. `port = ${PORT}`) it is inserted
//!   as-is.

use super::problem::{KeyPath, Problem};

/// Where the scanner is in the TOML text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Code,
    Comment,
    Basic,
    MultiBasic,
    Literal,
    MultiLiteral,
}

/// Substitutes every `${...}` in `text` using `lookup`; returns all problems, with lines.
pub fn substitute(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Vec<Problem>> {
    let mut out = String::with_capacity(text.len());
    let mut problems = Vec::new();
    let mut ctx = Ctx::Code;
    let mut line = 1;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\n' {
            line += 1;
            if matches!(ctx, Ctx::Comment | Ctx::Basic | Ctx::Literal) {
                ctx = Ctx::Code;
            }
        }
        if ctx != Ctx::Comment && rest.starts_with("$${") {
            out.push_str("${");
            rest = &rest[3..];
            continue;
        }
        if ctx != Ctx::Comment && rest.starts_with("${") {
            let Some(end) = rest.find('}') else {
                problems.push(problem(line, "unterminated `${`"));
                out.push_str(rest);
                break;
            };
            let inner = &rest[2..end];
            match expand(inner, lookup) {
                Ok(value) => match escape_for(ctx, &value) {
                    Ok(v) => out.push_str(&v),
                    Err(why) => problems.push(problem(
                        line,
                        format!("cannot substitute `${{{inner}}}` here: {why}"),
                    )),
                },
                Err(msg) => problems.push(problem(line, msg)),
            }
            rest = &rest[end + 1..];
            continue;
        }
        // Track strings and comments; escapes only matter in basic strings.
        let (next_ctx, consumed) = step(ctx, rest);
        out.push_str(&rest[..consumed]);
        rest = &rest[consumed..];
        ctx = next_ctx;
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Advances over one token in `ctx`: returns the new context and the bytes consumed.
fn step(ctx: Ctx, rest: &str) -> (Ctx, usize) {
    let one = rest.chars().next().map_or(1, char::len_utf8);
    match ctx {
        Ctx::Code if rest.starts_with('#') => (Ctx::Comment, 1),
        Ctx::Code if rest.starts_with("\"\"\"") => (Ctx::MultiBasic, 3),
        Ctx::Code if rest.starts_with("'''") => (Ctx::MultiLiteral, 3),
        Ctx::Code if rest.starts_with('"') => (Ctx::Basic, 1),
        Ctx::Code if rest.starts_with('\'') => (Ctx::Literal, 1),
        Ctx::Basic | Ctx::MultiBasic if rest.starts_with('\\') => {
            // An escape: keep the backslash and the escaped char together.
            let next = rest[1..].chars().next().map_or(0, char::len_utf8);
            (ctx, 1 + next)
        }
        Ctx::Basic if rest.starts_with('"') => (Ctx::Code, 1),
        Ctx::MultiBasic if rest.starts_with("\"\"\"") => (Ctx::Code, 3),
        Ctx::Literal if rest.starts_with('\'') => (Ctx::Code, 1),
        Ctx::MultiLiteral if rest.starts_with("'''") => (Ctx::Code, 3),
        _ => (ctx, one),
    }
}

/// Resolves `NAME` or `NAME:-default`.
fn expand(inner: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let (name, default) = match inner.split_once(":-") {
        Some((n, d)) => (n, Some(d)),
        None => (inner, None),
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "invalid substitution `${{{inner}}}`; expected `${{NAME}}` or `${{NAME:-default}}` \
             with NAME made of letters, digits and `_` (write `$${{` for a literal `${{`)"
        ));
    }
    match (lookup(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Ok(d.to_owned()),
        (Some(v), _) => Ok(v),
        (None, Some(d)) => Ok(d.to_owned()),
        (None, None) => Err(format!(
            "environment variable `{name}` is not set (referenced as `${{{name}}}`; \
             use `${{{name}:-default}}` to give a default)"
        )),
    }
}

/// Makes `value` safe to splice into the current TOML context.
fn escape_for(ctx: Ctx, value: &str) -> Result<String, &'static str> {
    match ctx {
        Ctx::Basic | Ctx::MultiBasic => {
            let mut s = String::with_capacity(value.len());
            for c in value.chars() {
                match c {
                    '"' => s.push_str("\\\""),
                    '\\' => s.push_str("\\\\"),
                    '\n' => s.push_str("\\n"),
                    '\r' => s.push_str("\\r"),
                    '\t' => s.push_str("\\t"),
                    c => s.push(c),
                }
            }
            Ok(s)
        }
        Ctx::Literal if value.contains(['\'', '\n']) => Err(
            "the value contains `'` or a newline, which a 'literal string' cannot hold; use a \"basic string\"",
        ),
        Ctx::MultiLiteral if value.contains("'''") => Err("the value contains `'''`"),
        _ => Ok(value.to_owned()),
    }
}

fn problem(line: usize, msg: impl Into<String>) -> Problem {
    Problem::new(KeyPath::root(), msg).at_line(line)
}

#[cfg(test)]
mod tests;
