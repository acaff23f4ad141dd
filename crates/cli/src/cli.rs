//! The command line, as clap types (`cli/bench.rs`: `strait bench`'s flags and the
//! size, duration and rate parsers they use).

pub mod bench;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use strait_mirror::config::model::StartPosition;

/// The exit codes, as `strait --help` lists them ([`crate::exit`]).
const EXIT_CODES: &str = "Exit codes: 0 ok, 1 failed, 2 bad command line or config, \
3 cluster unreachable or authentication failed, 4 refused by a safety rule, \
5 not yet replicated (failover). Logs are coloured only on a terminal without NO_COLOR.";

/// Strait: mirrors Kafka topics, configs and consumer-group offsets between clusters.
#[derive(Parser, Debug)]
#[command(name = "strait", version, about, long_about = None, propagate_version = true,
          after_help = EXIT_CODES)]
pub struct Cli {
    /// Log output format (default: the config's `logging.format` for `run`, else text).
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    /// Log filter (e.g. `info`, `warn,strait_mirror=debug`); RUST_LOG is used when this is not given.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Log output formats.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Replicate the flows of a config file until stopped.
    Run {
        #[command(flatten)]
        config: ConfigArg,
        /// Replicate what exists now, sync offsets once, then exit.
        #[arg(long)]
        once: bool,
    },
    /// Connect to every cluster and check versions, permissions and settings.
    Check {
        #[command(flatten)]
        config: ConfigArg,
        /// Print JSON instead of text (an error too: `{"error": …, "exit": …}` on stdout).
        #[arg(long)]
        json: bool,
    },
    /// Show what each flow would do on the target: topics to create, alter or grow (with
    /// their target names) and topic ACLs to create or delete; nothing is changed.
    Plan {
        #[command(flatten)]
        config: ConfigArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show per-flow replication progress and lag from the state topics.
    Status {
        #[command(flatten)]
        config: ConfigArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Refresh every DURATION (default 5s) until interrupted, with how much of the
        /// source has been copied and how fast (a topic's initial copy, for one); one
        /// JSON document per refresh with --json.
        #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "5s",
              value_parser = bench::parse_duration)]
        watch: Option<std::time::Duration>,
    },
    /// Move a consumer group from a flow's source to its target: commit the exact
    /// translation of its source positions on the target (a dry run unless --execute).
    Failover(SwitchArgs),
    /// Move a consumer group back from a flow's target to its source through the same
    /// offset maps, reversed (a dry run unless --execute).
    Failback(SwitchArgs),
    /// Copy a time range of one source topic once to the target, with an offset map of
    /// its own (a dry run unless --execute).
    Replay(ReplayArgs),
    /// Check that the target holds what the source holds: per partition, the records the
    /// offset map covers compared by content (gaps, duplicates and changes named by
    /// offset), and per consumer group, its target position proven by the record there.
    /// Read-only. Exits 0 when everything matches, 5 when nothing differs but replication
    /// has not caught up, 1 when something differs.
    Verify(VerifyArgs),
    /// Consumer-group offset tools.
    Offsets {
        #[command(subcommand)]
        command: OffsetsCommand,
    },
    /// Measure replication: load a source topic, replicate it with the engine, verify the
    /// target, and report throughput, CPU per GiB, memory and (live) latency.
    Bench(bench::BenchArgs),
    /// Config file tools.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// `strait offsets ...`.
#[derive(Subcommand, Debug)]
pub enum OffsetsCommand {
    /// Translate a source group's committed offsets to target offsets.
    Translate {
        #[command(flatten)]
        config: ConfigArg,
        /// Consumer group.
        #[arg(long, value_name = "G")]
        group: String,
        /// Only this topic.
        #[arg(long, value_name = "T")]
        topic: Option<String>,
        /// Translate through the offset map of this replay (the id `strait replay`
        /// prints) instead of the flows' maps.
        #[arg(long, value_name = "ID")]
        replay: Option<String>,
        /// Print JSON instead of text (an error too: `{"error": …, "exit": …}` on stdout).
        #[arg(long)]
        json: bool,
    },
}

/// `strait failover` / `strait failback`.
#[derive(Args, Debug)]
pub struct SwitchArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// The consumer group to move.
    #[arg(long, value_name = "G")]
    pub group: String,
    /// Only this topic (its source or target name).
    #[arg(long, value_name = "T")]
    pub topic: Option<String>,
    /// Only this flow (default: every enabled flow).
    #[arg(long, value_name = "NAME")]
    pub flow: Option<String>,
    /// Commit the plan (default: print it and commit nothing).
    #[arg(long)]
    pub execute: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Proceed although the group still has active members on the side it leaves.
    #[arg(long)]
    pub force: bool,
    /// Commit positions in coarsened history, rounded down (re-reads a bounded number).
    #[arg(long)]
    pub allow_rounded: bool,
    /// Commit below what the group already has on the side it moves to.
    #[arg(long)]
    pub allow_backwards: bool,
    /// Failback: for a group that also read records produced on the target, commit the
    /// source position after every replicated record.
    #[arg(long)]
    pub allow_target_only: bool,
    /// Failover or failback of a group positioned before where replication started:
    /// commit where it started, skipping the records in between (never replicated).
    #[arg(long)]
    pub accept_inexact: bool,
    /// Failover with the source cluster gone: read nothing from it, and commit on the
    /// target from the group's last positions Strait synced (its checkpoints) through the
    /// maps in the target's state topic; the plan shows how old each position is.
    #[arg(long)]
    pub source_unavailable: bool,
    /// Failover: how long to wait for replication to pass the group's positions.
    #[arg(long, value_name = "DURATION", default_value = "30s",
          value_parser = bench::parse_duration)]
    pub wait: std::time::Duration,
}

