use super::*;

#[test]
fn grows_and_caps_with_jitter() {
    let cfg = BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(1000),
    };
    let mut b = Backoff::new(cfg);
    let d: Vec<_> = (0..8).map(|_| b.next_delay()).collect();
    assert!(d[0] >= Duration::from_millis(50) && d[0] <= Duration::from_millis(100));
    assert!(d[2] >= Duration::from_millis(200) && d[2] <= Duration::from_millis(400));
    for x in &d[4..] {
        assert!(*x >= Duration::from_millis(500) && *x <= Duration::from_millis(1000));
    }
}
