//! Group-offset sync against two real Tansu brokers. The offset maps are filled by hand, as
//! the data path would after replicating: source `orders` p0 holds `v0..v9` at offsets
//! 0..9; the target `source.orders` p0 holds two unrelated records, then `v0..v4` and
//! `v7..v9` (source offsets 5 and 6 were not replicated — a gap, as compaction or
//! transaction markers leave).

mod control;

use std::sync::Arc;

use bytes::Bytes;
use control::{Pair, create, produce, read_all, value_at};
use strait_client::protocol::messages::join_group_request::JoinGroupRequestProtocol;
use strait_client::protocol::messages::{GroupId, JoinGroupRequest};
use strait_client::protocol::protocol::StrBytes;
use strait_client::{Client, CommitOffset, GroupMember};
use strait_mirror::Metrics;
use strait_mirror::config::Flow;
use strait_mirror::groups::{Checkpoint, GroupSync};
use strait_offsets::{MapWriter, OffsetMap, Registry};

fn v(i: usize) -> String {
    format!("v{i}")
}

/// Builds the topics and the map described at the top; returns the map's writer.
async fn replicated(pair: &Pair, maps: &Registry) -> MapWriter {
    let (src, dst) = (&pair.source, &pair.target);
    create(src, "orders", 1, &[]).await;
    create(dst, "source.orders", 1, &[]).await;
    produce(src, "orders", &(0..10).map(v).collect::<Vec<_>>()).await;
    produce(dst, "source.orders", &["other-a".into(), "other-b".into()]).await;
    produce(dst, "source.orders", &(0..5).map(v).collect::<Vec<_>>()).await;
    produce(dst, "source.orders", &(7..10).map(v).collect::<Vec<_>>()).await;
    let mut w = maps
        .register("orders", 0, OffsetMap::new())
        .expect("register");
    w.append_listed(&[0, 1, 2, 3, 4, 7, 8, 9], 2)
        .expect("append");
    w.advance(10, 10).expect("advance");
    w
}

async fn commit(c: &Client, group: &str, topic: &str, offset: i64) {
    c.offset_commit(
        group,
        &GroupMember::standalone(),
        &[CommitOffset::new(topic, 0, offset)],
    )
    .await
    .expect("commit");
}

async fn committed(c: &Client, group: &str, topic: &str) -> Option<i64> {
    c.offset_fetch(group, Some(&[(topic, &[0])]))
        .await
        .expect("offset_fetch")
        .first()
        .map(|o| o.offset)
        .filter(|o| *o >= 0)
}

fn flow(pair: &Pair) -> Flow {
    pair.flow("[flows.sync]\ngroup_offsets = true\ncheckpoints = true")
}

