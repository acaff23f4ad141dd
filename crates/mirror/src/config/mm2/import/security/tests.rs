use super::*;

#[test]
fn shell_quoting_and_stems() {
    assert_eq!(sh("/etc/kafka/ts.jks"), "/etc/kafka/ts.jks");
    assert_eq!(sh("/my dir/it's.jks"), r"'/my dir/it'\''s.jks'");
    assert_eq!(file_stem("us east/1"), "us_east_1");
}
