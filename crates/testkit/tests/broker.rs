//! TansuBroker / TansuCluster against the real Tansu binary.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::time::{Duration, Instant};

use strait_testkit::probe::api_versions;
use strait_testkit::{BrokerOptions, Error, TansuBroker, TansuCluster, rdkafka};

const PROBE: Duration = Duration::from_secs(2);

/// Alive = /proc/PID exists and is not a zombie.
fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // "pid (comm) S ..." — the state follows the last ')'.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.trim().chars().next());
            state != Some('Z')
        }
    }
}

fn wait_dead(pid: u32, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if !pid_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !pid_alive(pid)
}

#[test]
fn starts_and_answers_api_versions() {
    let mut broker = TansuBroker::start().unwrap();
    assert!(broker.is_running());
    assert_eq!(broker.bootstrap(), format!("127.0.0.1:{}", broker.port()));
    let apis = api_versions(broker.addr(), PROBE).unwrap();
    for key in [0, 1, 3, 18] {
        assert!(
            apis.iter().any(|a| a.api_key == key),
            "api {key} missing: {apis:?}"
        );
    }
    assert!(
        broker.log_tail(10).contains("ready in"),
        "{}",
        broker.log_tail(10)
    );
}

#[test]
fn two_brokers_at_once() {
    let cluster = TansuCluster::start(2).unwrap();
    assert_eq!(cluster.len(), 2);
    let (a, b) = (cluster.broker(0), cluster.broker(1));
    assert_ne!(a.port(), b.port());
    assert_ne!(a.name(), b.name());
    assert_ne!(a.pid(), b.pid());
    for broker in cluster.brokers() {
        api_versions(broker.addr(), PROBE).unwrap();
    }
    assert_eq!(cluster.bootstraps(), vec![a.bootstrap(), b.bootstrap()]);
}

#[test]
fn drop_kills_the_process() {
    let broker = TansuBroker::start().unwrap();
    let pid = broker.pid().unwrap();
    let addr = broker.addr();
    let log_dir = broker.log_path().parent().unwrap().to_path_buf();
    assert!(pid_alive(pid));
    drop(broker);
    assert!(!pid_alive(pid), "tansu {pid} survived drop");
    assert!(api_versions(addr, Duration::from_millis(300)).is_err());
    assert!(
        !log_dir.exists(),
        "the temp dir is removed after a clean drop"
    );
}

#[test]
fn a_panicking_test_still_kills_the_broker() {
    let mut pid = None;
    let mut log = None;
    let result = catch_unwind(AssertUnwindSafe(|| {
        let broker = TansuBroker::start().unwrap();
        pid = broker.pid();
        log = Some(broker.log_path().to_path_buf());
        panic!("boom inside a test");
    }));
    assert!(result.is_err());
    let pid = pid.unwrap();
    assert!(!pid_alive(pid), "tansu {pid} survived a panic");
    // The log is kept after a panic, for the post-mortem.
    let log = log.unwrap();
    assert!(log.exists());
    let _ = std::fs::remove_dir_all(log.parent().unwrap());
}

#[test]
fn kill_then_restart_on_the_same_port_comes_back_empty() {
    let mut broker = TansuBroker::start().unwrap();
    let bootstrap = broker.bootstrap();
    rdkafka::create_topic(&bootstrap, "t", 1, &[]).unwrap();
    rdkafka::commit_group_offsets(&bootstrap, "g", "t", &[(0, 5)]).unwrap();
    assert_eq!(
        rdkafka::list_group_offsets(&bootstrap, "g").unwrap().len(),
        1
    );

    let (port, pid) = (broker.port(), broker.pid().unwrap());
    broker.kill();
    assert!(!broker.is_running());
    assert!(broker.pid().is_none());
    assert!(!pid_alive(pid));
    assert!(api_versions(broker.addr(), Duration::from_millis(300)).is_err());

    broker.restart().unwrap();
    assert_eq!(broker.port(), port);
    assert_ne!(broker.pid(), Some(pid));
    api_versions(broker.addr(), PROBE).unwrap();
    // Memory storage: everything is gone.
    assert!(
        rdkafka::list_group_offsets(&bootstrap, "g")
            .unwrap()
            .is_empty()
    );
    // restart() on a running broker works too.
    broker.restart().unwrap();
    api_versions(broker.addr(), PROBE).unwrap();
}

#[test]
fn a_missing_binary_says_how_to_install_it() {
    let err = TansuBroker::start_with(BrokerOptions {
        binary: Some("/nonexistent/tansu".into()),
        ..BrokerOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, Error::TansuMissing { .. }));
    assert!(err.to_string().contains("scripts/install-brokers"), "{err}");
}

#[test]
fn a_broker_that_exits_gives_a_clear_error_with_the_log() {
    // /bin/false "starts" and exits at once, every attempt.
    let err = TansuBroker::start_with(BrokerOptions {
        binary: Some("/bin/false".into()),
        startup_timeout: Duration::from_secs(2),
        ..BrokerOptions::default()
    })
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::BrokerStart { .. }), "{msg}");
    assert!(msg.contains("exited early"), "{msg}");
    assert!(msg.contains("log tail"), "{msg}");
    assert!(msg.contains("strait-testkit: starting"), "{msg}");
}

/// Runs in a child process (see the next test): starts a broker, prints its pid and
/// aborts, so no destructor runs. Does nothing in a normal test run.
#[test]
fn watchdog_child() {
    if std::env::var_os("STRAIT_TESTKIT_WATCHDOG_CHILD").is_none() {
        return;
    }
    let broker = TansuBroker::start().unwrap();
    println!("BROKER_PID={}", broker.pid().unwrap());
    println!(
        "BROKER_LOG_DIR={}",
        broker.log_path().parent().unwrap().display()
    );
    std::process::abort();
}

#[test]
fn the_watchdog_kills_the_broker_when_the_test_process_dies_without_dropping_it() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "watchdog_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STRAIT_TESTKIT_WATCHDOG_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the child should have aborted");
    let pid: u32 = stdout
        .lines()
        .find_map(|l| l.split("BROKER_PID=").nth(1))
        .unwrap_or_else(|| panic!("no pid in child output: {stdout}"))
        .trim()
        .parse()
        .unwrap();
    assert!(wait_dead(pid, Duration::from_secs(5)), "tansu {pid} leaked");
    // No destructor ran in the child, so its temp dir is ours to remove.
    if let Some(dir) = stdout
        .lines()
        .find_map(|l| l.split("BROKER_LOG_DIR=").nth(1))
    {
        let _ = std::fs::remove_dir_all(dir.trim());
    }
}
