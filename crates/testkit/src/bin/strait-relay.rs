//! `strait-relay`: the byte-relay floor for `scripts/bench`.
//!
//! A replicator must at least receive every byte from one socket and send it to another.
//! This program does exactly that and nothing else, so its CPU per GiB is the floor a
//! replicator's CPU per GiB is compared with. Three roles, each its own process:
//!
//! ```text
//! strait-relay sink   --listen 127.0.0.1:P1                       # reads and discards
//! strait-relay relay  --listen 127.0.0.1:P2 --upstream 127.0.0.1:P1 [--connections 1]
//! strait-relay source --connect 127.0.0.1:P2 --bytes 512MiB       # writes N bytes
//! strait-relay delay  --listen 127.0.0.1:P3 --upstream BROKER --delay-ms 25
//! strait-relay echo   --listen 127.0.0.1:P4 --request-bytes 32KiB --response-bytes 64
//! strait-relay ping   --connect 127.0.0.1:P4 --requests 20000 --request-bytes 32KiB --response-bytes 64
//! ```
//!
//! `echo` and `ping` are the *request floor*: what one request/response exchange over
//! loopback costs the side that sends it, with no framing, decoding or bookkeeping. `ping`
//! writes a request of `--request-bytes`, blocks until the `--response-bytes` answer has
//! been read, and repeats, one exchange at a time, so that like the replicator waiting for
//! a broker it sleeps and is woken once per exchange. `echo` reads each request and answers
//! it. `ping`'s CPU per exchange (measured from outside) is the fixed cost a Produce
//! request of that size carries at the least on this machine: the write, the loopback
//! delivery and the wake-up of the peer it runs, the read, and the sleep and wake-up.
//!
//! `delay` is not part of the floor: it is a high-latency link for `scripts/bench`. It
//! forwards every connection it accepts (until killed) to `--upstream`, holding each chunk
//! read in either direction for `--delay-ms` before writing it (store and forward with
//! timestamps: a reader thread and a writer thread per direction, so the delay adds
//! latency without limiting bandwidth). A broker advertising the proxy's address then
//! sits behind a round-trip time of twice the delay for every client.
//!
//! The relay accepts a connection, connects to the upstream, and copies both directions
//! with plain `read`/`write` on a 64 KiB buffer per direction, one thread per direction
//! (no `splice`, no `sendfile`, no `std::io::copy`, which may use them on Linux). It exits
//! after `--connections` connections have closed and prints one JSON line on stdout:
//! bytes relayed each way and wall seconds. Its CPU (user + system, including the kernel's
//! socket work on its side) is measured from outside, e.g. with `/usr/bin/time -v`.
//!
//! What it does not do, and a replicator does: framing, decoding, checksums, batching,
//! acknowledgements. The floor is the pure cost of moving the bytes through one process.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::Instant;

/// Buffer per direction.
const BUF: usize = 64 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("sink") => sink(&args[1..]),
        Some("relay") => relay(&args[1..]),
        Some("source") => source(&args[1..]),
        Some("delay") => delay(&args[1..]),
        Some("echo") => echo(&args[1..]),
        Some("ping") => ping(&args[1..]),
        _ => Err(usage()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strait-relay: {e}");
            ExitCode::from(2)
        }
    }
}

fn usage() -> String {
    "usage: strait-relay sink --listen ADDR | relay --listen ADDR --upstream ADDR [--connections N] \
     | source --connect ADDR --bytes SIZE | delay --listen ADDR --upstream ADDR --delay-ms MS \
     | echo --listen ADDR --request-bytes SIZE --response-bytes SIZE \
     | ping --connect ADDR --requests N --request-bytes SIZE --response-bytes SIZE"
        .to_string()
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn required(args: &[String], name: &str) -> Result<String, String> {
    flag(args, name).ok_or_else(|| format!("{name} is required; {}", usage()))
}

fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("bad size `{text}`"))?;
    let mult = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(format!("bad size unit in `{text}` (B, KiB, MiB, GiB)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{text}` too large"))
}

