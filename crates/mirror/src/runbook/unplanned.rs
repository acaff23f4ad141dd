//! Failover when the source cluster is gone (`strait failover --source-unavailable`): the
//! disaster a DR site exists for. Nothing is read from the source. The group's positions
//! are the last ones Strait synced, as its checkpoints on the target hold them
//! (`<source alias>.checkpoints.internal`, written by group sync with `sync.checkpoints`),
//! and they are translated through the maps in the target's state topic, under the same
//! rules as a planned failover ([`super::decide`]).
//!
//! Each row carries when its checkpoint was written, so the plan shows how old each
//! position is: the group's recovery point. Records the group consumed on the source
//! after that are read again on the target (never skipped: a checkpoint only ever lags
//! the group).

use std::collections::BTreeMap;
use std::time::Duration;

use strait_client::{Client, FetchOptions, IsolationLevel, OffsetSpec, PartitionConsumer};
use strait_offsets::OffsetMap;

use super::decide::{self, Direction, GroupActivity, Options, PartitionInput, Verdict};
use super::{Peek, Plan, Row, activity, peek};
use crate::config::Flow;
use crate::error::MirrorError;
use crate::groups::{Checkpoint, checkpoints_topic};
use crate::state::{decode_map, read_state};

/// The last checkpoint of each partition, by (target topic, partition), with the time
/// it was written (ms since the epoch).
pub type Synced = BTreeMap<(String, i32), (Checkpoint, i64)>;

/// Reads the flow's checkpoints topic on `target` to its end and keeps `group`'s latest
/// checkpoint per partition. A missing topic is no checkpoint.
pub async fn read_checkpoints(
    target: &Client,
    flow: &Flow,
    group: &str,
) -> Result<Synced, MirrorError> {
    let topic = checkpoints_topic(&flow.source, flow.policy.separator());
    let err = |what: &str, e| {
        MirrorError::kafka(format!("checkpoints topic {topic}: {what}"), e)
            .flow(&flow.name)
            .cluster(&flow.target)
    };
    let meta = target
        .metadata(Some(&[topic.as_str()]))
        .await
        .map_err(|e| err("metadata", e))?;
    let Some(t) = meta.topics.get(&topic) else {
        return Ok(Synced::new());
    };
    let partitions: Vec<i32> = t.partitions.keys().copied().collect();
    let mut out = Synced::new();
    for p in partitions {
        let start = target
            .list_offsets(
                &topic,
                &[(p, OffsetSpec::Earliest)],
                IsolationLevel::ReadUncommitted,
            )
            .await
            .map_err(|e| err("list offsets", e))?
            .first()
            .map_or(0, |o| o.offset.max(0));
        let opts = FetchOptions {
            max_wait: Duration::from_millis(50),
            ..FetchOptions::default()
        };
        let mut c = PartitionConsumer::new(target.clone(), &topic, p, start)
            .with_options(opts)
            .resolving_markers();
        loop {
            for r in c.poll().await.map_err(|e| err("read", e))? {
                let (Some(k), Some(v)) = (&r.key, &r.value) else {
                    continue;
                };
                // Another tool's record in the topic is not ours to judge.
                let Ok(cp) = Checkpoint::decode(k, v) else {
                    continue;
                };
                if cp.group == group {
                    out.insert((cp.topic.clone(), cp.partition), (cp, r.timestamp));
                }
            }
            if c.high_watermark() >= 0 && c.position() >= c.high_watermark() {
                break;
            }
        }
    }
    Ok(out)
}

/// Gathers an unplanned failover plan for `group` from the `target` alone (only `topic`,
/// when given, matched against the source or target name).
pub async fn prepare(
    target: &Client,
    flow: &Flow,
    group: &str,
    topic: Option<&str>,
    options: Options,
) -> Result<Plan, MirrorError> {
    let saved = read_state(target, flow).await?;
    let mut maps: BTreeMap<(String, i32), (String, OffsetMap)> = BTreeMap::new();
    for ((source_topic, p), state) in &saved {
        let map = decode_map(state).map_err(|e| e.flow(&flow.name))?;
        maps.insert(
            (state.target_topic.clone(), *p),
            (source_topic.clone(), map),
        );
    }
    let synced = read_checkpoints(target, flow, group).await?;
    if synced.is_empty() {
        return Err(MirrorError::other(format!(
            "no synced position of group {group} in {} on the target: group sync writes them \
             while the flow runs with sync.checkpoints on (the default); without them a \
             failover needs the source",
            checkpoints_topic(&flow.source, flow.policy.separator())
        ))
        .flow(&flow.name)
        .cluster(&flow.target));
    }
    let mut rows = Vec::new();
    for ((target_topic, p), (cp, written)) in synced {
        let source_topic = maps.get(&(target_topic.clone(), p)).map(|(s, _)| s.clone());
        let from_topic = source_topic.clone().unwrap_or_else(|| target_topic.clone());
        if topic.is_some_and(|t| t != from_topic && t != target_topic) {
            continue;
        }
        let translation = maps
            .get(&(target_topic.clone(), p))
            .map(|(_, m)| m.translate(cp.upstream_offset.max(0) as u64));
        let asked = [p];
        let to_offset = target
            .offset_fetch(group, Some(&[(target_topic.as_str(), &asked)]))
            .await
            .map_err(|e| MirrorError::kafka("offset fetch", e).flow(&flow.name))?
            .first()
            .map(|o| o.offset)
            .filter(|o| *o >= 0);
        let to_log_start = target
            .list_offsets(
                &target_topic,
                &[(p, OffsetSpec::Earliest)],
                IsolationLevel::ReadUncommitted,
            )
            .await
            .map_err(|e| MirrorError::kafka("list offsets", e).flow(&flow.name))?
            .first()
            .map(|o| o.offset);
        rows.push((
            PartitionInput {
                from_topic,
                to_topic: target_topic,
                partition: p,
                from_offset: cp.upstream_offset,
                translation,
                to_offset,
                to_log_start,
            },
            written,
        ));
    }
    // The source cannot be asked: the operator declared it gone.
    let leaving = GroupActivity::NotChecked;
    let arriving = activity(target, group).await;
    let blocker = decide::blocker(&leaving, &arriving, options);
    let mut out = Vec::new();
    for (input, written) in rows {
        let verdict = decide::decide(Direction::Failover, &input, options);
        let to_record = match verdict {
            Verdict::Commit { offset, .. } | Verdict::AlreadyThere { offset } => {
                Some(peek(target, &input.to_topic, input.partition, offset as i64).await)
            }
            Verdict::Refused { .. } => None,
        };
        out.push(Row {
            input,
            verdict,
            from_record: Peek::NotRead,
            to_record,
            synced_at: Some(written),
        });
    }
    Ok(Plan {
        direction: Direction::Failover,
        flow: flow.name.clone(),
        from_cluster: flow.source.clone(),
        to_cluster: flow.target.clone(),
        group: group.to_owned(),
        leaving,
        arriving,
        blocker,
        rows: out,
    })
}
