//! Criterion benches for strait-offsets (filled by the offsets work).
fn main() {}
