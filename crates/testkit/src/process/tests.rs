use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn a_process_gets_its_arguments_logs_its_output_and_is_killed_and_reaped_on_drop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("fake-strait");
    std::fs::write(&bin, "#!/bin/sh\necho \"args: $*\"\nexec sleep 30\n").expect("script");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let log = dir.path().join("log");
    let mut p = StraitProcess::run(&bin, Path::new("c.toml"), &log, &["--once"]);
    let pid = p.pid();
    let start = Instant::now();
    while !p.log_text().contains("args:") && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(p.log_tail(), "args: run --once -c c.toml");
    p.assert_running();
    drop(p);
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "reaped");
}
