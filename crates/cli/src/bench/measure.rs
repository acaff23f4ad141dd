//! What the bench measures about its own process, and how.
//!
//! - [`CpuSnapshot`]: `getrusage(RUSAGE_SELF)` user + system CPU of the whole process; a
//!   phase's CPU is the difference of two snapshots taken around it.
//! - [`ThreadCpu`]: the sum of `getrusage(RUSAGE_THREAD)` over the threads of one tokio
//!   runtime, taken by each thread as it stops (`on_thread_stop`). The replication phase
//!   runs the engine on its own runtime, so this is the engine's CPU and nothing else
//!   (unless the engine starts plain OS threads of its own, which RUSAGE_SELF still covers).
//! - [`RssSampler`]: resident set size sampled from `/proc/self/statm` every 10 ms during
//!   a phase: the high-water mark *of that phase*. Short spikes between samples are missed.
//! - [`vm_hwm`]: `VmHWM` from `/proc/self/status`: the peak resident set of the whole
//!   process since it started, including the load generator and the verifier.
//! - [`process_cpu`]: another process's user + system CPU from `/proc/PID/stat` (the local
//!   brokers', `--broker-pids`), in clock ticks (10 ms on Linux): a phase's broker CPU is
//!   the difference of two readings taken around it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

/// User and system CPU time, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSnapshot {
    /// User CPU, µs.
    pub user_us: u64,
    /// System CPU, µs.
    pub sys_us: u64,
}

impl CpuSnapshot {
    /// The whole process now (`RUSAGE_SELF`); zeros if the call fails.
    pub fn process() -> CpuSnapshot {
        Self::of(UsageWho::RUSAGE_SELF)
    }

    /// The calling thread now (`RUSAGE_THREAD`); zeros if the call fails.
    pub fn thread() -> CpuSnapshot {
        Self::of(UsageWho::RUSAGE_THREAD)
    }

    fn of(who: UsageWho) -> CpuSnapshot {
        match getrusage(who) {
            Ok(u) => {
                let us = |t: nix::sys::time::TimeVal| {
                    (t.tv_sec().max(0) as u64) * 1_000_000 + t.tv_usec().max(0) as u64
                };
                CpuSnapshot {
                    user_us: us(u.user_time()),
                    sys_us: us(u.system_time()),
                }
            }
            Err(_) => CpuSnapshot::default(),
        }
    }

    /// `self - earlier`, saturating.
    pub fn since(self, earlier: CpuSnapshot) -> CpuSnapshot {
        CpuSnapshot {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    /// User + system, in seconds.
    #[cfg(test)]
    fn total_secs(self) -> f64 {
        (self.user_us + self.sys_us) as f64 / 1e6
    }
}

/// CPU summed over the threads of one runtime (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct ThreadCpu {
    user_us: Arc<AtomicU64>,
    sys_us: Arc<AtomicU64>,
    threads: Arc<AtomicU64>,
}

impl ThreadCpu {
    /// The engine's runtime for `workers` threads, as `strait run` builds it
    /// ([`crate::runtime::engine_runtime`]: one worker is a current-thread runtime, run
    /// by the thread that calls [`ThreadCpu::block_on`]). Its own threads (the workers
    /// of a multi-thread runtime, the blocking pool) add their `RUSAGE_THREAD` CPU to
    /// this accumulator when they stop. Read it after the runtime has been dropped
    /// (dropping waits for the threads).
    pub fn runtime(&self, name: &str, workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
        let me = self.clone();
        crate::runtime::engine_runtime(workers)
            .thread_name(name)
            .on_thread_stop(move || me.add(CpuSnapshot::thread()))
            .build()
    }

    /// `rt.block_on(fut)`, adding the calling thread's CPU during it to this accumulator:
    /// with a current-thread runtime that thread runs every task.
    pub fn block_on<F: std::future::Future>(
        &self,
        rt: &tokio::runtime::Runtime,
        fut: F,
    ) -> F::Output {
        let before = CpuSnapshot::thread();
        let out = rt.block_on(fut);
        self.add(CpuSnapshot::thread().since(before));
        out
    }

    fn add(&self, s: CpuSnapshot) {
        self.user_us.fetch_add(s.user_us, Ordering::Relaxed);
        self.sys_us.fetch_add(s.sys_us, Ordering::Relaxed);
        self.threads.fetch_add(1, Ordering::Relaxed);
    }

    /// The CPU of the threads that have stopped so far.
    pub fn total(&self) -> CpuSnapshot {
        CpuSnapshot {
            user_us: self.user_us.load(Ordering::Relaxed),
            sys_us: self.sys_us.load(Ordering::Relaxed),
        }
    }

    /// How many threads have reported.
    #[cfg(test)]
    fn threads(&self) -> u64 {
        self.threads.load(Ordering::Relaxed)
    }
}

/// Samples `/proc/self/statm` resident pages on a thread of its own until stopped.
#[derive(Debug)]
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<(u64, CpuSnapshot)>>,
}

/// What an [`RssSampler`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RssSample {
    /// Highest resident set size sampled, bytes (0 if /proc/self/statm is unreadable).
    pub peak_bytes: u64,
    /// CPU the sampler thread itself used (included in RUSAGE_SELF figures).
    pub sampler_cpu: CpuSnapshot,
}

impl RssSampler {
    /// Starts sampling every `every`.
    pub fn start(every: Duration) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let page = page_size();
        let handle = std::thread::Builder::new()
            .name("bench-rss".into())
            .spawn(move || {
                let mut peak = 0;
                loop {
                    if let Some(pages) = statm_resident_pages() {
                        peak = peak.max(pages * page);
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(every);
                }
                (peak, CpuSnapshot::thread())
            })
            .ok();
        RssSampler { stop, handle }
    }

    /// Stops and returns the peak.
    pub fn finish(mut self) -> RssSample {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok((peak_bytes, sampler_cpu))) => RssSample {
                peak_bytes,
                sampler_cpu,
            },
            _ => RssSample::default(),
        }
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn page_size() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(n)) if n > 0 => n as u64,
        _ => 4096,
    }
}

fn statm_resident_pages() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Resident set size now, bytes (from `/proc/self/statm`).
pub fn rss_now() -> Option<u64> {
    statm_resident_pages().map(|p| p * page_size())
}

/// `VmHWM` (peak resident set of the whole process since start), bytes.
pub fn vm_hwm() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Another process's user + system CPU so far, from `/proc/PID/stat` (`None` when the
/// process is gone or the file cannot be parsed).
pub fn process_cpu(pid: u32) -> Option<CpuSnapshot> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let tick_us = match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(n)) if n > 0 => 1_000_000 / n as u64,
        _ => 10_000,
    };
    parse_stat_cpu(&text, tick_us)
}

/// utime and stime (fields 14 and 15 of `/proc/PID/stat`, in ticks of `tick_us` µs). The
/// command name (field 2, in parentheses) may hold spaces and parentheses: fields are
/// counted from the last `)`.
fn parse_stat_cpu(stat: &str, tick_us: u64) -> Option<CpuSnapshot> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(CpuSnapshot {
        user_us: utime * tick_us,
        sys_us: stime * tick_us,
    })
}

#[cfg(test)]
mod tests;