/// Connects to `addr`, retrying for up to 10 s (the peer may still be starting).
fn connect_retrying(addr: &str) -> Result<TcpStream, String> {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("connecting to {addr}: {e}"));
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// Copies `from` → `to` with plain read/write until EOF, then half-closes `to`.
fn pump(mut from: TcpStream, mut to: TcpStream) -> std::io::Result<u64> {
    let mut buf = vec![0u8; BUF];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
    let _ = to.shutdown(Shutdown::Write);
    Ok(total)
}

fn relay(args: &[String]) -> Result<(), String> {
    let listen = required(args, "--listen")?;
    let upstream = required(args, "--upstream")?;
    let connections: u64 = flag(args, "--connections")
        .map(|c| c.parse().map_err(|_| format!("bad --connections `{c}`")))
        .transpose()?
        .unwrap_or(1);
    let listener = TcpListener::bind(&listen).map_err(|e| format!("listening on {listen}: {e}"))?;
    let mut first: Option<Instant> = None;
    let (mut up, mut down) = (0u64, 0u64);
    for _ in 0..connections {
        let (client, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        first.get_or_insert_with(Instant::now);
        let server = connect_retrying(&upstream)?;
        let _ = (client.set_nodelay(true), server.set_nodelay(true));
        let (c2, s2) = (
            client.try_clone().map_err(|e| e.to_string())?,
            server.try_clone().map_err(|e| e.to_string())?,
        );
        let back = std::thread::spawn(move || pump(s2, c2));
        up += pump(client, server).map_err(|e| format!("client → upstream: {e}"))?;
        down += back
            .join()
            .map_err(|_| "upstream → client thread panicked".to_string())?
            .map_err(|e| format!("upstream → client: {e}"))?;
    }
    let secs = first.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
    println!(
        "{}",
        serde_json::json!({ "role": "relay", "bytes_up": up, "bytes_down": down, "secs": secs })
    );
    Ok(())
}

fn sink(args: &[String]) -> Result<(), String> {
    let listen = required(args, "--listen")?;
    let listener = TcpListener::bind(&listen).map_err(|e| format!("listening on {listen}: {e}"))?;
    let (mut conn, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    let mut buf = vec![0u8; BUF];
    let mut total = 0u64;
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("sink read: {e}")),
        }
    }
    println!("{}", serde_json::json!({ "role": "sink", "bytes": total }));
    Ok(())
}

fn source(args: &[String]) -> Result<(), String> {
    let connect = required(args, "--connect")?;
    let bytes = parse_size(&required(args, "--bytes")?)?;
    let mut conn = connect_retrying(&connect)?;
    // Non-constant data (a xorshift stream), although nothing downstream looks at it.
    let mut buf = vec![0u8; BUF];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    let t0 = Instant::now();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(BUF as u64) as usize;
        conn.write_all(&buf[..n])
            .map_err(|e| format!("source write: {e}"))?;
        left -= n as u64;
    }
    conn.shutdown(Shutdown::Write)
        .map_err(|e| format!("shutdown: {e}"))?;
    // Wait for the far side to close (everything was read).
    let mut sink = [0u8; 1024];
    while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
    println!(
        "{}",
        serde_json::json!({ "role": "source", "bytes": bytes, "secs": t0.elapsed().as_secs_f64() })
    );
    Ok(())
}

