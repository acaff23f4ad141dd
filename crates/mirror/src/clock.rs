//! The wall clock, at the ground floor: everything that stamps or ages by real time reads
//! it here (pure cores take `now` as a parameter instead).

/// Wall-clock milliseconds since the Unix epoch (0 before it), as Kafka timestamps are.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