/// `strait verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// Only this flow (default: every enabled flow).
    #[arg(long, value_name = "NAME")]
    pub flow: Option<String>,
    /// Only this source topic.
    #[arg(long, value_name = "T")]
    pub topic: Option<String>,
    /// Only this consumer group (repeat for more; default: every group the flow syncs,
    /// when it syncs group offsets).
    #[arg(long, value_name = "G")]
    pub group: Vec<String>,
    /// Compare at most N records per partition, in windows spread over it (for huge
    /// topics; default: every record).
    #[arg(long, value_name = "N")]
    pub sample: Option<u64>,
    /// Partitions read at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel: usize,
    /// Bytes per second read from both clusters together, in MiB (0: no limit).
    #[arg(long, value_name = "MIB", default_value_t = 50)]
    pub max_rate: u64,
    /// Print JSON instead of a table (an error too: `{"error": …, "exit": …}` on stdout).
    #[arg(long)]
    pub json: bool,
}

/// `strait replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// The source topic.
    #[arg(long, value_name = "T")]
    pub topic: String,
    /// The first record copied is the first at or after this time (RFC 3339, e.g.
    /// 2026-11-30T10:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: i64,
    /// Copy up to (not including) the first record at or after this time (default: up to
    /// the end of the topic when the replay starts).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub until: Option<i64>,
    /// The target topic (default: the flow's name for the topic).
    #[arg(long, value_name = "TOPIC")]
    pub to: Option<String>,
    /// The flow (default: the one enabled flow that replicates the topic).
    #[arg(long, value_name = "NAME")]
    pub flow: Option<String>,
    /// Copy (default: print the plan and copy nothing).
    #[arg(long)]
    pub execute: bool,
    /// Copy a range that was already replayed once more (a new run).
    #[arg(long)]
    pub again: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// An RFC 3339 time, as `topics.start_position` takes it, in ms since the epoch.
fn parse_time(text: &str) -> Result<i64, String> {
    match StartPosition::parse(text) {
        Some(StartPosition::Timestamp(ms)) => Ok(ms),
        _ => Err(format!(
            "`{text}` is not an RFC 3339 time (e.g. 2026-11-30T10:00:00Z)"
        )),
    }
}

/// `strait config ...`.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Convert a MirrorMaker 2 configuration into a Strait TOML config.
    ///
    /// Reads mm2.properties, Kafka Connect REST JSON of the MirrorMaker 2 connectors, or a
    /// Strimzi KafkaMirrorMaker2 resource (YAML). Prints the TOML (or writes it to OUT),
    /// then lists on stderr every MM2 key that could not be converted, with the reason.
    ImportMm2 {
        /// The mm2.properties, Connect JSON or KafkaMirrorMaker2 YAML file.
        file: PathBuf,
        /// Write the TOML here instead of stdout.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Target topic naming for flows whose `replication.policy.class` is a custom
        /// class, which cannot be loaded: `identity` (the source names) or `prefix`
        /// (`<source alias><separator><topic>`). Without it such a file is refused.
        #[arg(long, value_name = "POLICY")]
        policy: Option<PolicyArg>,
        /// MirrorMaker 1: FILE is its `--consumer.config`, this its `--producer.config`.
        #[arg(long, value_name = "PRODUCER_PROPERTIES", requires = "include")]
        producer_config: Option<PathBuf>,
        /// MirrorMaker 1: its `--include` (or `--whitelist`) topic regex.
        #[arg(
            long,
            visible_alias = "whitelist",
            value_name = "REGEX",
            requires = "producer_config"
        )]
        include: Option<String>,
    },
    /// Load and validate a config file; print every problem, or a summary.
    Validate {
        #[command(flatten)]
        config: ConfigArg,
        /// Check structure and values only: unset `${VAR}`s stand in as placeholders and
        /// the TLS and token CA files are not opened (a lint for CI, without the secrets).
        #[arg(long)]
        offline: bool,
        /// Print JSON instead of text (an error too: `{"error": …, "exit": …}` on stdout).
        #[arg(long)]
        json: bool,
    },
}

/// `--policy` of `config import-mm2`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyArg {
    /// Target topics keep the source names.
    Identity,
    /// Target topics are `<source alias><separator><topic>`.
    Prefix,
}

/// `-c FILE`.
#[derive(Args, Debug)]
pub struct ConfigArg {
    /// The Strait config file (TOML).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub path: PathBuf,
}
