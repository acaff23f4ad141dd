//! `strait`: the Strait binary.
//!
//! Layout: [`cli`] defines the command line; [`config_cmd`] implements the config tools,
//! which need only `strait_mirror::config`; [`logging`] sets up tracing; [`run_cmd`] runs
//! the engine; [`check`], [`plan`], [`status`] and [`offsets`] inspect the clusters and the
//! flows' state topics; [`runbook`] moves consumer groups between clusters; [`verify`]
//! compares the two clusters; [`replay`] copies
//! a time range of a topic once; [`bench`](mod@bench) measures replication.

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
    let result = match &cli.command {
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
    };
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
