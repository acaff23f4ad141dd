//! `strait`: the Strait binary.
//!
//! Layout: [`cli`] defines the command line; [`config_cmd`] implements the config tools,
//! which need only `strait_mirror::config`; [`logging`] sets up tracing. Commands that need
//! the replication engine (run, check, plan, status, offsets, bench) are defined with their
//! flags but exit 2 saying so, until the engine lands.

mod bench;
mod cli;
mod config_cmd;
mod logging;
mod plan;
mod run_cmd;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ConfigCommand, LogFormat};

/// Exit code of commands that exist in the CLI but need the engine, which is not built yet.
const NOT_BUILT: u8 = 2;

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
            ExitCode::FAILURE
        });
    }
    if let Err(e) = logging::init(
        cli.log_format.unwrap_or(LogFormat::Text),
        cli.log_level.as_deref(),
    ) {
        eprintln!("strait: {e}");
        return ExitCode::FAILURE;
    }
    let result = match &cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Config {
            command: ConfigCommand::ImportMm2 { file, output },
        } => config_cmd::import_mm2_cmd(file, output.as_deref()),
        Command::Config {
            command: ConfigCommand::Validate { config },
        } => config_cmd::validate_cmd(&config.path),
        Command::Plan { config } => plan::plan_cmd(&config.path),
        other => Ok(not_built(other)),
    };
    result.unwrap_or_else(|e| {
        // `{:#}` prints the context chain on one line, without a backtrace or Debug dump.
        eprintln!("strait: {e:#}");
        ExitCode::FAILURE
    })
}

fn not_built(command: &Command) -> ExitCode {
    let name = match command {
        Command::Run { .. } => "run",
        Command::Check { .. } => "check",
        Command::Plan { .. } => "plan",
        Command::Status { .. } => "status",
        Command::Offsets { .. } => "offsets translate",
        Command::Bench { .. } => "bench",
        Command::Config { .. } => "config",
    };
    eprintln!("strait {name}: not built yet: needs the replication engine");
    ExitCode::from(NOT_BUILT)
}
