use super::*;

fn kv(text: &str) -> Vec<(String, String)> {
    parse(text)
        .unwrap()
        .into_iter()
        .map(|p| (p.key, p.value))
        .collect()
}

fn pair(k: &str, v: &str) -> (String, String) {
    (k.to_owned(), v.to_owned())
}

#[test]
fn separators_and_comments() {
    let text =
        "# comment\n! also a comment\n\n a=1\nb: 2\nc 3\nd = 4\ne\nf=\n  g  =  spaced value  \n";
    assert_eq!(
        kv(text),
        vec![
            pair("a", "1"),
            pair("b", "2"),
            pair("c", "3"),
            pair("d", "4"),
            pair("e", ""),
            pair("f", ""),
            pair("g", "spaced value  ")
        ]
    );
}

#[test]
fn continuations_and_escapes() {
    let text = "topics = a, \\\n    b, \\\n    c\nkey\\ with\\=odd\\:chars = v\\tx\\u0041\\\\\nk2 = ends with backslash\\\\\nk3 = x\n";
    assert_eq!(
        kv(text),
        vec![
            pair("topics", "a, b, c"),
            pair("key with=odd:chars", "v\txA\\"),
            pair("k2", "ends with backslash\\"),
            pair("k3", "x")
        ]
    );
}

#[test]
fn comment_marker_inside_continuation_is_data() {
    assert_eq!(
        kv("a = 1,\\\n  # not a comment\n"),
        vec![pair("a", "1,# not a comment")]
    );
}

#[test]
fn later_keys_win_and_lines_are_kept() {
    let props = parse("a=1\r\nb=2\r\na=3\r\n").unwrap();
    assert_eq!(props.len(), 2);
    assert_eq!(
        (
            props[1].key.as_str(),
            props[1].value.as_str(),
            props[1].line
        ),
        ("a", "3", 3)
    );
}

#[test]
fn bad_unicode_escape_is_an_error() {
    assert_eq!(
        parse("ok=1\nbad=\\u12G4\n"),
        Err(PropertiesError { line: 2 })
    );
    assert_eq!(parse("bad=\\u12"), Err(PropertiesError { line: 1 }));
}

#[test]
fn trailing_continuation_at_end_of_file() {
    assert_eq!(kv("a = x\\"), vec![pair("a", "x")]);
}
