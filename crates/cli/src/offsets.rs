//! `strait offsets translate -c FILE --group G [--topic T]`: a group's committed source
//! offsets beside their translation on the target and the target's current committed
//! offset, per topic-partition, with the translation's precision. Reads the flows' offset
//! maps from their state topics; writes nothing.
//!
//! `--replay ID` translates through the offset map of a replay instead (`strait replay`
//! keeps one per partition in the flow's state topic): the group's committed offsets on
//! the replayed source topic, against the replay's target topic. Positions inside the
//! replayed range translate exactly; a position before it goes to the range's first
//! record, one after it is reported as outside the replay.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};
use strait_client::CommittedOffset;
use strait_mirror::config::{TopicDecision, load};
use strait_mirror::replay;
use strait_mirror::state::load_maps;
use strait_offsets::{Precision, Translation};

use crate::plan::{clients, runtime};

/// One row of the table.
struct Row {
    topic: String,
    partition: i32,
    source: i64,
    target_topic: String,
    translated: Option<u64>,
    precision: String,
    target_committed: Option<i64>,
}

/// Runs `strait offsets translate`.
pub fn translate_cmd(
    path: &Path,
    group: &str,
    topic: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
        let mut tables = Vec::new();
        for flow in config.enabled_flows() {
            let (source, target) = clients(&config, flow).await?;
            let committed = source.offset_fetch(group, None).await?;
            let maps = load_maps(&target, flow).await?;
            let mut rows = Vec::new();
            for c in committed.into_iter().filter(|c| c.offset >= 0) {
                if topic.is_some_and(|t| t != c.topic) {
                    continue;
                }
                let TopicDecision::Replicate { target_topic } = flow.topic_decision(&c.topic)
                else {
                    continue;
                };
                let translation = u64::try_from(c.offset)
                    .ok()
                    .and_then(|pos| maps.reader(&c.topic, c.partition).map(|r| r.translate(pos)));
                rows.push(Row {
                    translated: translation.and_then(|t| t.offset()),
                    precision: precision(translation),
                    topic: c.topic,
                    partition: c.partition,
                    source: c.offset,
                    target_topic,
                    target_committed: None,
                });
            }
            fill_target_committed(&target, group, &mut rows).await?;
            let title = format!(
                "flow {} ({} -> {}), group {group}",
                flow.name, flow.source, flow.target
            );
            if json {
                tables.push(table_json(&title, &rows));
            } else {
                print!("{}", render(&title, &rows));
            }
        }
        if json {
            println!("{}", json!({ "group": group, "tables": tables }));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Runs `strait offsets translate --replay ID`.
pub fn translate_replay_cmd(
    path: &Path,
    group: &str,
    topic: Option<&str>,
    id: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
        for flow in config.enabled_flows() {
            let (source, target) = clients(&config, flow).await?;
            let Some(loaded) = replay::load(&target, flow, id).await? else {
                continue;
            };
            let spec = &loaded.spec;
            if topic.is_some_and(|t| t != spec.source_topic && t != spec.target_topic) {
                anyhow::bail!(
                    "replay {id} copied {} to {}, not topic {}",
                    spec.source_topic,
                    spec.target_topic,
                    topic.unwrap_or_default()
                );
            }
            let committed = source.offset_fetch(group, None).await?;
            let mut rows = replay_rows(committed, &loaded);
            fill_target_committed(&target, group, &mut rows).await?;
            let title = format!(
                "replay {id} (run {}{}) on flow {}: {} -> {}, group {group}",
                loaded.run,
                if loaded.complete {
                    ""
                } else {
                    ", not finished"
                },
                flow.name,
                spec.source_topic,
                spec.target_topic
            );
            if json {
                let table = table_json(&title, &rows);
                println!(
                    "{}",
                    json!({ "group": group, "replay": id, "tables": [table] })
                );
            } else {
                print!("{}", render(&title, &rows));
            }
            return Ok(ExitCode::SUCCESS);
        }
        anyhow::bail!("no replay {id} in the state topic of any enabled flow")
    })
}

