//! `strait check` against a hostile peer (issue 12, item 5): a 7-byte ApiVersions answer with
//! a compact array length of 2^31 used to abort the process (exit 134, "memory allocation of
//! 68719476736 bytes failed"); now the check fails cleanly with exit 3 (a check failed) and names the API.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// Error 0, compact array length 2^31 (+1, the compact encoding).
const HOSTILE_API_VERSIONS: [u8; 7] = [0, 0, 0x81, 0x80, 0x80, 0x80, 0x08];

/// Answers every request on `s` with the hostile body under the request's correlation id.
fn serve(mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    loop {
        let mut len = [0; 4];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        let Ok(len) = usize::try_from(i32::from_be_bytes(len)) else {
            return;
        };
        let mut req = vec![0; len];
        if len < 8 || s.read_exact(&mut req).is_err() {
            return;
        }
        let mut resp = ((4 + HOSTILE_API_VERSIONS.len()) as i32)
            .to_be_bytes()
            .to_vec();
        resp.extend_from_slice(&req[4..8]); // correlation id
        resp.extend_from_slice(&HOSTILE_API_VERSIONS);
        if s.write_all(&resp).is_err() {
            return;
        }
    }
}

/// A hostile peer on a background thread; returns its address.
fn hostile_peer() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    addr
}

#[test]
fn check_against_a_hostile_peer_exits_3_with_a_clear_message() {
    let addr = hostile_peer();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("hostile.toml");
    std::fs::write(
        &cfg,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{addr}\"\nconnect_timeout = \"2s\"\n\
             request_timeout = \"2s\"\n[clusters.b]\nbootstrap_servers = \"{addr}\"\n\
             connect_timeout = \"2s\"\nrequest_timeout = \"2s\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n[metrics]\nenabled = false\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["check", "-c", cfg.to_str().unwrap()])
        .env_remove("RUST_LOG")
        .output()
        .expect("run strait");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{all}");
    assert_eq!(
        out.status.code(),
        Some(3),
        "not an abort (134), but a check that failed: {all}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{all}");
    assert!(!all.contains("memory allocation"), "{all}");
    assert!(all.contains("✗ reachable"), "{all}");
    assert!(
        all.contains("protocol error") && all.contains("ApiVersions") && all.contains("exceeds"),
        "the failure names the API and the bound: {all}"
    );
    assert!(all.contains("check(s) failed"), "{all}");
}
