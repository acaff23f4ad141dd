//! `strait`: the Strait binary.
//!
//! Layout: [`cli`] defines the command line; [`config_cmd`] implements the config tools,
//! which need only `strait_mirror::config`; [`logging`] sets up tracing; [`run_cmd`] runs
//! the engine; [`check`], [`plan`], [`status`] and [`offsets`] inspect the clusters and the
//! flows' state topics; [`runbook`] moves consumer groups between clusters; [`replay`] copies
//! a time range of a topic once; [`bench`] measures replication.

mod bench;
mod check;
mod cli;
mod config_cmd;
mod exit;
mod logging;
mod offsets;
mod plan;
mod replay;
mod run_cmd;
mod runbook;
mod runtime;
mod status;
mod status_group;

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
            command: ConfigCommand::Validate { config, offline },
        } => config_cmd::validate_cmd(&config.path, *offline),
        Command::Plan { config, json } => plan::plan_cmd(&config.path, *json),
        Command::Check { config } => check::check_cmd(&config.path),
        Command::Status { config, json } => status::status_cmd(&config.path, *json),
        Command::Failover(args) => {
            runbook::switch_cmd(strait_mirror::runbook::Direction::Failover, args)
        }
        Command::Failback(args) => {
            runbook::switch_cmd(strait_mirror::runbook::Direction::Failback, args)
        }
        Command::Replay(args) => replay::replay_cmd(args),
        Command::Offsets {
            command:
                OffsetsCommand::Translate {
                    config,
                    group,
                    topic,
                    replay,
                },
        } => match replay {
            Some(id) => offsets::translate_replay_cmd(&config.path, group, topic.as_deref(), id),
            None => offsets::translate_cmd(&config.path, group, topic.as_deref()),
        },
        // Handled above, before logging is set up.
        Command::Run { .. } => Ok(ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        // `{:#}` prints the context chain on one line, without a backtrace or Debug dump.
        eprintln!("strait: {e:#}");
        exit::of_error(&e).into()
    })
}
