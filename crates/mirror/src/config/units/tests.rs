use super::*;
use proptest::prelude::*;

#[test]
fn byte_sizes_parse() {
    assert_eq!(ByteSize::parse("64MiB"), Some(ByteSize(64 << 20)));
    assert_eq!(ByteSize::parse("1 GiB"), Some(ByteSize(1 << 30)));
    assert_eq!(ByteSize::parse("10MB"), Some(ByteSize(10_000_000)));
    assert_eq!(ByteSize::parse("123"), Some(ByteSize(123)));
    assert_eq!(ByteSize::parse("12B"), Some(ByteSize(12)));
    assert_eq!(ByteSize::parse("lots"), None);
    assert_eq!(ByteSize::parse("-1MiB"), None);
    assert_eq!(ByteSize::parse("99999999999999GiB"), None);
}

proptest! {
    #[test]
    fn byte_size_display_parses_back(n in any::<u64>()) {
        let size = ByteSize(n);
        prop_assert_eq!(ByteSize::parse(&size.to_string()), Some(size));
    }

    #[test]
    fn duration_display_parses_back(ms in 0u64..10_000_000_000) {
        let d = HumanDuration::millis(ms);
        prop_assert_eq!(humantime::parse_duration(&d.to_string()).ok(), Some(d.0));
    }
}
