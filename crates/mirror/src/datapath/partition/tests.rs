use super::*;

#[test]
fn the_planner_starts_where_the_feed_started_not_where_the_fetcher_moved_it() {
    // The feed goes to a fetcher before the pipeline task first runs: the fetcher can
    // deliver 100..125 and move the cursor to 125 first. Planning from the cursor
    // would drop that record set as "before the position": a silent gap.
    let metrics = crate::metrics::Metrics::new().partition("f", "t", 0);
    let feed = PartitionFeed::new("t".into(), 0, 100, 4, metrics);
    feed.with_cursor(|c| c.position = 125);
    assert_eq!(feed.start_position(), 100);
}
