//! `strait replay -c FILE --topic T --from TIME [--until TIME] [--to TOPIC] [--flow NAME]
//! [--execute] [--again] [--json]`: copy a time range of one source topic once to the
//! flow's target (`strait_mirror::replay`). A dry run by default: the plan (per partition
//! the source offset range and how it was found); `--execute` copies and prints, per
//! partition, the source range, the records copied and the target range.
//!
//! Exit codes ([`crate::exit`]): 0 done (or a dry run of a replay that can run); 4 refused
//! (already copied); 2 a command line or config that cannot be right (a time that does
//! not parse, `--from` not before `--until`, a topic the source does not have); 3 a
//! cluster unreachable; 1 any other failure (a resume that cannot be proven safe, a topic
//! in no flow).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde_json::{Value, json};
use strait_client::ProducerConfig;
use strait_mirror::config::{Config, Flow, TopicDecision, load};
use strait_mirror::progress::Progress;
use strait_mirror::replay::{self, Method, PartitionPlan, Prepared, RunDecision, Spec, Summary};

use crate::cli::ReplayArgs;
use crate::exit::Exit;
use crate::plan::{clients, runtime};
use crate::progress::{Bar, Unit};

/// Runs `strait replay`.
pub fn replay_cmd(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let config = load(&args.config.path)?;
    let flow = choose_flow(&config, &args.topic, args.flow.as_deref())?;
    let target_topic = match (&args.to, flow.topic_decision(&args.topic)) {
        (Some(to), _) => to.clone(),
        (None, TopicDecision::Replicate { target_topic }) => target_topic,
        (None, _) => not_replicated(&args.topic, flow)?,
    };
    let spec = match Spec::new(&args.topic, &target_topic, args.from, args.until) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("strait: {e}");
            return Ok(Exit::Usage.into());
        }
    };
    let producer_config = producer_config(&config, flow)?;
    runtime()?.block_on(async {
        let (source, target) = clients(&config, flow).await?;
        let prepared = replay::prepare(&source, &target, flow, spec, args.again).await?;
        let refused = matches!(prepared.decision, RunDecision::AlreadyDone { .. });
        let summary = if args.execute && !refused {
            let progress = Arc::new(Progress::default());
            let bar = {
                let p = progress.clone();
                Bar::start("copying", Unit::Offsets, move || p.get())
            };
            let copied = replay::execute(
                &source,
                &target,
                flow,
                &prepared,
                producer_config,
                &progress,
            )
            .await;
            bar.finish();
            Some(copied.with_context(|| format!("replay {} on flow {}", prepared.id, flow.name))?)
        } else {
            None
        };
        if args.json {
            println!("{}", render_json(&prepared, summary.as_ref()));
        } else {
            print!("{}", render(&prepared, summary.as_ref(), args.execute));
        }
        Ok(if refused {
            Exit::Refused.into()
        } else {
            ExitCode::SUCCESS
        })
    })
}

