//! `strait offsets translate -c FILE --group G [--topic T]`: a group's committed source
//! offsets beside their translation on the target and the target's current committed
//! offset, per topic-partition, with the translation's precision. Reads the flows' offset
//! maps from their state topics; writes nothing.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use strait_mirror::config::{Flow, TopicDecision, load};
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
pub fn translate_cmd(path: &Path, group: &str, topic: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = load(path)?;
    runtime()?.block_on(async {
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
            for r in &mut rows {
                let got = target
                    .offset_fetch(group, Some(&[(r.target_topic.as_str(), &[r.partition])]))
                    .await?;
                r.target_committed = got.first().map(|o| o.offset).filter(|o| *o >= 0);
            }
            rows.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
            print!("{}", render(flow, group, &rows));
        }
        Ok(ExitCode::SUCCESS)
    })
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
    }
}

fn render(flow: &Flow, group: &str, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flow {} ({} -> {}), group {group}",
        flow.name, flow.source, flow.target
    );
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
