//! The consumer-group half of `strait verify`: each group's committed source positions,
//! translated through the flow's maps, judged against its target commits
//! ([`super::judge::judge`]) and, where they agree, proven by the records there.

use std::collections::BTreeMap;

use strait_client::Client;
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
    let groups: Vec<String> = if opts.groups.is_empty() {
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
    };
    let mut out = Vec::new();
    for group in groups {
        let fetch = |c: &Client, cluster: &str| {
            let (c, cluster, group) = (c.clone(), cluster.to_owned(), group.clone());
            async move {
                c.offset_fetch(&group, None).await.map_err(|e| {
                    MirrorError::kafka(format!("group {group}: committed offsets"), e)
                        .cluster(cluster)
                })
            }
        };
        let committed = fetch(source, &flow.source).await?;
        let on_target: BTreeMap<(String, i32), i64> = fetch(target, &flow.target)
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
                    let read = |client: &Client, topic: &str, at: i64, cluster: &str| {
                        let (client, topic, cluster) =
                            (client.clone(), topic.to_owned(), cluster.to_owned());
                        let p = c.partition;
                        async move {
                            probe::first_record_at(&client, &topic, p, at)
                                .await
                                .map(|r| {
                                    r.map(|r| {
                                        (u64::try_from(r.offset).unwrap_or(0), Content::of(&r))
                                    })
                                })
                                .map_err(|e| {
                                    MirrorError::kafka("reading a group's record", e)
                                        .cluster(cluster)
                                        .topic(topic)
                                        .partition(p)
                                })
                        }
                    };
                    let s = read(source, &c.topic, c.offset, &flow.source).await?;
                    let at = i64::try_from(t).unwrap_or(i64::MAX);
                    let d = read(target, target_topic, at, &flow.target).await?;
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
