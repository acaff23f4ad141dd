use super::*;

const A: Uuid = Uuid::from_bytes([1; 16]);
const B: Uuid = Uuid::from_bytes([2; 16]);
const C: Uuid = Uuid::from_bytes([3; 16]);

#[test]
fn the_same_id_or_no_ids_change_nothing() {
    let r = Retired::default();
    assert_eq!(r.judge("t", A, A), IdNews::Same);
    assert_eq!(r.judge("t", Uuid::nil(), A), IdNews::Same);
    assert_eq!(r.judge("t", A, Uuid::nil()), IdNews::Same);
}

#[test]
fn another_id_is_a_recreation() {
    assert_eq!(Retired::default().judge("t", A, B), IdNews::Changed);
}

#[test]
fn an_id_the_topic_was_recreated_away_from_is_stale() {
    let mut r = Retired::default();
    r.retire("t", A);
    assert_eq!(r.judge("t", B, A), IdNews::Stale);
    assert_eq!(r.judge("t", B, C), IdNews::Changed, "a second re-creation");
    assert_eq!(r.judge("u", B, A), IdNews::Changed, "per topic");
    r.forget("t");
    assert_eq!(
        r.judge("t", B, A),
        IdNews::Changed,
        "forgotten with the topic"
    );
}
