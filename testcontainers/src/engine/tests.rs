use super::*;
use std::os::unix::net::UnixListener;

fn serve_once(answer: &'static [u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("docker.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut req = [0u8; 256];
            let _ = s.read(&mut req);
            let _ = s.write_all(answer);
        }
    });
    (dir, format!("unix://{}", path.display()))
}

#[test]
fn an_engine_is_there_only_when_ping_answers_200() {
    let (_dir, host) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK");
    assert_eq!(ping_host(&host), Ok(()));
    let (_dir, host) = serve_once(b"HTTP/1.1 500 Internal Server Error\r\n\r\n");
    assert!(ping_host(&host).unwrap_err().contains("500"));
}

#[test]
fn no_engine_is_a_failure_that_says_what_is_missing() {
    let err = ping_host("unix:///nonexistent/docker.sock").unwrap_err();
    assert!(err.contains("/nonexistent/docker.sock"), "{err}");
    let message = missing(&err);
    assert!(message.contains("needs a Docker engine"), "{message}");
    assert!(message.contains("scripts/test-kafka"), "{message}");
    let err = ping_host("ssh://somewhere").unwrap_err();
    assert!(err.contains("only unix:// and tcp://"), "{err}");
}