#[tokio::test]
async fn translated_offsets_point_at_the_same_record_and_checkpoints_are_mm2s() {
    let pair = Pair::start().await;
    let maps = Arc::new(Registry::new());
    let _w = replicated(&pair, &maps).await;
    let (src, dst) = (&pair.source, &pair.target);
    // One group committed by librdkafka (an independent client), one in the gap.
    let src_bootstrap = pair.source_bootstrap();
    tokio::task::spawn_blocking(move || {
        strait_testkit::rdkafka::commit_group_offsets(
            &src_bootstrap,
            "g-exact",
            "orders",
            &[(0, 3)],
        )
    })
    .await
    .expect("join")
    .expect("librdkafka commit");
    commit(src, "g-gap", "orders", 5).await;

    let metrics = Metrics::new();
    let mut sync = GroupSync::new(
        &flow(&pair),
        src.clone(),
        dst.clone(),
        maps.clone(),
        metrics.clone(),
    );
    let r = sync.sync_once().await.expect("sync");
    assert_eq!(r.groups_seen, 2, "{r:?}");
    assert_eq!(r.groups_translated, 2, "{r:?}");
    assert_eq!(r.offsets_committed, 2, "{r:?}");
    assert_eq!(r.checkpoints_written, 2, "{r:?}");
    assert_eq!(r.pending, 0);

    // g-exact resumes at the record it would have read on the source.
    let t = committed(dst, "g-exact", "source.orders")
        .await
        .expect("committed");
    assert_eq!(t, 5);
    assert_eq!(value_at(src, "orders", 3).await, Some(Bytes::from("v3")));
    assert_eq!(
        value_at(dst, "source.orders", t).await,
        Some(Bytes::from("v3"))
    );
    // g-gap was at source offset 5, never replicated: it resumes at the next replicated
    // record (v7), skipping nothing it had not read.
    let t = committed(dst, "g-gap", "source.orders")
        .await
        .expect("committed");
    assert_eq!(
        value_at(dst, "source.orders", t).await,
        Some(Bytes::from("v7"))
    );

    // The checkpoints topic holds MM2's records, keyed by the target topic.
    let records = read_all(dst, "source.checkpoints.internal", 0).await;
    let mut got: Vec<Checkpoint> = records
        .iter()
        .map(|r| {
            Checkpoint::decode(
                r.key.as_deref().expect("key"),
                r.value.as_deref().expect("value"),
            )
            .expect("decodes")
        })
        .collect();
    got.sort_by(|a, b| a.group.cmp(&b.group));
    let want = |group: &str, upstream, downstream| Checkpoint {
        group: group.into(),
        topic: "source.orders".into(),
        partition: 0,
        upstream_offset: upstream,
        downstream_offset: downstream,
        metadata: String::new(),
    };
    assert_eq!(got, [want("g-exact", 3, 5), want("g-gap", 5, 7)]);
    // Byte for byte, as Checkpoint.java serializes it.
    let gap = records
        .iter()
        .find(|r| {
            r.key
                .as_deref()
                .is_some_and(|k| k.windows(5).any(|w| w == b"g-gap"))
        })
        .expect("g-gap record");
    assert_eq!(
        gap.key.as_deref(),
        Some(&b"\x00\x05g-gap\x00\x0dsource.orders\x00\x00\x00\x00"[..])
    );
    assert_eq!(
        gap.value.as_deref(),
        Some(
            &b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00"[..]
        )
    );
    let text = metrics.render();
    assert!(
        text.contains("strait_checkpoint_records_written_total{flow=\"source-to-target\"} 2"),
        "{text}"
    );
    assert!(
        text.contains(
            "strait_group_offsets_committed_total{flow=\"source-to-target\",group=\"g-exact\"} 1"
        ),
        "{text}"
    );

    // Nothing changed: nothing is rewritten.
    let r = sync.sync_once().await.expect("sync");
    assert_eq!(
        (r.offsets_committed, r.checkpoints_written),
        (0, 0),
        "{r:?}"
    );
}

#[tokio::test]
async fn active_groups_and_further_target_offsets_are_left_alone() {
    let pair = Pair::start().await;
    let maps = Arc::new(Registry::new());
    let _w = replicated(&pair, &maps).await;
    let (src, dst) = (&pair.source, &pair.target);
    commit(src, "g-active", "orders", 4).await;
    commit(src, "g-ahead", "orders", 2).await;
    // g-ahead already consumed further on the target.
    commit(dst, "g-ahead", "source.orders", 9).await;
    // g-active has a live member on the target.
    let join = dst
        .join_group(
            JoinGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g-active")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(3_000)
                .with_protocol_type(StrBytes::from_static_str("consumer"))
                .with_protocols(vec![
                    JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str("range"))
                        .with_metadata(Bytes::from_static(b"")),
                ]),
        )
        .await
        .expect("join");
    let described = dst.describe_groups(&["g-active"]).await.expect("describe");
    assert_eq!(described[0].members.len(), 1, "the member is in the group");

    let mut sync = GroupSync::new(&flow(&pair), src.clone(), dst.clone(), maps, Metrics::new());
    let r = sync.sync_once().await.expect("sync");
    assert_eq!(r.skipped_active, 1, "{r:?}");
    assert_eq!(r.skipped_behind, 1, "{r:?}");
    assert_eq!(r.offsets_committed, 0, "{r:?}");
    assert_eq!(committed(dst, "g-active", "source.orders").await, None);
    assert_eq!(
        committed(dst, "g-ahead", "source.orders").await,
        Some(9),
        "never backwards"
    );
    assert_eq!(
        r.checkpoints_written, 2,
        "checkpoints are written for every group"
    );
    dst.leave_group("g-active", &[join.member_id.as_str()])
        .await
        .expect("leave");
}

