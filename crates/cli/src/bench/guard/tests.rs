use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn an_empty_cluster_or_one_with_benchmark_and_internal_topics_is_accepted() {
    assert_eq!(refusal("source", "a:1", &[]), None);
    let ok = names(&[
        "__consumer_offsets",
        "_schemas",
        "strait-bench-drain-42",
        "strait-standalone",
        "src.strait-bench-drain-42",
        "strait-state.src-to-dst.internal",
    ]);
    assert_eq!(refusal("target", "b:1", &ok), None);
}

#[test]
fn a_cluster_with_other_topics_is_refused_naming_them() {
    let why = refusal(
        "source",
        "kafka:9092",
        &names(&["orders", "strait-bench-1"]),
    )
    .expect("refused");
    assert!(why.contains("source kafka:9092"), "{why}");
    assert!(why.contains("orders") && why.contains("--yes"), "{why}");
}

#[test]
fn a_long_list_is_cut_short() {
    let many: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    let why = refusal("target", "b:1", &many).expect("refused");
    assert!(
        why.contains("12 topic(s)") && why.contains("and 7 more"),
        "{why}"
    );
    assert!(!why.contains("t11"), "{why}");
}
