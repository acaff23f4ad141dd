use super::*;

#[test]
fn a_line_is_given_only_for_a_key_written_once() {
    let yaml = "clusters:\n  - alias: a\n    bootstrapServers: a:1\n  - alias: b\n    bootstrapServers: b:1\n    tls: {}\n";
    assert_eq!(line_of(yaml, "tls"), 6);
    assert_eq!(line_of(yaml, "bootstrapServers"), 0, "two clusters set it");
    assert_eq!(line_of(yaml, "alias"), 0);
    assert_eq!(line_of("{\n \"topics\": \"x\"\n}", "topics"), 2);
    assert_eq!(line_of("{}", "topics"), 0);
}
