use super::*;

fn state(status: ReplayStatus, partitions: u32) -> ReplayState {
    ReplayState {
        status,
        topic_id: Uuid::nil(),
        source_topic: "t".into(),
        target_topic: "u".into(),
        from_ms: 1,
        until_ms: None,
        start: 0,
        end: 0,
        partitions,
        snapshot: OffsetMap::new().snapshot().bytes,
    }
}

fn key(id: &str, run: u32, partition: i32) -> crate::state::ReplayKey {
    crate::state::ReplayKey {
        id: id.into(),
        run,
        partition,
    }
}

#[test]
fn a_run_is_complete_only_when_every_partition_is_done() {
    let spec = Spec::new("t", "u", 1, None).unwrap();
    let mut saved = SavedReplays::new();
    saved.insert(key("x", 1, 0), state(ReplayStatus::Done, 2));
    saved.insert(key("x", 1, 1), state(ReplayStatus::Copying, 2));
    let latest = latest_run(&saved, "x", &spec).unwrap().unwrap();
    assert_eq!((latest.run, latest.complete), (1, false));
    saved.insert(key("x", 1, 1), state(ReplayStatus::Done, 2));
    assert!(latest_run(&saved, "x", &spec).unwrap().unwrap().complete);
    // A later run counts, not the first.
    saved.insert(key("x", 2, 0), state(ReplayStatus::Copying, 2));
    let latest = latest_run(&saved, "x", &spec).unwrap().unwrap();
    assert_eq!((latest.run, latest.complete), (2, false));
    assert_eq!(latest_run(&saved, "y", &spec).unwrap(), None);
}

#[test]
fn an_id_saved_for_another_replay_is_refused() {
    let spec = Spec::new("t", "other", 1, None).unwrap();
    let mut saved = SavedReplays::new();
    saved.insert(key("x", 1, 0), state(ReplayStatus::Done, 1));
    assert!(latest_run(&saved, "x", &spec).is_err());
}
