//! A `java.util.Properties` text parser (the format of `mm2.properties`).
//!
//! Follows `Properties.load(Reader)`: `#`/`!` comment lines; `key=value`, `key: value` and
//! `key value`; a line ending in an odd number of backslashes continues on the next line
//! (whose leading whitespace is dropped); escapes `\t \n \r \f \uXXXX`, and `\x` = `x`
//! for any other character. Later keys override earlier ones, as in Java.

/// One `key = value` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The unescaped key.
    pub key: String,
    /// The unescaped value (trailing whitespace kept, as Java does).
    pub value: String,
    /// 1-based line where the entry starts.
    pub line: usize,
}

/// A malformed `\uXXXX` escape, the only thing Java refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: malformed \\uXXXX escape")]
pub struct PropertiesError {
    /// 1-based line of the entry.
    pub line: usize,
}

/// A key given more than once: the earlier entry is overridden by the later one, as
/// `java.util.Properties` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    /// The repeated key.
    pub key: String,
    /// 1-based line of the entry that lost.
    pub line: usize,
    /// 1-based line of the entry that won (the last one).
    pub winner: usize,
}

/// Parses properties text into entries in file order; a repeated key keeps only its last
/// entry (at the position of that last entry).
pub fn parse(text: &str) -> Result<Vec<Property>, PropertiesError> {
    parse_with_overrides(text).map(|(entries, _)| entries)
}

/// [`parse`], also returning every entry a later one of the same key replaced.
pub fn parse_with_overrides(
    text: &str,
) -> Result<(Vec<Property>, Vec<Overridden>), PropertiesError> {
    let mut out: Vec<Property> = Vec::new();
    let mut overridden: Vec<Overridden> = Vec::new();
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut n = 0;
    while n < lines.len() {
        let start = n;
        let first = lines[n].trim_start_matches([' ', '\t', '\x0c']);
        n += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // Join continuation lines into one logical line.
        let mut logical = String::from(first);
        while ends_with_odd_backslashes(&logical) && n <= lines.len() {
            logical.pop();
            match lines.get(n) {
                Some(next) => logical.push_str(next.trim_start_matches([' ', '\t', '\x0c'])),
                None => break,
            }
            n += 1;
        }
        let (key, value) = split_entry(&logical);
        let line = start + 1;
        let key = unescape(key).ok_or(PropertiesError { line })?;
        let value = unescape(value).ok_or(PropertiesError { line })?;
        if let Some(old) = out.iter().position(|p| p.key == key) {
            let old = out.remove(old);
            overridden.push(Overridden {
                key: key.clone(),
                line: old.line,
                winner: line,
            });
        }
        out.push(Property { key, value, line });
    }
    // A key given three times: each loser names the final winner.
    for o in &mut overridden {
        if let Some(p) = out.iter().find(|p| p.key == o.key) {
            o.winner = p.line;
        }
    }
    Ok((out, overridden))
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace; then skips whitespace and at
/// most one `=`/`:` (so `key = value` and `key value` both work).
fn split_entry(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\x0c' {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)?;
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
