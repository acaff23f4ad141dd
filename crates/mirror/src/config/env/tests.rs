use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "HOST" => Some("kafka:9092".into()),
        "EMPTY" => Some(String::new()),
        "QUOTED" => Some(r#"pa"ss\word"#.into()),
        "PORT" => Some("9092".into()),
        _ => None,
    }
}

fn sub(text: &str) -> Result<String, Vec<Problem>> {
    substitute(text, &env)
}

#[test]
fn replaces_variables_and_defaults() {
    assert_eq!(sub(r#"a = "${HOST}""#).unwrap(), r#"a = "kafka:9092""#);
    assert_eq!(sub(r#"a = "${NOPE:-x:1}""#).unwrap(), r#"a = "x:1""#);
    assert_eq!(sub(r#"a = "${EMPTY:-d}""#).unwrap(), r#"a = "d""#);
    assert_eq!(sub(r#"a = "${EMPTY}""#).unwrap(), r#"a = """#);
    assert_eq!(sub("port = ${PORT}").unwrap(), "port = 9092");
    assert_eq!(
        sub(r#"a = "$5 and $${HOST}""#).unwrap(),
        r#"a = "$5 and ${HOST}""#
    );
}

#[test]
fn escapes_inside_basic_strings() {
    let out = sub(r#"p = "${QUOTED}""#).unwrap();
    assert_eq!(out, r#"p = "pa\"ss\\word""#);
    let parsed: toml::Table = toml::from_str(&out).unwrap();
    assert_eq!(parsed["p"].as_str(), Some(r#"pa"ss\word"#));
}

#[test]
fn refuses_unsafe_literal_strings() {
    // Quotes and backslashes are fine in a literal string; only `'` and newlines are not.
    assert_eq!(sub("p = '${QUOTED}'").unwrap(), r#"p = 'pa"ss\word'"#);
    let errs = substitute("p = '${Q}'", &|_| Some("it's".into())).unwrap_err();
    assert!(errs[0].message.contains("literal string"), "{errs:?}");
}

#[test]
fn comments_are_left_alone() {
    let text = "# uses ${UNSET}\na = \"#${HOST}\" # ${ALSO_UNSET}\n";
    assert_eq!(
        sub(text).unwrap(),
        "# uses ${UNSET}\na = \"#kafka:9092\" # ${ALSO_UNSET}\n"
    );
}

#[test]
fn missing_variables_are_named_with_their_line() {
    let errs = sub("a = 1\nb = \"${MISSING_ONE}\"\nc = \"${MISSING_TWO}\"\n").unwrap_err();
    assert_eq!(errs.len(), 2);
    assert!(
        errs[0].message.contains("`MISSING_ONE` is not set"),
        "{}",
        errs[0]
    );
    assert_eq!(errs[0].line, Some(2));
    assert_eq!(errs[1].line, Some(3));
}

#[test]
fn malformed_references_are_errors() {
    assert!(
        sub(r#"a = "${}""#).unwrap_err()[0]
            .message
            .contains("invalid substitution")
    );
    assert!(
        sub(r#"a = "${file:/x:y}""#).unwrap_err()[0]
            .message
            .contains("invalid substitution")
    );
    assert!(
        sub(r#"a = "${HOST"#).unwrap_err()[0]
            .message
            .contains("unterminated")
    );
}

#[test]
fn escaped_quotes_do_not_end_strings() {
    // The `#` after an escaped quote is still inside the string, so it is substituted.
    let out = sub(r#"a = "x\" # ${HOST}""#).unwrap();
    assert_eq!(out, r#"a = "x\" # kafka:9092""#);
}
