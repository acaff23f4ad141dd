//! The consumer-group half of `strait verify`: each group's committed source positions,
//! translated through the flow's maps, judged against its target commits
//! ([`super::judge::judge`]) and, where they agree, proven by the records there.

use std::collections::BTreeMap;

use strait_client::{Client, CommittedOffset};
use strait_offsets::Registry;

use super::GroupPosition;
use super::content::Content;
use super::judge::{self, Step};
use crate::config::Flow;
use crate::datapath::probe;
use crate::error::MirrorError;

/// The positions of the groups `opts` names, or of every group the flow syncs, on the
/// partitions of `topics` (source topic → target topic and partitions).
pub(super) async fn positions(
    source: &Client,
    target: &Client,
    flow: &Flow,
    maps: &Registry,
    topics: &BTreeMap<String, (String, Vec<i32>)>,
    opts: &super::Options,
) -> Result<Vec<GroupPosition>, MirrorError> {
    let groups = groups(source, flow, opts).await?;
    let mut out = Vec::new();
    for group in groups {
        let committed = committed_offsets(source, &flow.source, &group).await?;
        let on_target: BTreeMap<(String, i32), i64> =
            committed_offsets(target, &flow.target, &group)
                .await?
                .into_iter()
                .filter(|c| c.offset >= 0)
                .map(|c| ((c.topic, c.partition), c.offset))
                .collect();
        for c in committed.into_iter().filter(|c| c.offset >= 0) {
            let Some((target_topic, _)) = topics.get(&c.topic) else {
                continue;
            };
            let translation = maps
                .reader(&c.topic, c.partition)
                .map(|r| r.translate(u64::try_from(c.offset).unwrap_or(0)));
            let committed_there = on_target.get(&(target_topic.clone(), c.partition)).copied();
            let verdict = match judge::judge(translation, committed_there) {
                Step::Done(v) => v,
                Step::Prove { target: t } => {
                    let s =
                        record_at(source, &flow.source, &c.topic, c.partition, c.offset).await?;
                    let at = i64::try_from(t).unwrap_or(i64::MAX);
                    let d = record_at(target, &flow.target, target_topic, c.partition, at).await?;
                    judge::prove(t, s, d)
                }
            };
            out.push(GroupPosition {
                group: group.clone(),
                topic: c.topic,
                partition: c.partition,
                target_topic: target_topic.clone(),
                source_offset: c.offset,
                verdict,
            });
        }
    }
    out.sort_by(|a, b| (&a.group, &a.topic, a.partition).cmp(&(&b.group, &b.topic, b.partition)));
    Ok(out)
}

/// The groups `opts` names, else every group on the source that the flow syncs.
async fn groups(
    source: &Client,
    flow: &Flow,
    opts: &super::Options,
) -> Result<Vec<String>, MirrorError> {
    Ok(if opts.groups.is_empty() {
        source
            .list_groups()
            .await
            .map_err(|e| MirrorError::kafka("listing groups", e).cluster(&flow.source))?
            .into_iter()
            .map(|g| g.group_id)
            .filter(|g| flow.syncs_group(g))
            .collect()
    } else {
        opts.groups.clone()
    })
}

/// `group`'s committed offsets on `client` (the cluster named `cluster`).
async fn committed_offsets(
    client: &Client,
    cluster: &str,
    group: &str,
) -> Result<Vec<CommittedOffset>, MirrorError> {
    client.offset_fetch(group, None).await.map_err(|e| {
        MirrorError::kafka(format!("group {group}: committed offsets"), e).cluster(cluster)
    })
}

/// The first record at or after `at` in `topic`/`partition` on `client` (the cluster
/// named `cluster`): its offset and content, as a group's position is proven by.
async fn record_at(
    client: &Client,
    cluster: &str,
    topic: &str,
    partition: i32,
    at: i64,
) -> Result<Option<(u64, Content)>, MirrorError> {
    probe::first_record_at(client, topic, partition, at)
        .await
        .map(|r| r.map(|r| (u64::try_from(r.offset).unwrap_or(0), Content::of(&r))))
        .map_err(|e| {
            MirrorError::kafka("reading a group's record", e)
                .cluster(cluster)
                .topic(topic)
                .partition(partition)
        })
}