/// The flow named, or the one enabled flow that replicates `topic`.
fn choose_flow<'a>(
    config: &'a Config,
    topic: &str,
    name: Option<&str>,
) -> anyhow::Result<&'a Flow> {
    if let Some(name) = name {
        let flow = config
            .enabled_flows()
            .find(|f| f.name == name)
            .with_context(|| format!("no enabled flow named {name}"))?;
        if !matches!(flow.topic_decision(topic), TopicDecision::Replicate { .. }) {
            not_replicated(topic, flow)?;
        }
        return Ok(flow);
    }
    let replicating: Vec<&Flow> = config
        .enabled_flows()
        .filter(|f| matches!(f.topic_decision(topic), TopicDecision::Replicate { .. }))
        .collect();
    match replicating.as_slice() {
        [one] => Ok(one),
        [] => {
            let why: Vec<String> = config
                .enabled_flows()
                .map(|f| {
                    format!(
                        "flow {}: {}",
                        f.name,
                        decision_words(&f.topic_decision(topic))
                    )
                })
                .collect();
            anyhow::bail!(
                "topic {topic} is not replicated by any enabled flow ({}): a replay copies a \
                 topic of a flow",
                if why.is_empty() {
                    "there is none".to_owned()
                } else {
                    why.join("; ")
                }
            )
        }
        many => anyhow::bail!(
            "topic {topic} is replicated by several flows ({}): choose one with --flow",
            many.iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn not_replicated<T>(topic: &str, flow: &Flow) -> anyhow::Result<T> {
    anyhow::bail!(
        "topic {topic} is not replicated by flow {} ({}): a replay copies a topic of a flow",
        flow.name,
        decision_words(&flow.topic_decision(topic))
    )
}

fn decision_words(d: &TopicDecision) -> &'static str {
    match d {
        TopicDecision::Replicate { .. } => "replicated",
        TopicDecision::Filtered => "left out by its topic filter",
        TopicDecision::Cycle => "it came from the target cluster",
        TopicDecision::HeartbeatsDisabled => "heartbeats are not replicated",
        TopicDecision::StateTopic => "the flow's state topic",
    }
}

/// The producer settings of the flow's data path.
fn producer_config(config: &Config, flow: &Flow) -> anyhow::Result<ProducerConfig> {
    let target = config
        .cluster(&flow.target)
        .with_context(|| format!("cluster {} is not defined", flow.target))?;
    Ok(config.engine.producer_config(target))
}

fn show_time(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(ms) => {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        Err(_) => format!("timestamp {ms}"),
    }
}

fn method(m: Option<Method>) -> String {
    match m {
        None => "-".to_owned(),
        Some(Method::Broker) => "ListOffsets".to_owned(),
        Some(Method::Search { probes }) => format!("search ({probes} fetches)"),
    }
}

fn found_by(p: &PartitionPlan) -> String {
    if p.saved.is_some() {
        return "saved (resume)".to_owned();
    }
    match p.until_method {
        Some(u) => format!("{} / {}", method(p.from_method), method(Some(u))),
        None => format!("{} / end of log", method(p.from_method)),
    }
}

fn render(prepared: &Prepared, summary: Option<&Summary>, execute: bool) -> String {
    let mut out = String::new();
    let s = &prepared.spec;
    let run = match prepared.decision {
        RunDecision::Start { run } => format!("run {run}"),
        RunDecision::Resume { run } => format!("run {run}, resumed"),
        RunDecision::AlreadyDone { run } => format!("run {run} done"),
    };
    let _ = writeln!(
        out,
        "replay {} ({run}) on flow {}: {} -> {}",
        prepared.id, prepared.flow, s.source_topic, s.target_topic
    );
    let _ = writeln!(
        out,
        "  from {} until {}",
        show_time(s.from_ms),
        s.until_ms
            .map_or_else(|| "the end of the topic at the start".to_owned(), show_time)
    );
    if let RunDecision::AlreadyDone { run } = prepared.decision {
        let _ = writeln!(
            out,
            "refused: this range was already copied to {} (run {run}); nothing copied. \
             --again copies it once more (a new run; the target then holds it twice)",
            s.target_topic
        );
        return out;
    }
    if prepared.target_partitions.is_none() {
        let _ = writeln!(
            out,
            "  the target topic {} does not exist: --execute creates it with {} partitions",
            s.target_topic,
            prepared.partitions.len()
        );
    }
    match summary {
        None => plan_table(&mut out, prepared, execute),
        Some(sum) => copied_table(&mut out, sum),
    }
    out
}

/// The dry run's (or a run that copied nothing's) table: each partition's range and how
/// its ends were found.
fn plan_table(out: &mut String, prepared: &Prepared, execute: bool) {
    let _ = writeln!(
        out,
        "  {:>9}  {:>24}  {:>10}  FOUND BY",
        "PARTITION", "SOURCE OFFSETS", "RECORDS"
    );
    for p in &prepared.partitions {
        let _ = writeln!(
            out,
            "  {:>9}  {:>24}  {:>10}  {}",
            p.partition,
            format!("{}..{}", p.start, p.end),
            p.end - p.start,
            found_by(p)
        );
    }
    let _ = writeln!(
        out,
        "{}",
        if execute {
            "nothing copied"
        } else {
            "dry run: nothing copied; --execute copies the range"
        }
    );
}

/// An executed run's table: what each partition copied, and where it landed.
fn copied_table(out: &mut String, sum: &Summary) {
    let _ = writeln!(
        out,
        "  {:>9}  {:>24}  {:>10}  {:>24}",
        "PARTITION", "SOURCE OFFSETS", "COPIED", "TARGET OFFSETS"
    );
    let mut total = 0;
    for p in &sum.partitions {
        total += p.records;
        let target = p
            .target
            .map_or_else(|| "-".to_owned(), |(a, b)| format!("{a}..{b}"));
        let mut note = String::new();
        if p.was_done {
            note.push_str("  (done before)");
        }
        if p.already_there > 0 {
            let _ = write!(note, "  ({} found on the target)", p.already_there);
        }
        let _ = writeln!(
            out,
            "  {:>9}  {:>24}  {:>10}  {:>24}{note}",
            p.partition,
            format!("{}..{}", p.source_start, p.source_end),
            p.records,
            target
        );
    }
    let _ = writeln!(
        out,
        "copied {total} records; offsets translate with `strait offsets translate \
         --replay {}`",
        sum.id
    );
}

fn render_json(prepared: &Prepared, summary: Option<&Summary>) -> Value {
    let s = &prepared.spec;
    let (decision, run) = match prepared.decision {
        RunDecision::Start { run } => ("start", run),
        RunDecision::Resume { run } => ("resume", run),
        RunDecision::AlreadyDone { run } => ("already_done", run),
    };
    let method_json = |m: Option<Method>| match m {
        None => Value::Null,
        Some(Method::Broker) => json!({ "method": "list_offsets" }),
        Some(Method::Search { probes }) => json!({ "method": "search", "fetches": probes }),
    };
    let partitions: Vec<Value> = prepared
        .partitions
        .iter()
        .map(|p| {
            let done =
                summary.and_then(|sum| sum.partitions.iter().find(|x| x.partition == p.partition));
            json!({
                "partition": p.partition,
                "source_start": p.start,
                "source_end": p.end,
                "from_found_by": method_json(p.from_method),
                "until_found_by": method_json(p.until_method),
                "resumed": p.saved.is_some(),
                "records_copied": done.map(|d| d.records),
                "records_found_on_target": done.map(|d| d.already_there),
                "target_start": done.and_then(|d| d.target.map(|t| t.0)),
                "target_end": done.and_then(|d| d.target.map(|t| t.1)),
            })
        })
        .collect();
    json!({
        "replay": prepared.id,
        "run": run,
        "decision": decision,
        "flow": prepared.flow,
        "source_topic": s.source_topic,
        "target_topic": s.target_topic,
        "from": show_time(s.from_ms),
        "until": s.until_ms.map(show_time),
        "executed": summary.is_some(),
        "target_created": summary.map(|sum| sum.created_target),
        "generated_at": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        "partitions": partitions,
    })
}