/// `delay`: forwards connections to the upstream, each chunk held for the delay.
fn delay(args: &[String]) -> Result<(), String> {
    let listen = required(args, "--listen")?;
    let upstream = required(args, "--upstream")?;
    let ms: u64 = required(args, "--delay-ms")?
        .parse()
        .map_err(|_| "bad --delay-ms".to_string())?;
    let delay = std::time::Duration::from_millis(ms);
    let listener = TcpListener::bind(&listen).map_err(|e| format!("listening on {listen}: {e}"))?;
    loop {
        let (client, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        let upstream = upstream.clone();
        std::thread::spawn(move || {
            let Ok(server) = connect_retrying(&upstream) else {
                return;
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                return;
            };
            let back = std::thread::spawn(move || delayed(s2, c2, delay));
            delayed(client, server, delay);
            let _ = back.join();
        });
    }
}

/// Copies `from` → `to`, each chunk written `delay` after it was read; a reader thread
/// keeps reading meanwhile, so throughput is not limited by the delay.
fn delayed(from: TcpStream, mut to: TcpStream, delay: std::time::Duration) {
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let reader = {
        let mut from = match from.try_clone() {
            Ok(f) => f,
            Err(_) => return,
        };
        std::thread::spawn(move || {
            let mut buf = vec![0u8; BUF];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
    };
    let mut failed = false;
    for (at, chunk) in rx {
        let due = at + delay;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        if to.write_all(&chunk).is_err() {
            failed = true;
            break;
        }
    }
    if failed {
        // The writer side is gone: close both ends so the reader and the peer stop.
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    } else {
        let _ = to.shutdown(Shutdown::Write);
    }
    let _ = reader.join();
}

/// `--request-bytes` and `--response-bytes` of `echo` and `ping`, each 1 B..=16 MiB.
fn exchange_sizes(args: &[String]) -> Result<(usize, usize), String> {
    let size = |name: &str| -> Result<usize, String> {
        let n = parse_size(&required(args, name)?)?;
        if !(1..=16 << 20).contains(&n) {
            return Err(format!("{name} must be 1 B to 16 MiB"));
        }
        usize::try_from(n).map_err(|_| format!("{name} too large"))
    };
    Ok((size("--request-bytes")?, size("--response-bytes")?))
}

/// `echo`: answers each request of one connection, until it closes.
fn echo(args: &[String]) -> Result<(), String> {
    let listen = required(args, "--listen")?;
    let (request, response) = exchange_sizes(args)?;
    let listener = TcpListener::bind(&listen).map_err(|e| format!("listening on {listen}: {e}"))?;
    let (mut conn, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    let _ = conn.set_nodelay(true);
    let mut inbound = vec![0u8; request];
    let answer = vec![0x5au8; response];
    let mut served = 0u64;
    loop {
        match conn.read_exact(&mut inbound) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(format!("echo read: {e}")),
        }
        conn.write_all(&answer)
            .map_err(|e| format!("echo write: {e}"))?;
        served += 1;
    }
    println!(
        "{}",
        serde_json::json!({ "role": "echo", "requests": served })
    );
    Ok(())
}

/// `ping`: `--requests` exchanges with an `echo`, one at a time.
fn ping(args: &[String]) -> Result<(), String> {
    let connect = required(args, "--connect")?;
    let requests: u64 = required(args, "--requests")?
        .parse()
        .map_err(|_| "bad --requests".to_string())?;
    let (request, response) = exchange_sizes(args)?;
    let mut conn = connect_retrying(&connect)?;
    let _ = conn.set_nodelay(true);
    let outbound = vec![0xa5u8; request];
    let mut answer = vec![0u8; response];
    let t0 = Instant::now();
    for _ in 0..requests {
        conn.write_all(&outbound)
            .map_err(|e| format!("ping write: {e}"))?;
        conn.read_exact(&mut answer)
            .map_err(|e| format!("ping read: {e}"))?;
    }
    let secs = t0.elapsed().as_secs_f64();
    conn.shutdown(Shutdown::Write)
        .map_err(|e| format!("shutdown: {e}"))?;
    println!(
        "{}",
        serde_json::json!({
            "role": "ping", "requests": requests, "request_bytes": request,
            "response_bytes": response, "secs": secs,
        })
    );
    Ok(())
}