#[tokio::test]
async fn positions_past_the_replicated_end_are_pending_until_replication_reaches_them() {
    let pair = Pair::start().await;
    let maps = Arc::new(Registry::new());
    let (src, dst) = (&pair.source, &pair.target);
    create(src, "late", 1, &[]).await;
    create(dst, "source.late", 1, &[]).await;
    produce(src, "late", &(0..6).map(v).collect::<Vec<_>>()).await;
    produce(dst, "source.late", &(0..3).map(v).collect::<Vec<_>>()).await;
    let mut w = maps
        .register("late", 0, OffsetMap::new())
        .expect("register");
    w.append_dense(0, 3, 0).expect("append");
    commit(src, "g-late", "late", 5).await;

    let mut sync = GroupSync::new(
        &flow(&pair),
        src.clone(),
        dst.clone(),
        maps.clone(),
        Metrics::new(),
    );
    let r = sync.sync_once().await.expect("sync");
    assert_eq!(
        (r.pending, r.offsets_committed, r.checkpoints_written),
        (1, 0, 0),
        "{r:?}"
    );
    assert_eq!(
        sync.pending()
            .get(&("g-late".to_string(), "late".to_string(), 0)),
        Some(&5)
    );
    assert_eq!(
        committed(dst, "g-late", "source.late").await,
        None,
        "not rounded"
    );

    // Replication catches up.
    produce(dst, "source.late", &(3..6).map(v).collect::<Vec<_>>()).await;
    w.append_dense(3, 3, 3).expect("append");
    let r = sync.sync_once().await.expect("sync");
    assert_eq!((r.pending, r.offsets_committed), (0, 1), "{r:?}");
    let t = committed(dst, "g-late", "source.late")
        .await
        .expect("committed");
    assert_eq!(
        value_at(dst, "source.late", t).await,
        Some(Bytes::from("v5"))
    );
    assert_eq!(value_at(src, "late", 5).await, Some(Bytes::from("v5")));
}

fn reverse_flow(pair: &Pair) -> Flow {
    pair.flow("[flows.sync]\ngroup_offsets = false\nreverse_group_offsets = true")
}

/// Reverse sync: a group consuming the replicated topic on the target gets the exact
/// source position of its target commit on the source (the record after the last one it
/// read), a MM2 checkpoint on the source, and nothing is moved backwards, past the
/// replicated range, or while the group is active on the source.
#[tokio::test]
async fn reverse_sync_commits_target_positions_back_on_the_source_exactly() {
    let pair = Pair::start().await;
    let maps = Arc::new(Registry::new());
    let _w = replicated(&pair, &maps).await;
    let (src, dst) = (&pair.source, &pair.target);
    let mut sync = strait_mirror::groups::ReverseSync::new(
        &reverse_flow(&pair),
        src.clone(),
        dst.clone(),
        Arc::clone(&maps),
        strait_mirror::groups::provenance::Provenance::shared(),
    );
    // The first round finds nothing: what is committed on the target from here on was
    // committed by consumers there (positions found at a start wait until they move).
    let r = sync.sync_once().await.expect("reverse sync");
    assert_eq!(r.groups_seen, 0, "{r:?}");
    // g-read has read v0..v3 and v7 on the target (next: target offset 8 = v8).
    commit(dst, "g-read", "source.orders", 8).await;
    // g-back already went further on the source.
    commit(dst, "g-back", "source.orders", 4).await;
    commit(src, "g-back", "orders", 9).await;
    // g-past read two records produced on the target after the replicated range.
    produce(
        dst,
        "source.orders",
        &["target-only-1".into(), "target-only-2".into()],
    )
    .await;
    commit(dst, "g-past", "source.orders", 12).await;

    let r = sync.sync_once().await.expect("reverse sync");
    assert_eq!(r.groups_seen, 3, "{r:?}");
    assert_eq!(r.committed, 1, "{r:?}");
    assert_eq!(r.left, 2, "{r:?}");
    let back = committed(src, "g-read", "orders").await.expect("committed");
    assert_eq!(back, 8, "source offset of v8");
    assert_eq!(
        value_at(src, "orders", back).await,
        value_at(dst, "source.orders", 8).await,
        "the same record on both sides"
    );
    assert_eq!(
        committed(src, "g-back", "orders").await,
        Some(9),
        "never backwards"
    );
    assert_eq!(
        committed(src, "g-past", "orders").await,
        None,
        "no invented offset"
    );
    // The MM2 checkpoint on the source: upstream = target offset, downstream = source.
    let records = read_all(src, "target.checkpoints.internal", 0).await;
    let checkpoints: Vec<Checkpoint> = records
        .iter()
        .map(|r| {
            Checkpoint::decode(
                r.key.as_deref().expect("key"),
                r.value.as_deref().expect("value"),
            )
            .expect("decode")
        })
        .collect();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert_eq!(
        (
            checkpoints[0].group.as_str(),
            checkpoints[0].topic.as_str(),
            checkpoints[0].upstream_offset,
            checkpoints[0].downstream_offset
        ),
        ("g-read", "orders", 8, 8)
    );
    // Again: already there, nothing more committed.
    let r = sync.sync_once().await.expect("reverse sync");
    assert_eq!(r.committed, 0, "{r:?}");
}

