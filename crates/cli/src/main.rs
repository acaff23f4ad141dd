//! `strait`: the Strait binary. One module per command, over a few shared ones:
//!
//! | module | what |
//! |---|---|
//! | [`run_cmd`] | `strait run`: the engine, until a signal (or one pass with `--once`) |
//! | [`config_cmd`] | `strait config import-mm2` and `strait config validate` (only `strait_mirror::config`) |
//! | [`check`] | `strait check`: each cluster's reachability, security and permissions |
//! | [`plan`] | `strait plan`: the dry run of topic sync (also the flow selection the inspecting commands share) |
//! | [`status`] | `strait status`: per flow, topic and partition, the source end and the replicated position |
//! | [`status_group`] | `strait status`'s scale-out part: the flow's group and its members' reports |
//! | [`offsets`] | `strait offsets translate`: a group's source offsets beside their translation |
//! | [`runbook`] | `strait failover` / `strait failback`: move a consumer group between the clusters |
//! | [`verify`] | `strait verify`: the parity check of the two clusters |
//! | [`replay`] | `strait replay`: copy a time range of a topic once |
//! | [`bench`](mod@bench) | `strait bench`: replication measured, and the records verified |
//! | [`cli`] | the command line, as clap types |
//! | [`logging`] | logging to stderr via tracing-subscriber |
//! | [`progress`] | progress of long work on stderr, one mechanism for every command |
//! | [`runtime`] | the engine's tokio runtime, one choice for `run` and `bench` |
//! | [`exit`] | the exit codes of every command (docs/cli.md, "Exit codes") |

mod bench;
mod check;
mod cli;
mod config_cmd;
mod exit;
mod logging;
mod offsets;
mod plan;
mod progress;
mod replay;
mod run_cmd;
mod runbook;
mod runtime;
mod status;
mod status_group;
mod verify;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ConfigCommand, LogFormat, OffsetsCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `run` sets logging up itself: its config file has a say in the format and level.
    if let Command::Run { config, once } = &cli.command {
        return run_cmd::run_cmd(
            &config.path,
            *once,
            cli.log_format,
            cli.log_level.as_deref(),
        )
        .unwrap_or_else(|e| {
            eprintln!("strait: {e:#}");
            exit::of_error(&e).into()
        });
    }
    if let Err(e) = logging::init(
        cli.log_format.unwrap_or(LogFormat::Text),
        cli.log_level.as_deref(),
    ) {
        eprintln!("strait: {e}");
        return exit::Exit::Usage.into();
    }
    let result = dispatch(&cli.command);
    result.unwrap_or_else(|e| {
        // `{:#}` prints the context chain on one line, without a backtrace or Debug dump.
        eprintln!("strait: {e:#}");
        let code = exit::of_error(&e);
        if wants_json(&cli.command) {
            println!(
                "{}",
                serde_json::json!({ "error": format!("{e:#}"), "exit": code as u8 })
            );
        }
        code.into()
    })
}

/// Runs the command (all but `run`, which `main` starts before logging is set up): a flat
/// table, one arm per command, kept whole so every command's entry point shows at once.
fn dispatch(command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Bench(args) => bench::run(args),
        Command::Config {
            command:
                ConfigCommand::ImportMm2 {
                    file,
                    output,
                    policy,
                    producer_config,
                    include,
                },
        } => config_cmd::import_mm2_cmd(
            file,
            output.as_deref(),
            *policy,
            producer_config.as_deref().zip(include.as_deref()),
        ),
        Command::Config {
            command:
                ConfigCommand::Validate {
                    config,
                    offline,
                    json,
                },
        } => config_cmd::validate_cmd(&config.path, *offline, *json),
        Command::Plan { config, json } => plan::plan_cmd(&config.path, *json),
        Command::Check { config, json } => check::check_cmd(&config.path, *json),
        Command::Status {
            config,
            json,
            watch,
        } => status::status_cmd(&config.path, *json, *watch),
        Command::Failover(args) => {
            runbook::switch_cmd(strait_mirror::runbook::Direction::Failover, args)
        }
        Command::Failback(args) => {
            runbook::switch_cmd(strait_mirror::runbook::Direction::Failback, args)
        }
        Command::Replay(args) => replay::replay_cmd(args),
        Command::Verify(args) => verify::verify_cmd(args),
        Command::Offsets {
            command:
                OffsetsCommand::Translate {
                    config,
                    group,
                    topic,
                    replay,
                    json,
                },
        } => match replay {
            Some(id) => {
                offsets::translate_replay_cmd(&config.path, group, topic.as_deref(), id, *json)
            }
            None => offsets::translate_cmd(&config.path, group, topic.as_deref(), *json),
        },
        // Handled above, before logging is set up.
        Command::Run { .. } => Ok(ExitCode::SUCCESS),
    }
}

/// Whether the command was asked for JSON (`--json`): its error is then JSON on stdout too.
fn wants_json(command: &Command) -> bool {
    match command {
        Command::Plan { json, .. }
        | Command::Status { json, .. }
        | Command::Check { json, .. }
        | Command::Offsets {
            command: OffsetsCommand::Translate { json, .. },
        }
        | Command::Config {
            command: ConfigCommand::Validate { json, .. },
        } => *json,
        Command::Failover(a) | Command::Failback(a) => a.json,
        Command::Replay(a) => a.json,
        Command::Verify(a) => a.json,
        Command::Bench(a) => a.json,
        Command::Run { .. }
        | Command::Config {
            command: ConfigCommand::ImportMm2 { .. },
        } => false,
    }
}
