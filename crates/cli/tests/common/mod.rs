//! Shared by the binary's tests: the `strait run` process the crash and stall tests drive
//! (started with its output in a log file, killed (SIGKILL) and reaped on drop, also when an
//! assertion fails); a command run to its end ([`command`]); the exactly-once checks
//! ([`eos`]); the fault suite's brokers behind proxies and its checks ([`faults`]); the
//! numbered producer ([`load`]); partition ends and saved offset maps as `strait` reads
//! them ([`read`]).
#![allow(dead_code)]

pub mod command;
pub mod eos;
pub mod faults;
pub mod load;
pub mod read;

use std::ops::{Deref, DerefMut};
use std::path::Path;

use strait_testkit::process::StraitProcess;
#[allow(unused_imports)] // not every test file reads a log by path
pub use strait_testkit::process::log_tail;

/// A running `strait run -c CONFIG` of this package's binary (the guard is strait-testkit's
/// [`StraitProcess`]: its methods are this type's).
pub struct Strait(StraitProcess);

impl Strait {
    /// Starts `strait run -c config`, appending its output to `log`.
    pub fn start(config: &Path, log: &Path) -> Strait {
        Strait(StraitProcess::run(
            env!("CARGO_BIN_EXE_strait"),
            config,
            log,
            &[],
        ))
    }
}

impl Deref for Strait {
    type Target = StraitProcess;
    fn deref(&self) -> &StraitProcess {
        &self.0
    }
}

impl DerefMut for Strait {
    fn deref_mut(&mut self) -> &mut StraitProcess {
        &mut self.0
    }
}
