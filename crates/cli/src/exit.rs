//! The exit codes of every command, so that a script can tell a bad config from an
//! unreachable cluster from a refusal (docs/cli.md, "Exit codes"):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done (or a dry run that could run) |
//! | 1 | failed (anything not below) |
//! | 2 | a command line or config that cannot be right |
//! | 3 | a cluster unreachable, or authentication, TLS or authorization failed |
//! | 4 | refused by a safety rule (a switch-over or replay the rules do not allow, a takeover that cannot be proven) |
//! | 5 | not yet replicated (failover: replication has not reached the group's position) |
//!
//! Errors are classified by what their chain holds ([`of_error`]); refusals are said by
//! the commands that decide them.

use std::process::ExitCode;

use strait_mirror::config::ConfigError;
use strait_mirror::error::{ErrorKind, MirrorError};

/// One of the documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0.
    Ok = 0,
    /// 1.
    Failure = 1,
    /// 2: clap's own code for a usage error, and a config that does not validate.
    Usage = 2,
    /// 3.
    Unreachable = 3,
    /// 4.
    Refused = 4,
    /// 5.
    NotYetReplicated = 5,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// The code for an error a command returned: the first cause in its chain that says what
/// it is.
pub fn of_error(e: &anyhow::Error) -> Exit {
    e.chain()
        .find_map(|cause| {
            if cause.downcast_ref::<ConfigError>().is_some() {
                return Some(Exit::Usage);
            }
            if let Some(m) = cause.downcast_ref::<MirrorError>() {
                return of_mirror(m);
            }
            cause
                .downcast_ref::<strait_client::Error>()
                .and_then(of_client)
        })
        .unwrap_or(Exit::Failure)
}

/// The code for an engine error (`strait run`).
pub fn of_mirror_error(e: &MirrorError) -> Exit {
    of_mirror(e).unwrap_or(Exit::Failure)
}

fn of_mirror(e: &MirrorError) -> Option<Exit> {
    match e.kind() {
        ErrorKind::Unreachable { .. } => Some(Exit::Unreachable),
        ErrorKind::Config { .. } => Some(Exit::Usage),
        ErrorKind::Refused { .. } => Some(Exit::Refused),
        ErrorKind::Kafka { source, .. } => of_client(source),
        _ => None,
    }
}

fn of_client(e: &strait_client::Error) -> Option<Exit> {
    (e.is_auth_failure() || e.is_refused() || e.is_network()).then_some(Exit::Unreachable)
}

#[cfg(test)]
mod tests;
