//! Progress of long work on stderr, one mechanism for every command (`run --once`,
//! `replay --execute`, `verify`, `bench`): an indicatif bar redrawn every
//! [`REDRAW`] when stderr is a terminal; otherwise a plain info line every [`LINE_EVERY`]
//! through the log (so a pipe, a file or a log collector sees progress, without escape
//! codes). The work is read through a closure giving (done, total); a total of 0 means
//! not known yet (a spinner with the count).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

/// How often a terminal bar is redrawn.
pub const REDRAW: Duration = Duration::from_millis(200);
/// How often a line is logged when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// What the counts are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Records.
    Records,
    /// Source offsets (a replay copies offset ranges; gaps count).
    Offsets,
    /// Bytes.
    Bytes,
    /// Nothing is counted: the elapsed time only.
    Time,
}

/// A progress display, stopped (and its bar cleared) by [`Bar::finish`] or on drop.
#[derive(Debug)]
pub struct Bar {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Bar {
    /// Starts showing `label` and what `read` reports, in `unit`.
    pub fn start(label: &str, unit: Unit, read: impl Fn() -> (u64, u64) + Send + 'static) -> Bar {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let label = label.to_owned();
        let terminal = std::io::stderr().is_terminal();
        let handle = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                if terminal {
                    draw(&label, unit, &read, &flag);
                } else {
                    lines(&label, unit, &read, &flag);
                }
            })
            .ok();
        Bar { stop, handle }
    }

    /// Stops and clears the display.
    pub fn finish(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop_now();
    }
}

fn template(unit: Unit, known: bool) -> &'static str {
    match (unit, known) {
        (Unit::Time, _) => "{spinner} {msg} {elapsed}",
        (Unit::Bytes, true) => {
            "{spinner} {msg} [{bar:40}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, eta {eta})"
        }
        (Unit::Bytes, false) => "{spinner} {msg} {bytes} ({binary_bytes_per_sec}) {elapsed}",
        (_, true) => "{spinner} {msg} [{bar:40}] {human_pos}/{human_len} ({per_sec}, eta {eta})",
        (_, false) => "{spinner} {msg} {human_pos} ({per_sec}) {elapsed}",
    }
}

fn draw(label: &str, unit: Unit, read: &impl Fn() -> (u64, u64), stop: &AtomicBool) {
    let bar = ProgressBar::new(0);
    bar.set_message(label.to_owned());
    let mut known = None;
    while !stop.load(Ordering::Relaxed) {
        let (done, total) = read();
        if known != Some(total > 0) {
            known = Some(total > 0);
            bar.set_style(
                ProgressStyle::with_template(template(unit, total > 0))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
        }
        bar.set_length(total.max(done));
        bar.set_position(done);
        bar.tick();
        std::thread::sleep(REDRAW);
    }
    bar.finish_and_clear();
}

fn lines(label: &str, unit: Unit, read: &impl Fn() -> (u64, u64), stop: &AtomicBool) {
    let start = Instant::now();
    let mut last = (start, 0u64);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(REDRAW);
        if last.0.elapsed() < LINE_EVERY {
            continue;
        }
        let (done, total) = read();
        let rate = done.saturating_sub(last.1) as f64 / last.0.elapsed().as_secs_f64();
        last = (Instant::now(), done);
        tracing::info!("{}", line(label, unit, done, total, rate, start.elapsed()));
    }
}

/// One progress line: `label: 1,200 of 5,000 records (24%), 120/s, 10 s`.
pub fn line(
    label: &str,
    unit: Unit,
    done: u64,
    total: u64,
    rate: f64,
    elapsed: Duration,
) -> String {
    let secs = elapsed.as_secs();
    let amount = |n: u64| match unit {
        Unit::Bytes => HumanBytes(n).to_string(),
        _ => n.to_string(),
    };
    let name = match unit {
        Unit::Records => " records",
        Unit::Offsets => " offsets",
        Unit::Bytes | Unit::Time => "",
    };
    let per_sec = match unit {
        Unit::Bytes => format!("{}/s", HumanBytes(rate as u64)),
        _ => format!("{rate:.0}/s"),
    };
    match (unit, total) {
        (Unit::Time, _) => format!("{label}: {secs} s"),
        (_, 0) => format!("{label}: {}{name}, {per_sec}, {secs} s", amount(done)),
        _ => format!(
            "{label}: {} of {}{name} ({}%), {per_sec}, {secs} s",
            amount(done),
            amount(total),
            done.saturating_mul(100) / total
        ),
    }
}

#[cfg(test)]
mod tests;
