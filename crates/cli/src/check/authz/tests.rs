use super::*;
use AclOperation::*;

const SOURCE_NEEDS: &[AclOperation] = &[Describe, Read, DescribeConfigs];

fn topics(n: usize, ops: Option<AuthorizedOps>) -> Vec<(String, Option<AuthorizedOps>)> {
    (0..n).map(|i| (format!("t{i}"), ops)).collect()
}

fn every_op() -> AuthorizedOps {
    AuthorizedOps::of(&AclOperation::ALL)
}

#[test]
fn nothing_to_check() {
    assert!(resource_lines("source topic", SOURCE_NEEDS, &[]).is_empty());
}

#[test]
fn all_granted() {
    let lines = resource_lines(
        "source topic",
        SOURCE_NEEDS,
        &topics(12, Some(AuthorizedOps::of(SOURCE_NEEDS))),
    );
    assert_eq!(
        lines,
        vec![Line::Ok(
            "authorized: Describe, Read, DescribeConfigs on 12 source topic(s)".into()
        )]
    );
}

#[test]
fn all_granted_holds_for_every_operation() {
    for op in AclOperation::ALL {
        let lines = resource_lines("x", &[op], &topics(1, Some(AuthorizedOps::of(&[op]))));
        assert_eq!(lines, vec![Line::Ok(format!("authorized: {op} on 1 x(s)"))]);
        let others: Vec<AclOperation> =
            AclOperation::ALL.into_iter().filter(|o| *o != op).collect();
        let lines = resource_lines("x", &[op], &topics(1, Some(AuthorizedOps::of(&others))));
        assert_eq!(
            lines,
            vec![Line::Fail(format!(
                "not authorized: {op} on 1 of 1 x(s): t0"
            ))],
            "{op} is denied when only the others are granted"
        );
    }
}

#[test]
fn denied_per_operation_and_granted_rest() {
    let mut res = topics(12, Some(every_op()));
    res[3].1 = Some(AuthorizedOps::of(&[Describe, DescribeConfigs]));
    res[7].1 = Some(AuthorizedOps::of(&[Describe, DescribeConfigs]));
    res[3].0 = "orders".into();
    res[7].0 = "payments".into();
    let lines = resource_lines("source topic", SOURCE_NEEDS, &res);
    assert_eq!(
        lines,
        vec![
            Line::Ok("authorized: Describe, DescribeConfigs on 12 source topic(s)".into()),
            Line::Fail("not authorized: Read on 2 of 12 source topic(s): orders, payments".into()),
        ]
    );
}

#[test]
fn denied_names_are_capped() {
    let lines = resource_lines("group", &[Read], &topics(8, Some(AuthorizedOps::NONE)));
    assert_eq!(
        lines,
        vec![Line::Fail(
            "not authorized: Read on 8 of 8 group(s): t0, t1, t2, t3, t4 and 3 more".into()
        )]
    );
}

#[test]
fn not_reported_is_a_limitation() {
    let lines = resource_lines("source topic", SOURCE_NEEDS, &topics(3, None));
    assert_eq!(lines.len(), 1);
    let Line::Warn(w) = &lines[0] else {
        panic!("{lines:?}")
    };
    assert!(
        w.contains("on 3 source topic(s)") && w.contains("not reported by the broker"),
        "{w}"
    );
}

#[test]
fn not_reported_beside_reported_ones() {
    let mut res = topics(2, Some(AuthorizedOps::of(SOURCE_NEEDS)));
    res.push(("late".into(), None));
    let lines = resource_lines("source topic", SOURCE_NEEDS, &res);
    assert!(matches!(&lines[0], Line::Ok(s) if s.contains("on 2 source topic(s)")));
    assert!(matches!(&lines[1], Line::Warn(s) if s.contains("on 1 source topic(s)")));
    assert_eq!(lines.len(), 2);
}

fn facts<'a>(
    ops: Option<AuthorizedOps>,
    kip679: bool,
    missing: &'a [&'a str],
    write: &'a [(&'a str, bool)],
) -> ClusterFacts<'a> {
    ClusterFacts {
        ops,
        write_allows_idempotence: kip679,
        missing_topics: missing,
        topic_write: write,
    }
}

#[test]
fn cluster_not_reported() {
    let lines = cluster_lines(&facts(None, true, &["a.orders"], &[]));
    assert_eq!(lines.len(), 1);
    assert!(matches!(&lines[0], Line::Warn(s) if s.contains("not reported")));
}

#[test]
fn create_on_cluster() {
    let ok = cluster_lines(&facts(Some(every_op()), true, &["a.orders"], &[]));
    assert_eq!(
        ok[0],
        Line::Ok("authorized: Create on the cluster (1 topic(s) to create: a.orders)".into())
    );
    let no = cluster_lines(&facts(
        Some(AuthorizedOps::of(&[IdempotentWrite])),
        true,
        &["a.orders"],
        &[],
    ));
    assert!(matches!(&no[0], Line::Warn(s) if s.contains("Create is not granted")));
    let none_missing = cluster_lines(&facts(
        Some(AuthorizedOps::of(&[IdempotentWrite])),
        true,
        &[],
        &[],
    ));
    assert_eq!(
        none_missing,
        vec![Line::Ok(
            "authorized: IdempotentWrite on the cluster (InitProducerId)".into()
        )]
    );
}

#[test]
fn idempotent_write() {
    let bare = Some(AuthorizedOps::of(&[Describe]));
    // Before 2.8: IdempotentWrite or nothing.
    let l = cluster_lines(&facts(bare, false, &[], &[("a.orders", true)]));
    assert!(
        matches!(&l[0], Line::Fail(s) if s.contains("before Kafka 2.8")),
        "{l:?}"
    );
    // 2.8+: Write on a topic.
    let l = cluster_lines(&facts(
        bare,
        true,
        &[],
        &[("a.x", false), ("a.orders", true)],
    ));
    assert!(
        matches!(&l[0], Line::Ok(s) if s.contains("Write on topic a.orders")),
        "{l:?}"
    );
    // 2.8+: no target topic reported yet.
    let l = cluster_lines(&facts(bare, true, &[], &[]));
    assert!(
        matches!(&l[0], Line::Warn(s) if s.contains("not verifiable")),
        "{l:?}"
    );
    // 2.8+: topics reported, none writable.
    let l = cluster_lines(&facts(bare, true, &[], &[("a.x", false)]));
    assert!(
        matches!(&l[0], Line::Fail(s) if s.contains("neither is granted")),
        "{l:?}"
    );
}
