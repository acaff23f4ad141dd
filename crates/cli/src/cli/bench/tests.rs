use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(parse_size("16KiB"), Ok(16 << 10));
    assert_eq!(parse_size("1024"), Ok(1024));
    assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
    assert_eq!(parse_size("64MB"), Ok(64_000_000));
    assert!(parse_size("12 parsecs").is_err());
    assert!(parse_size("").is_err());
    assert!(parse_size("0").is_err());
}

#[test]
fn durations_and_rates() {
    assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
    assert_eq!(parse_duration("20ms"), Ok(Duration::from_millis(20)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert!(parse_duration("3 fortnights").is_err());
    assert_eq!(parse_rate("20"), Ok(20.0));
    assert_eq!(parse_rate("12.5MiB/s"), Ok(12.5));
    assert!(parse_rate("0").is_err());
    assert!(parse_rate("fast").is_err());
}

#[test]
fn broker_pids() {
    assert_eq!(parse_pids("12,345"), Ok((12, 345)));
    assert_eq!(parse_pids(" 1 , 2 "), Ok((1, 2)));
    assert!(parse_pids("12").is_err());
    assert!(parse_pids("0,1").is_err());
    assert!(parse_pids("a,b").is_err());
}
