//! `strait config import-mm2` and `strait config validate`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use strait_mirror::config::load::OFFLINE_PLACEHOLDER;
use strait_mirror::config::mm2::{ImportOptions, MirrorMaker1, UnmappedKey, import_mm2_with};
use strait_mirror::config::model::NamingPolicy;
use strait_mirror::config::{Config, ConfigError, load, load_offline, load_str};

use crate::cli::PolicyArg;
use crate::exit::Exit;

/// Converts an MM2 properties file; exit 0 when converted, even if some keys were not.
///
/// `mirror_maker_1` is a MirrorMaker 1 setup's producer config and topic regex; `file` is
/// then its consumer config.
pub fn import_mm2_cmd(
    file: &Path,
    output: Option<&Path>,
    policy: Option<PolicyArg>,
    mirror_maker_1: Option<(&Path, &str)>,
) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mirror_maker_1 = match mirror_maker_1 {
        Some((producer, include)) => Some(MirrorMaker1 {
            producer: std::fs::read_to_string(producer)
                .with_context(|| format!("cannot read {}", producer.display()))?,
            include: include.to_owned(),
        }),
        None => None,
    };
    let options = ImportOptions {
        policy: policy.map(|p| match p {
            PolicyArg::Identity => NamingPolicy::Identity,
            PolicyArg::Prefix => NamingPolicy::Prefix,
        }),
        mirror_maker_1,
    };
    let (toml, unmapped) = import_mm2_with(&text, &options)
        .with_context(|| format!("cannot convert {}", file.display()))?;
    match output {
        Some(out) => {
            std::fs::write(out, &toml).with_context(|| format!("cannot write {}", out.display()))?
        }
        None => std::io::stdout()
            .write_all(toml.as_bytes())
            .context("cannot write to stdout")?,
    }

    let mut err = std::io::stderr().lock();
    report_unmapped(&mut err, file, &unmapped)?;
    // Check the result as `config validate` would, with every variable set, so the user
    // learns now about what still needs editing (e.g. TLS/SASL, Java-only regexes).
    if let Err(e) = load_str(&toml, "the converted config", &|_| {
        Some("placeholder:9092".to_owned())
    }) {
        writeln!(
            err,
            "strait: the converted config needs editing before it validates (for this check every \
             ${{VAR}} was set to `placeholder:9092`, so files named by a variable cannot be read):"
        )?;
        for line in e.to_string().lines() {
            writeln!(err, "  {line}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Tells on stderr which keys of `file` were not converted, each with its line, value and
/// reason (or that every key was).
fn report_unmapped(
    err: &mut impl Write,
    file: &Path,
    unmapped: &[UnmappedKey],
) -> std::io::Result<()> {
    if unmapped.is_empty() {
        writeln!(err, "strait: every key of {} was converted", file.display())?;
    } else {
        writeln!(
            err,
            "strait: {} key(s) of {} were not converted:",
            unmapped.len(),
            file.display()
        )?;
        for u in unmapped {
            let at = if u.line > 0 {
                format!("{}:{}", file.display(), u.line)
            } else {
                file.display().to_string()
            };
            let value = if u.value.is_empty() {
                String::new()
            } else {
                format!(" = {}", u.value)
            };
            // A reason of several lines (the variables to export) stays indented.
            let reason = u.reason.replace('\n', "\n      ");
            writeln!(err, "  {at}: {}{value}\n      {reason}", u.key)?;
        }
    }
    Ok(())
}

/// Validates a config file: a summary and exit 0, or every problem and exit 2
/// ([`Exit::Usage`]). `offline`: without the environment's secrets or the files it names
/// ([`load_offline`]). `json`: the same as one JSON document on stdout.
pub fn validate_cmd(path: &Path, offline: bool, json: bool) -> anyhow::Result<ExitCode> {
    let loaded = if offline {
        load_offline(path)
    } else {
        load(path)
    };
    let file = path.display().to_string();
    match loaded {
        Ok(config) if json => {
            let flows: Vec<&str> = config.flows.iter().map(|f| f.name.as_str()).collect();
            let clusters: Vec<&str> = config.clusters.keys().map(String::as_str).collect();
            println!(
                "{}",
                serde_json::json!({
                    "file": file, "valid": true, "offline": offline,
                    "clusters": clusters, "flows": flows, "problems": [],
                })
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(config) => {
            print!("{}", summary(path, &config));
            if offline {
                println!(
                    "(offline: unset variables stood in as {OFFLINE_PLACEHOLDER:?}; files were not opened)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if json => {
            let problems = problems_json(&e);
            println!(
                "{}",
                serde_json::json!({
                    "file": file, "valid": false, "offline": offline, "problems": problems,
                })
            );
            Ok(Exit::Usage.into())
        }
        Err(e @ ConfigError::Read { .. }) => {
            eprintln!("strait: {e}");
            Ok(Exit::Usage.into())
        }
        Err(e) => {
            let n = e.problems().len();
            eprintln!("{e}");
            eprintln!(
                "strait: {} has {n} problem{}",
                path.display(),
                if n == 1 { "" } else { "s" }
            );
            Ok(Exit::Usage.into())
        }
    }
}

/// A config's problems as JSON, one object each (a file that cannot be read: one problem
/// without a key).
fn problems_json(e: &ConfigError) -> Vec<serde_json::Value> {
    match e {
        ConfigError::Read { .. } => {
            vec![serde_json::json!({ "key": "", "line": null, "message": e.to_string() })]
        }
        _ => e
            .problems()
            .iter()
            .map(|p| {
                serde_json::json!({
                    "key": p.path.to_string(),
                    "line": p.line,
                    "message": p.message,
                    "expected": p.expected,
                    "suggestion": p.suggestion,
                })
            })
            .collect(),
    }
}

/// A few lines per cluster and flow.
fn summary(path: &Path, config: &Config) -> String {
    let mut s = format!("{}: OK\n", path.display());
    s.push_str(&format!("clusters ({}):\n", config.clusters.len()));
    for c in config.clusters.values() {
        s.push_str(&format!(
            "  {}: {} (client id {})\n",
            c.name,
            c.bootstrap_servers.join(","),
            c.client_id
        ));
    }
    s.push_str(&format!("flows ({}):\n", config.flows.len()));
    for f in &config.flows {
        let state = if f.enabled { "" } else { " [disabled]" };
        let naming = match f.policy.kind() {
            strait_mirror::config::model::NamingPolicy::Prefix => {
                format!(
                    "prefix: <topic> -> {}{}<topic>",
                    f.source,
                    f.policy.separator()
                )
            }
            strait_mirror::config::model::NamingPolicy::Identity => "identity".to_owned(),
        };
        s.push_str(&format!(
            "  {}: {} -> {}{state}\n",
            f.name, f.source, f.target
        ));
        s.push_str(&format!("    naming {naming}\n"));
        s.push_str(&format!(
            "    topics include {} exclude {}\n",
            patterns(f.topics.include_patterns()),
            patterns(f.topics.exclude_patterns())
        ));
        s.push_str(&format!(
            "    groups include {} exclude {}\n",
            patterns(f.groups.include_patterns()),
            patterns(f.groups.exclude_patterns())
        ));
        let on = |b: bool| if b { "on" } else { "off" };
        s.push_str(&format!(
            "    sync: topic configs {}, group offsets {}, heartbeats {}, checkpoints {}\n",
            on(f.sync.topic_configs),
            on(f.sync.group_offsets),
            on(f.sync.heartbeats),
            on(f.sync.checkpoints)
        ));
        s.push_str(&format!("    state topic {}\n", f.state_topic));
    }
    s
}

/// `[a, b]` with patterns as written (no Debug escaping of backslashes).
fn patterns(list: &[String]) -> String {
    format!("[{}]", list.join(", "))
}
