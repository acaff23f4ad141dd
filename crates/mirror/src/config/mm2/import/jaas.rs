//! Kafka's `sasl.jaas.config` syntax: one login module entry and its options.

/// One JAAS login module entry: `<class> <flag> name="value" ...;`.
#[derive(PartialEq, Eq)]
pub(super) struct Jaas {
    /// The login module class.
    pub module: String,
    /// Its `name="value"` options, in order.
    pub options: Vec<(String, String)>,
    /// Another module follows the first (Kafka clients take one).
    pub more_modules: bool,
}

impl Jaas {
    /// The value of option `name`.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a `sasl.jaas.config` value as Kafka's `JaasConfig` does (words, `"..."` strings
/// with backslash escapes, `//` and `/* */` comments). Errors never quote the text: it
/// holds passwords.
pub(super) fn parse_jaas(text: &str) -> Result<Jaas, &'static str> {
    entry(tokens(text)?)
}

/// A token of a JAAS line.
#[derive(PartialEq)]
enum Tok {
    /// A bare word or a quoted string (unescaped).
    Word(String),
    /// `=`.
    Eq,
    /// `;`.
    Semi,
}

/// The characters of a JAAS line, read one at a time.
type Chars<'t> = std::iter::Peekable<std::str::Chars<'t>>;

/// Splits `text` into tokens, dropping white space and comments.
fn tokens(text: &str) -> Result<Vec<Tok>, &'static str> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                toks.push(Tok::Eq);
            }
            ';' => {
                chars.next();
                toks.push(Tok::Semi);
            }
            '"' | '\'' => {
                chars.next();
                toks.push(Tok::Word(quoted(&mut chars, c)?));
            }
            '/' => {
                chars.next();
                comment(&mut chars)?;
            }
            _ => toks.push(Tok::Word(word(&mut chars))),
        }
    }
    Ok(toks)
}

/// The rest of a string opened by `quote`, with its backslash escapes undone.
fn quoted(chars: &mut Chars<'_>, quote: char) -> Result<String, &'static str> {
    let mut s = String::new();
    loop {
        match chars.next() {
            None => return Err("unterminated quoted string"),
            Some(q) if q == quote => return Ok(s),
            Some('\\') => match chars.next() {
                Some('n') => s.push('\n'),
                Some('t') => s.push('\t'),
                Some('r') => s.push('\r'),
                Some(e) => s.push(e),
                None => return Err("unterminated quoted string"),
            },
            Some(ch) => s.push(ch),
        }
    }
}

/// Skips the rest of a comment after its `/`: a `//` line or a `/* */` block.
fn comment(chars: &mut Chars<'_>) -> Result<(), &'static str> {
    match chars.peek() {
        Some('/') => {
            for ch in chars.by_ref() {
                if ch == '\n' {
                    break;
                }
            }
            Ok(())
        }
        Some('*') => {
            chars.next();
            let mut prev = ' ';
            loop {
                match chars.next() {
                    None => return Err("unterminated comment"),
                    Some('/') if prev == '*' => return Ok(()),
                    Some(ch) => prev = ch,
                }
            }
        }
        _ => Err("stray `/`"),
    }
}

/// A bare word: everything up to white space, `=`, `;` or a quote.
fn word(chars: &mut Chars<'_>) -> String {
    let mut s = String::new();
    while let Some(&ch) = chars.peek() {
        if ch.is_whitespace() || "=;\"'".contains(ch) {
            break;
        }
        s.push(ch);
        chars.next();
    }
    s
}

/// The first login module entry of `toks`: its class, control flag and options up to `;`.
fn entry(toks: Vec<Tok>) -> Result<Jaas, &'static str> {
    let mut it = toks.into_iter();
    let Some(Tok::Word(module)) = it.next() else {
        return Err("no login module class");
    };
    match it.next() {
        Some(Tok::Word(flag))
            if ["required", "requisite", "sufficient", "optional"]
                .contains(&flag.to_ascii_lowercase().as_str()) => {}
        _ => return Err("no control flag (`required`) after the login module"),
    }
    let mut options = Vec::new();
    loop {
        match it.next() {
            Some(Tok::Semi) => break,
            Some(Tok::Word(name)) => {
                if it.next() != Some(Tok::Eq) {
                    return Err("an option without `=`");
                }
                let Some(Tok::Word(value)) = it.next() else {
                    return Err("an option without a value");
                };
                options.push((name, value));
            }
            _ => return Err("no `;` at the end of the login module"),
        }
    }
    Ok(Jaas {
        module,
        options,
        more_modules: it.next().is_some(),
    })
}

#[cfg(test)]
mod tests;