/// Forward and reverse sync on one group: a position forward sync wrote on the target is
/// never sent back to the source, so a source group reset backwards (an operator's
/// `kafka-consumer-groups --reset-offsets`) is not undone; forward sync follows the reset
/// over its own position. A position found on the target at start waits until it moves.
#[tokio::test]
async fn forward_and_reverse_sync_on_one_group_never_undo_a_source_reset() {
    let pair = Pair::start().await;
    let maps = Arc::new(Registry::new());
    let _w = replicated(&pair, &maps).await;
    let (src, dst) = (&pair.source, &pair.target);
    let flow = pair.flow("[flows.sync]\ngroup_offsets = true\nreverse_group_offsets = true");
    let mut forward = GroupSync::new(
        &flow,
        src.clone(),
        dst.clone(),
        maps.clone(),
        Metrics::new(),
    );
    let mut reverse = strait_mirror::groups::ReverseSync::new(
        &flow,
        src.clone(),
        dst.clone(),
        Arc::clone(&maps),
        forward.provenance(),
    );
    // A group found on the target at start (provenance unknown): left alone.
    commit(dst, "g-old", "source.orders", 8).await;
    commit(src, "g-old", "orders", 2).await;
    let r = reverse.sync_once().await.expect("reverse sync");
    assert_eq!(r.committed, 0, "{r:?}");
    assert_eq!(committed(src, "g-old", "orders").await, Some(2));

    // The source group at its end; forward sync commits its translation on the target.
    commit(src, "g", "orders", 10).await;
    let r = forward.sync_once().await.expect("forward sync");
    assert!(r.offsets_committed >= 1, "{r:?}");
    assert_eq!(committed(dst, "g", "source.orders").await, Some(10));
    // The operator resets the source group back to 3 (re-process v3..v9).
    commit(src, "g", "orders", 3).await;
    let r = reverse.sync_once().await.expect("reverse sync");
    assert_eq!(
        r.committed, 0,
        "forward sync's own position is not sent back: {r:?}"
    );
    assert_eq!(
        committed(src, "g", "orders").await,
        Some(3),
        "the reset holds"
    );
    // Forward sync follows the reset over its own position: v3 is target offset 5.
    forward.sync_once().await.expect("forward sync");
    assert_eq!(committed(dst, "g", "source.orders").await, Some(5));
    assert_eq!(
        value_at(dst, "source.orders", 5).await,
        value_at(src, "orders", 3).await,
        "the same next record on both sides"
    );
    let r = reverse.sync_once().await.expect("reverse sync");
    assert_eq!(r.committed, 0, "{r:?}");
    assert_eq!(committed(src, "g", "orders").await, Some(3));

    // A consumer on the target reads on to v8 (target 8): that position is sent back.
    commit(dst, "g-old", "source.orders", 9).await;
    let r = reverse.sync_once().await.expect("reverse sync");
    assert_eq!(r.committed, 1, "{r:?}");
    assert_eq!(committed(src, "g-old", "orders").await, Some(9));
}
