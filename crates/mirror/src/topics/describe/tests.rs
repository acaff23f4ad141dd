use super::*;

fn entry(name: &str, value: Option<&str>, source: i8) -> ConfigEntry {
    ConfigEntry {
        name: name.into(),
        value: value.map(str::to_owned),
        read_only: false,
        source,
        is_default: matches!(source, 5 | 6),
        is_sensitive: false,
    }
}

fn kafka_defaults() -> Vec<ConfigEntry> {
    (0..SPARSE_LISTING)
        .map(|i| entry(&format!("default.{i}"), Some("d"), 5))
        .collect()
}

#[test]
fn only_topic_level_values_are_kept() {
    let mut ro = entry("ro", Some("1"), 1);
    ro.read_only = true;
    let mut secret = entry("secret", Some("x"), 1);
    secret.is_sensitive = true;
    let mut all = kafka_defaults();
    all.extend([
        entry("retention.ms", Some("5"), 1),
        entry("unknown.source", Some("7"), -1),
        entry("broker.dynamic", Some("9"), 2),
        entry("static.broker", Some("9"), 4),
        entry("no.value", None, 1),
        ro,
        secret,
    ]);
    let want: BTreeMap<String, String> = [
        ("retention.ms".to_string(), "5".to_string()),
        ("unknown.source".to_string(), "7".to_string()),
    ]
    .into();
    assert_eq!(explicit(&all), want);
}

#[test]
fn a_full_listing_of_defaults_copies_nothing() {
    assert!(explicit(&kafka_defaults()).is_empty());
}

#[test]
fn a_sparse_listing_is_what_was_set() {
    // Tansu 0.6: only the set configs, labelled DEFAULT_CONFIG.
    let got = explicit(&[entry("retention.ms", Some("5"), 5)]);
    assert_eq!(got.get("retention.ms").map(String::as_str), Some("5"));
}
