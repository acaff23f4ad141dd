//! A one-line progress display on stderr, only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::load::Progress;

/// A thread redrawing one stderr line every 250 ms until dropped or finished.
#[derive(Debug)]
pub struct Display {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Display {
    /// Shows `label`, the MiB counted in `progress` (of `total_mib` when known) and the
    /// rate; does nothing unless stderr is a terminal.
    pub fn start(label: &str, progress: Option<Arc<Progress>>, total_mib: Option<f64>) -> Display {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Display { stop, handle: None };
        }
        let (flag, label) = (stop.clone(), label.to_string());
        let handle = std::thread::Builder::new()
            .name("bench-progress".into())
            .spawn(move || {
                let t0 = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    let secs = t0.elapsed().as_secs_f64();
                    let line = match &progress {
                        Some(p) => {
                            let mib = p.bytes.load(Ordering::Relaxed) as f64 / 1048576.0;
                            let of = total_mib.map(|t| format!(" / {t:.0}")).unwrap_or_default();
                            format!(
                                "{label}: {mib:.0}{of} MiB, {} records, {:.1} MiB/s, {secs:.1} s",
                                p.records.load(Ordering::Relaxed),
                                mib / secs.max(1e-3)
                            )
                        }
                        None => format!("{label}: {secs:.1} s"),
                    };
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                    drop(err);
                    std::thread::sleep(Duration::from_millis(250));
                }
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            })
            .ok();
        Display { stop, handle }
    }

    /// Clears the line and stops.
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

impl Drop for Display {
    fn drop(&mut self) {
        self.stop_now();
    }
}
