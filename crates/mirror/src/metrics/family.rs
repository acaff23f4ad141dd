//! Metric families and series (counter, gauge, histogram) and their Prometheus text
//! rendering. Hand-written: the engine needs a dozen families with string labels, and a
//! series handle that the hot path can keep (one atomic add per batch, no lookup).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A series type: how it renders.
pub(crate) trait Series: Default + Send + Sync {
    /// The `# TYPE` word.
    const TYPE: &'static str;
    /// Appends the sample lines; `labels` is `k="v",…` (possibly empty).
    fn render(&self, name: &str, labels: &str, out: &mut String);
}

/// A monotonically increasing integer.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Series for Counter {
    const TYPE: &'static str = "counter";
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        let _ = writeln!(out, "{name}{} {}", braces(labels), self.get());
    }
}

/// A value that goes up and down (an `f64`).
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

impl Series for Gauge {
    const TYPE: &'static str = "gauge";
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        let _ = writeln!(out, "{name}{} {}", braces(labels), number(self.get()));
    }
}

/// Upper bounds of the latency histogram buckets, in seconds.
pub const LATENCY_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// A histogram over [`LATENCY_BUCKETS`].
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }
}

impl Histogram {
    /// Records one observation (negative values, from clock skew, count as 0).
    pub fn observe(&self, v: f64) {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| v <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

impl Series for Histogram {
    const TYPE: &'static str = "histogram";
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            cumulative += n.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{}\"}} {cumulative}",
                number(*bound)
            );
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed));
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), number(sum));
        let _ = writeln!(out, "{name}_count{} {count}", braces(labels));
    }
}

/// All series of one metric name, by label values.
pub(crate) struct Family<T> {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    series: Mutex<BTreeMap<Vec<String>, Arc<T>>>,
}

impl<T: Series> Family<T> {
    pub(crate) fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
    ) -> Self {
        Family {
            name,
            help,
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// The series for `values` (one per label, in order), created on first use.
    pub(crate) fn get(&self, values: &[&str]) -> Arc<T> {
        debug_assert_eq!(values.len(), self.labels.len(), "{}", self.name);
        let key: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(series.entry(key).or_default())
    }

    /// Drops every series whose label values start with `prefix`.
    pub(crate) fn remove_prefix(&self, prefix: &[&str]) {
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        series.retain(|k, _| {
            k.len() < prefix.len() || k.iter().zip(prefix).any(|(a, b)| a.as_str() != *b)
        });
    }

    /// Appends `# HELP`, `# TYPE` and every series.
    pub(crate) fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {}", self.name, T::TYPE);
        // Copy the handles and let go of the lock before formatting: the data path takes
        // it to create series, and must not wait for a whole family to be written out.
        let series: Vec<(Vec<String>, Arc<T>)> = self
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        for (values, s) in &series {
            let labels = self
                .labels
                .iter()
                .zip(values)
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect::<Vec<_>>()
                .join(",");
            s.render(self.name, &labels, out);
        }
    }
}

fn braces(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

/// A sample value in Prometheus' float syntax.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v == f64::INFINITY {
        "+Inf".to_owned()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        format!("{v}")
    }
}

/// Label value escaping: backslash, double quote and line feed.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_family_renders_escaped_labels() {
        let f: Family<Counter> = Family::new("x_total", "Things.", &["flow", "topic"]);
        f.get(&["a", "q\"uo\\te\n"]).add(3);
        f.get(&["a", "plain"]).add(1);
        f.get(&["a", "plain"]).add(1);
        let mut out = String::new();
        f.render(&mut out);
        assert_eq!(
            out,
            "# HELP x_total Things.\n# TYPE x_total counter\n\
             x_total{flow=\"a\",topic=\"plain\"} 2\n\
             x_total{flow=\"a\",topic=\"q\\\"uo\\\\te\\n\"} 3\n"
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(0.003);
        h.observe(0.2);
        h.observe(1000.0);
        h.observe(-1.0);
        let mut out = String::new();
        h.render("lat", "flow=\"f\"", &mut out);
        assert!(
            out.contains("lat_bucket{flow=\"f\",le=\"0.001\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("lat_bucket{flow=\"f\",le=\"0.005\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("lat_bucket{flow=\"f\",le=\"0.25\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("lat_bucket{flow=\"f\",le=\"300\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("lat_bucket{flow=\"f\",le=\"+Inf\"} 4\n"),
            "{out}"
        );
        assert!(out.contains("lat_sum{flow=\"f\"} 1000.203\n"), "{out}");
        assert!(out.contains("lat_count{flow=\"f\"} 4\n"), "{out}");
    }

    #[test]
    fn gauge_renders_special_values_and_remove_prefix_drops_series() {
        let f: Family<Gauge> = Family::new("g", "G.", &["flow", "topic"]);
        f.get(&["a", "t"]).set(f64::INFINITY);
        f.get(&["b", "t"]).set(1.5);
        f.remove_prefix(&["a"]);
        let mut out = String::new();
        f.render(&mut out);
        assert!(out.contains("g{flow=\"b\",topic=\"t\"} 1.5\n"), "{out}");
        assert!(!out.contains("flow=\"a\""), "{out}");
        let g = Gauge::default();
        g.set(f64::INFINITY);
        let mut out = String::new();
        g.render("g", "", &mut out);
        assert_eq!(out, "g +Inf\n");
    }
}
