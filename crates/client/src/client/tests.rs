use super::*;
use crate::error::ErrorKind;

fn refused() -> Error {
    Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

#[test]
fn a_bootstrap_refused_everywhere_gives_up_after_the_limit() {
    let t0 = Instant::now();
    let mut s = RefusedStreak::new(Duration::from_secs(5));
    assert!(!s.gives_up(&refused(), t0));
    assert!(!s.gives_up(&refused(), t0 + Duration::from_secs(4)));
    assert!(s.gives_up(&refused(), t0 + Duration::from_secs(5)));
    assert!(s.gave_up());
}

#[test]
fn a_silent_host_keeps_the_retry_timeout() {
    let t0 = Instant::now();
    let mut s = RefusedStreak::new(Duration::from_secs(5));
    assert!(!s.gives_up(&refused(), t0));
    // A timeout between refusals: something may be there; the streak starts over.
    assert!(!s.gives_up(&Error::new(ErrorKind::Timeout), t0 + Duration::from_secs(3)));
    assert!(!s.gives_up(&refused(), t0 + Duration::from_secs(6)));
    assert!(!s.gives_up(&refused(), t0 + Duration::from_secs(10)));
    assert!(s.gives_up(&refused(), t0 + Duration::from_secs(11)));
}
