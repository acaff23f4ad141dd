//! `strait verify -c FILE [--flow F] [--topic T] [--group G]... [--sample N] [--json]`:
//! the parity check (`strait_mirror::verify`), printed as a table or JSON. Exits 0 when
//! everything matches, 5 when nothing differs but replication or group sync has not
//! caught up, 1 when something differs.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use strait_mirror::config::{Config, Flow, load};
use strait_mirror::progress::Progress;
use strait_mirror::verify::compare::Finding;
use strait_mirror::verify::judge::{GroupVerdict, Outcome};
use strait_mirror::verify::{FlowReport, GroupPosition, Options, PartitionReport, verify_flow};

use crate::cli::VerifyArgs;
use crate::exit::Exit;
use crate::plan::clients;
use crate::progress::{Bar, Unit};

/// Runs `strait verify`.
pub fn verify_cmd(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let config = load(&args.config.path)?;
    let flows: Vec<_> = config
        .enabled_flows()
        .filter(|f| args.flow.as_ref().is_none_or(|n| *n == f.name))
        .collect();
    if let Some(name) = &args.flow
        && flows.is_empty()
    {
        return Err(strait_mirror::MirrorError::config(format!(
            "--flow {name}: no enabled flow has that name"
        ))
        .into());
    }
    let opts = Options {
        topic: args.topic.clone(),
        groups: args.group.clone(),
        sample: args.sample,
        parallel: args.parallel.max(1),
        bytes_per_sec: (args.max_rate > 0).then(|| args.max_rate.saturating_mul(1 << 20)),
        progress: None,
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(opts.parallel);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let mut reports = Vec::new();
        for flow in flows {
            let report = verify_one(&config, flow, &opts).await?;
            if !args.json {
                print!("{}", render(&report));
            }
            reports.push(report);
        }
        let outcome = reports
            .iter()
            .map(|r| r.outcome)
            .max()
            .unwrap_or(Outcome::Matches);
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "outcome": outcome,
                    "flows": reports,
                }))?
            );
        }
        Ok(match outcome {
            Outcome::Matches => Exit::Ok,
            Outcome::NotYetReplicated => Exit::NotYetReplicated,
            Outcome::Differs => Exit::Failure,
        }
        .into())
    })
}

/// Verifies one flow, with a progress bar while it runs.
async fn verify_one(config: &Config, flow: &Flow, opts: &Options) -> anyhow::Result<FlowReport> {
    let (source, target) = clients(config, flow).await?;
    let progress = Arc::new(Progress::default());
    let bar = {
        let p = progress.clone();
        Bar::start(
            &format!("verifying flow {}", flow.name),
            Unit::Offsets,
            move || p.get(),
        )
    };
    let opts = Options {
        progress: Some(progress),
        ..opts.clone()
    };
    let report = verify_flow(&source, &target, flow, &opts).await;
    bar.finish();
    Ok(report?)
}

fn said(o: Outcome) -> &'static str {
    match o {
        Outcome::Matches => "matches",
        Outcome::NotYetReplicated => "not yet replicated",
        Outcome::Differs => "DIFFERS",
    }
}

fn range(r: &Option<std::ops::Range<u64>>) -> String {
    r.as_ref()
        .map_or_else(|| "-".into(), |r| format!("{}..{}", r.start, r.end))
}

/// The report as text.
fn render(r: &FlowReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flow {} ({} -> {}): {}",
        r.flow,
        r.source,
        r.target,
        said(r.outcome)
    );
    if r.partitions.is_empty() {
        let _ = writeln!(out, "  no source topic is selected by this flow");
    } else {
        let _ = writeln!(
            out,
            "  {:<24} {:>4} {:>17} {:>17} {:>9} {:>7} {:>7} {:>7} {:>7} {:>8}  RESULT",
            "TOPIC",
            "PART",
            "SOURCE RANGE",
            "TARGET RANGE",
            "MATCHED",
            "MISSING",
            "DUPS",
            "FOREIGN",
            "CHANGED",
            "LAG"
        );
    }
    for p in &r.partitions {
        partition(&mut out, p);
    }
    match &r.groups {
        None => {
            let _ = writeln!(
                out,
                "  groups: not checked (this flow does not sync group offsets; name one with --group)"
            );
        }
        Some(g) if g.is_empty() => {
            let _ = writeln!(out, "  groups: none with committed offsets on these topics");
        }
        Some(g) => {
            let _ = writeln!(
                out,
                "  {:<20} {:<24} {:>4} {:>12}  VERDICT",
                "GROUP", "TOPIC", "PART", "SOURCE"
            );
            for x in g {
                group(&mut out, x);
            }
        }
    }
    out
}

