use super::*;

fn vals(s: &[&str]) -> Vec<Bytes> {
    s.iter().map(|v| Bytes::from(v.to_string())).collect()
}

#[test]
fn an_identical_copy_has_no_problems() {
    let c = PartitionCheck::compare(&vals(&["a", "b"]), &vals(&["a", "b"]));
    assert_eq!(c.lost + c.duplicates + c.foreign, 0);
    assert_eq!(c.out_of_order, None);
}

#[test]
fn a_missing_record_is_lost() {
    let c = PartitionCheck::compare(&vals(&["a", "b", "c"]), &vals(&["a", "c"]));
    assert_eq!((c.lost, c.out_of_order), (1, None));
}

#[test]
fn a_re_sent_block_is_counted_as_duplicates_not_disorder() {
    let c = PartitionCheck::compare(
        &vals(&["a", "b", "c", "d"]),
        &vals(&["a", "b", "c", "b", "c", "d"]),
    );
    assert_eq!((c.lost, c.duplicates, c.out_of_order), (0, 2, None));
}

#[test]
fn swapped_records_break_the_order() {
    let c = PartitionCheck::compare(&vals(&["a", "b", "c"]), &vals(&["a", "c", "b"]));
    assert_eq!(c.out_of_order.as_deref(), Some("b"));
}

#[test]
fn records_the_source_does_not_hold_are_foreign() {
    let c = PartitionCheck::compare(&vals(&["a"]), &vals(&["a", "x"]));
    assert_eq!(c.foreign, 1);
}

#[test]
fn problems_name_the_partition_and_hold_duplicates_to_the_bound() {
    let source = BTreeMap::from([(0, vals(&["a", "b"])), (1, vals(&["c"]))]);
    let target = BTreeMap::from([(0, vals(&["a", "a", "b"]))]);
    let r = check(&source, &target);
    assert_eq!(r.total().lost, 1);
    let p = r.problems(0);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p[0].starts_with("partition 0: 1 duplicates"), "{p:?}");
    assert!(
        p[1].starts_with("partition 1: 1 source records lost"),
        "{p:?}"
    );
    assert!(r.problems(1).len() == 1);
    assert!(r.to_string().contains("1 lost, 1 duplicates"), "{r}");
}
