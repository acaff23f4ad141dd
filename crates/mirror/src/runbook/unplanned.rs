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

use strait_client::Client;

use super::{Peek, Plan, Row, activity, peek, read_arriving, saved_maps};
use crate::config::Flow;
use crate::error::MirrorError;
use crate::groups::switch::{
    self as decide, Direction, GroupActivity, Options, PartitionInput, Verdict,
};
use crate::groups::{Checkpoint, checkpoints_topic};
use crate::topics::internal::{Committed, read_to_end};

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
        read_to_end(target, &topic, p, Committed::InOffsetOrder, err, |r| {
            let (Some(k), Some(v)) = (&r.key, &r.value) else {
                return Ok(());
            };
            // Another tool's record in the topic is not ours to judge.
            if let Ok(cp) = Checkpoint::decode(k, v)
                && cp.group == group
            {
                out.insert((cp.topic.clone(), cp.partition), (cp, r.timestamp));
            }
            Ok(())
        })
        .await?;
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
    gather(target, flow, group, topic, options)
        .await
        .map_err(|e| e.flow(&flow.name))
}

/// [`prepare`]'s work.
async fn gather(
    target: &Client,
    flow: &Flow,
    group: &str,
    topic: Option<&str>,
    options: Options,
) -> Result<Plan, MirrorError> {
    let maps = saved_maps(target, flow).await?;
    let synced = read_checkpoints(target, flow, group).await?;
    if synced.is_empty() {
        return Err(MirrorError::other(format!(
            "no synced position of group {group} in {} on the target: group sync writes them \
             while the flow runs with sync.checkpoints on (the default); without them a \
             failover needs the source",
            checkpoints_topic(&flow.source, flow.policy.separator())
        ))
        .cluster(&flow.target));
    }
    let mut rows = Vec::new();
    for ((target_topic, p), (cp, written)) in synced {
        let found = maps
            .iter()
            .find(|((_, t, q), _)| *t == target_topic && *q == p);
        let from_topic = found.map_or_else(|| target_topic.clone(), |((s, _, _), _)| s.clone());
        if topic.is_some_and(|t| t != from_topic && t != target_topic) {
            continue;
        }
        let translation = found.map(|(_, m)| m.translate(cp.upstream_offset.max(0) as u64));
        let mut input = PartitionInput {
            from_topic,
            to_topic: target_topic,
            partition: p,
            from_offset: cp.upstream_offset,
            translation,
            to_offset: None,
            to_log_start: None,
        };
        read_arriving(target, group, &mut input)
            .await
            .map_err(|e| e.cluster(&flow.target))?;
        rows.push((input, written));
    }
    // The source cannot be asked: the operator declared it gone.
    let leaving = GroupActivity::NotChecked;
    let arriving = activity(target, group).await;
    let blocker = decide::blocker(&leaving, &arriving, options);
    let out = decide_rows(target, rows, options).await;
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

/// Each partition's verdict, with the record a commit would point the group at on the
/// target; `written`: when its checkpoint was written.
async fn decide_rows(
    target: &Client,
    rows: Vec<(PartitionInput, i64)>,
    options: Options,
) -> Vec<Row> {
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
    out
}