/// The rows of a replay's translation: each of the group's committed offsets on the
/// replay's source topic, through the replay's map.
fn replay_rows(committed: Vec<CommittedOffset>, loaded: &replay::Loaded) -> Vec<Row> {
    let spec = &loaded.spec;
    let mut rows = Vec::new();
    for c in committed
        .into_iter()
        .filter(|c| c.offset >= 0 && c.topic == spec.source_topic)
    {
        let part = loaded.partitions.get(&c.partition);
        let translation = u64::try_from(c.offset)
            .ok()
            .and_then(|pos| part.map(|p| p.map.translate(pos)));
        rows.push(Row {
            translated: translation.and_then(|t| t.offset()),
            precision: replay_precision(translation, part, c.offset, loaded.complete),
            topic: c.topic,
            partition: c.partition,
            source: c.offset,
            target_topic: spec.target_topic.clone(),
            target_committed: None,
        });
    }
    rows
}

/// The group's committed offsets on the target topics of `rows`; sorts the rows.
async fn fill_target_committed(
    target: &strait_client::Client,
    group: &str,
    rows: &mut [Row],
) -> anyhow::Result<()> {
    for r in rows.iter_mut() {
        let got = target
            .offset_fetch(group, Some(&[(r.target_topic.as_str(), &[r.partition])]))
            .await?;
        r.target_committed = got.first().map(|o| o.offset).filter(|o| *o >= 0);
    }
    rows.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(())
}

/// What a translation through a replay map means.
fn replay_precision(
    t: Option<Translation>,
    part: Option<&replay::LoadedPartition>,
    position: i64,
    complete: bool,
) -> String {
    let Some(part) = part else {
        return "the replay has no map for this partition".to_owned();
    };
    match t {
        Some(Translation::Mapped { .. }) if position < part.start => format!(
            "before the replayed range (source offsets {}..{}): its first record",
            part.start, part.end
        ),
        Some(Translation::NotYetReplicated { replicated_end, .. }) => {
            if complete || replicated_end as i64 >= part.end {
                format!(
                    "after the replayed range (source offsets {}..{})",
                    part.start, part.end
                )
            } else {
                format!(
                    "not copied yet: the replay was interrupted at source offset \
                     {replicated_end} (it resumes when run again)"
                )
            }
        }
        other => precision(other),
    }
}

fn precision(t: Option<Translation>) -> String {
    match t {
        None => "no offset map (partition not replicated yet)".to_owned(),
        Some(Translation::Mapped {
            precision: Precision::Exact,
            ..
        }) => "exact".to_owned(),
        Some(Translation::Mapped {
            precision: Precision::RoundedDown { at_most },
            ..
        }) => {
            format!("rounded down (re-reads at most {at_most})")
        }
        Some(Translation::NotYetReplicated { replicated_end, .. }) => {
            format!("not yet replicated (replicated up to source offset {replicated_end})")
        }
        Some(Translation::Truncated { side, log_start }) => {
            format!("records gone on the {side:?} side (log start {log_start})")
        }
        Some(Translation::BeforeReplication {
            replication_start, ..
        }) => {
            format!(
                "not exact: before where replication started ({replication_start}); the \
                 records up to it were never replicated"
            )
        }
    }
}

/// A table as JSON: the same facts as [`render`], `null` where the text shows `-`.
fn table_json(title: &str, rows: &[Row]) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "topic": r.topic,
                "partition": r.partition,
                "source": r.source,
                "target_topic": r.target_topic,
                "translated": r.translated,
                "target_committed": r.target_committed,
                "precision": r.precision,
            })
        })
        .collect();
    json!({ "title": title, "rows": rows })
}

fn render(title: &str, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    if rows.is_empty() {
        let _ = writeln!(out, "  no committed offsets on replicated topics");
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<24} {:>9} {:>12}  {:<28} {:>12} {:>12}  PRECISION",
        "TOPIC", "PARTITION", "SOURCE", "TARGET TOPIC", "TRANSLATED", "TARGET NOW"
    );
    let dash = |o: Option<String>| o.unwrap_or_else(|| "-".to_owned());
    for r in rows {
        let _ = writeln!(
            out,
            "  {:<24} {:>9} {:>12}  {:<28} {:>12} {:>12}  {}",
            r.topic,
            r.partition,
            r.source,
            r.target_topic,
            dash(r.translated.map(|o| o.to_string())),
            dash(r.target_committed.map(|o| o.to_string())),
            r.precision
        );
    }
    out
}