fn partition(out: &mut String, p: &PartitionReport) {
    let t = &p.tally;
    let _ = writeln!(
        out,
        "  {:<24} {:>4} {:>17} {:>17} {:>9} {:>7} {:>7} {:>7} {:>7} {:>8}  {}{}",
        p.topic,
        p.partition,
        range(&p.compared_source),
        range(&p.compared_target),
        t.matched,
        t.missing,
        t.duplicate,
        t.foreign,
        t.changed + t.coarse_differs,
        p.lag.map_or_else(|| "-".into(), |l| l.to_string()),
        said(p.outcome),
        if p.sampled { " (sampled)" } else { "" },
    );
    for f in &p.findings {
        let _ = writeln!(out, "      {}", finding(f));
    }
    let named = p.findings.len() as u64;
    let all = t.missing + t.duplicate + t.foreign + t.changed;
    if all > named {
        let _ = writeln!(out, "      … and {} more", all - named);
    }
    if t.compacted > 0 {
        let _ = writeln!(
            out,
            "      {} record(s) on one side only, explained by compaction",
            t.compacted
        );
    }
    if t.unchecked > 0 {
        let _ = writeln!(out, "      {} record(s) could not be checked", t.unchecked);
    }
    if p.skipped > 0 {
        let _ = writeln!(
            out,
            "      {} record(s) of coarse history not compared: retention removed part of it",
            p.skipped
        );
    }
    if p.unrecorded > 0 {
        let _ = writeln!(
            out,
            "      {} target record(s) past the map's end: written, not yet recorded",
            p.unrecorded
        );
    }
    for n in &p.notes {
        let _ = writeln!(out, "      note: {n}");
    }
}

fn finding(f: &Finding) -> String {
    match f {
        Finding::Missing {
            source,
            target: Some(t),
        } => format!("missing: source offset {source} is not at target offset {t}"),
        Finding::Missing {
            source,
            target: None,
        } => format!("missing: source offset {source} was never written to the target"),
        Finding::Duplicate { target, of_source } => {
            format!("duplicate: target offset {target} copies source offset {of_source} again")
        }
        Finding::Foreign { target } => {
            format!("foreign: target offset {target} holds a record the source does not")
        }
        Finding::Changed {
            source,
            target,
            fields,
            holds_source,
        } => {
            let names: Vec<String> = fields
                .iter()
                .map(|f| format!("{f:?}").to_lowercase())
                .collect();
            format!(
                "changed: source offset {source} -> target offset {target}: {} differ{}",
                names.join(", "),
                holds_source
                    .map(|s| format!(" (the target holds source offset {s})"))
                    .unwrap_or_default()
            )
        }
        Finding::CoarseDiffers {
            source,
            target,
            source_records,
            target_records,
        } => format!(
            "coarse history differs: source {}..{} ({source_records} records) vs target {}..{} \
             ({target_records} records)",
            source.start, source.end, target.start, target.end
        ),
    }
}

fn group(out: &mut String, g: &GroupPosition) {
    let verdict = match &g.verdict {
        GroupVerdict::Proven {
            target,
            record: Some(s),
        } => format!("proven: target {target} holds source record {s}"),
        GroupVerdict::Proven {
            target,
            record: None,
        } => format!("proven: target {target} is the end, as the source position is"),
        GroupVerdict::Rounded { target, at_most } => {
            format!("matches, rounded: target {target} re-reads at most {at_most} record(s)")
        }
        GroupVerdict::Behind {
            expected,
            committed,
        } => format!(
            "not yet synced: target should be {expected}, has {}",
            committed.map_or_else(|| "no commit".into(), |c| c.to_string())
        ),
        GroupVerdict::Ahead {
            expected,
            committed,
        } => format!(
            "WRONG: target has {committed}, the translation is {expected}: a consumer would \
             skip {} record(s)",
            committed - i64::try_from(*expected).unwrap_or(i64::MAX)
        ),
        GroupVerdict::ContentDiffers {
            target,
            source_record,
            target_record,
        } => format!(
            "WRONG: target {target} holds {} but the source position holds {}",
            target_record.map_or_else(|| "the end".into(), |o| format!("record {o}")),
            source_record.map_or_else(|| "the end".into(), |o| format!("record {o}")),
        ),
        GroupVerdict::NotYetReplicated { replicated_end } => {
            format!("not yet replicated (replicated up to {replicated_end})")
        }
        GroupVerdict::BeforeReplication { replication_start } => format!(
            "WRONG: before where replication started ({replication_start}): records never copied"
        ),
        GroupVerdict::Truncated => "WRONG: the records at the position are gone".into(),
        GroupVerdict::NoMap => "not yet replicated (no offset map)".into(),
    };
    let _ = writeln!(
        out,
        "  {:<20} {:<24} {:>4} {:>12}  {verdict}",
        g.group, g.topic, g.partition, g.source_offset
    );
}
