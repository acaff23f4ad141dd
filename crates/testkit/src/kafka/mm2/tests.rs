use super::*;

#[test]
fn translation_lines_are_parsed_and_bad_ones_refused() {
    let got = parse_translation("a.t\t0\t17\nb\t3\t0\n\n").unwrap();
    assert_eq!(got[&("a.t".to_owned(), 0)], 17);
    assert_eq!(got[&("b".to_owned(), 3)], 0);
    assert!(parse_translation("a\tx\t1\n").is_err());
}
