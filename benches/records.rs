//! Criterion benches for the strait-records hot path (filled by the records work).
fn main() {}
