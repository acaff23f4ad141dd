//! FaultProxy against an echo server, and against a real Tansu broker.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use strait_testkit::probe::{api_versions, api_versions_on};
use strait_testkit::{Direction, FaultProxy, TansuBroker};

/// An echo server on a free port; runs until the test process ends.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn connect(proxy: &FaultProxy) -> TcpStream {
    let s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn echo(s: &mut TcpStream, msg: &[u8]) -> Vec<u8> {
    s.write_all(msg).unwrap();
    let mut buf = vec![0u8; msg.len()];
    s.read_exact(&mut buf).unwrap();
    buf
}

/// True if the connection is closed (EOF or reset) within the read timeout.
fn is_closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

#[test]
fn forwards_both_ways() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut s = connect(&proxy);
    assert_eq!(echo(&mut s, b"hello"), b"hello");
    let big: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
    let writer = {
        let mut w = s.try_clone().unwrap();
        let big = big.clone();
        thread::spawn(move || w.write_all(&big).unwrap())
    };
    let mut back = vec![0u8; big.len()];
    s.read_exact(&mut back).unwrap();
    writer.join().unwrap();
    assert_eq!(back, big);
    assert_eq!(proxy.bytes_forwarded(Direction::Upstream), 300_005);
    assert_eq!(proxy.bytes_forwarded(Direction::Downstream), 300_005);
    assert_eq!(proxy.connections_accepted(), 1);
    assert_eq!(proxy.open_connections(), 1);
    drop(s);
    let end = Instant::now() + Duration::from_secs(2);
    while proxy.open_connections() > 0 && Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        proxy.open_connections(),
        0,
        "a closed connection is forgotten"
    );
}

#[test]
fn delay_per_direction() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut s = connect(&proxy);
    echo(&mut s, b"warm");
    proxy.set_delay(Direction::Upstream, Duration::from_millis(150));
    proxy.set_delay(Direction::Downstream, Duration::from_millis(100));
    let t = Instant::now();
    assert_eq!(echo(&mut s, b"slow"), b"slow");
    let rtt = t.elapsed();
    assert!(rtt >= Duration::from_millis(250), "{rtt:?}");
    assert!(rtt < Duration::from_secs(2), "{rtt:?}");
    proxy.restore();
    let t = Instant::now();
    echo(&mut s, b"fast");
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn cut_closes_everything_and_refuses_until_uncut() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut a = connect(&proxy);
    let mut b = connect(&proxy);
    echo(&mut a, b"a");
    echo(&mut b, b"b");
    proxy.cut();
    assert!(is_closed(&mut a));
    assert!(is_closed(&mut b));
    // Every proxy thread of the cut connections ends, although a and b are still open.
    let end = Instant::now() + Duration::from_secs(2);
    while proxy.open_connections() > 0 && Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(proxy.open_connections(), 0);
    let mut c = connect(&proxy);
    let _ = c.write_all(b"x");
    assert!(is_closed(&mut c), "new connections are refused while cut");
    proxy.uncut();
    let mut d = connect(&proxy);
    assert_eq!(echo(&mut d, b"back"), b"back");
}

#[test]
fn stall_keeps_connections_open_and_resumes() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut s = connect(&proxy);
    echo(&mut s, b"ok");
    proxy.stall();
    s.write_all(b"held").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 4];
    let err = s.read(&mut buf).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    assert_eq!(proxy.open_connections(), 1);
    proxy.unstall();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"held");
}

#[test]
fn corrupt_flips_the_next_bytes_only() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut s = connect(&proxy);
    proxy.corrupt(Direction::Downstream, 3);
    assert_eq!(
        echo(&mut s, b"abcdef"),
        [!b'a', !b'b', !b'c', b'd', b'e', b'f']
    );
    assert_eq!(echo(&mut s, b"clean"), b"clean");
    proxy.corrupt_after(Direction::Upstream, 2, 1);
    assert_eq!(echo(&mut s, b"xyz"), [b'x', b'y', !b'z']);
    assert_eq!(echo(&mut s, b"clean"), b"clean");
}

#[test]
fn drop_closes_connections_and_the_listener() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let addr = proxy.addr();
    let mut s = connect(&proxy);
    echo(&mut s, b"hi");
    proxy.stall(); // a writer blocked in a stall must not hang drop
    s.write_all(b"pending").unwrap();
    let t = Instant::now();
    drop(proxy);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(is_closed(&mut s));
    assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err());
}

#[test]
fn upstream_down_closes_the_client() {
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = FaultProxy::start(dead).unwrap();
    let mut s = connect(&proxy);
    assert!(is_closed(&mut s));
}

#[test]
fn kafka_through_the_proxy() {
    let broker = TansuBroker::start().unwrap();
    let proxy = FaultProxy::start(broker.addr()).unwrap();
    let timeout = Duration::from_secs(2);
    let apis = api_versions(proxy.addr(), timeout).unwrap();
    assert!(apis.iter().any(|a| a.api_key == 18));

    // Corrupt a request body (keep the 4-byte length): the broker can't answer it.
    proxy.corrupt_after(Direction::Upstream, 4, 4);
    assert!(api_versions(proxy.addr(), timeout).is_err());
    // Corrupt a response body: our decoder rejects it.
    proxy.corrupt_after(Direction::Downstream, 4, 4);
    assert!(api_versions(proxy.addr(), timeout).is_err());
    api_versions(proxy.addr(), timeout).unwrap();

    // A cut drops an open connection; after uncut a new one works.
    let mut conn = TcpStream::connect(proxy.addr()).unwrap();
    conn.set_read_timeout(Some(timeout)).unwrap();
    api_versions_on(&mut conn).unwrap();
    proxy.cut();
    assert!(api_versions_on(&mut conn).is_err());
    proxy.uncut();
    api_versions(proxy.addr(), timeout).unwrap();

    // Delay shows up in the round trip.
    proxy.set_delay(Direction::Downstream, Duration::from_millis(200));
    let t = Instant::now();
    api_versions(proxy.addr(), timeout).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));
}

#[test]
fn a_broker_behind_the_proxy_sends_all_client_traffic_through_it() {
    use strait_testkit::rdkafka::{self, ConsumeOptions, ProduceOptions};
    use strait_testkit::{BrokerOptions, DataGen, RecordSpec};

    let (broker, proxy) = TansuBroker::start_behind_proxy(BrokerOptions::default()).unwrap();
    let bs = proxy.bootstrap();
    let records = DataGen::new(5).records(
        200,
        &RecordSpec {
            value_len: Some(1000),
            ..RecordSpec::default()
        },
    );
    rdkafka::produce(&bs, "via-proxy", &records, &ProduceOptions::default()).unwrap();
    // librdkafka followed Metadata to the advertised (proxy) address for the data.
    assert!(proxy.bytes_forwarded(Direction::Upstream) > 200_000);
    let read = rdkafka::consume(&bs, "via-proxy", &ConsumeOptions::count(200)).unwrap();
    assert_eq!(read.len(), 200);
    assert!(proxy.bytes_forwarded(Direction::Downstream) > 200_000);
    // The broker itself still answers directly.
    api_versions(broker.addr(), Duration::from_secs(2)).unwrap();
}

/// An upstream that accepts one connection and reports how its read of it ended.
fn one_shot_upstream() -> (
    SocketAddr,
    std::sync::mpsc::Receiver<std::io::Result<usize>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 64];
        let _ = conn.read(&mut buf); // the "ping"
        let _ = conn.write_all(b"pong");
        let _ = tx.send(conn.read(&mut buf));
    });
    (addr, rx)
}

#[test]
fn reset_aborts_both_sides_with_a_rst_and_refuses_new_connections_with_one() {
    let (upstream, ended) = one_shot_upstream();
    let proxy = FaultProxy::start(upstream).unwrap();
    let mut s = connect(&proxy);
    s.write_all(b"ping").unwrap();
    let mut pong = [0u8; 4];
    s.read_exact(&mut pong).unwrap();
    proxy.reset();
    // The client sees ECONNRESET, not an orderly EOF.
    let mut b = [0u8; 1];
    let err = s.read(&mut b).expect_err("a reset, not an EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    // So does the upstream.
    let up = ended.recv_timeout(Duration::from_secs(10)).unwrap();
    let err = up.expect_err("the upstream sees a reset, not an EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    // New connections are reset too, until uncut.
    let mut s = connect(&proxy);
    match s.read(&mut b) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        Ok(n) => panic!("read {n} bytes from a reset proxy"),
    }
    proxy.uncut();
    let echo_proxy = FaultProxy::start(echo_server()).unwrap();
    echo_proxy.reset();
    echo_proxy.uncut();
    let mut s = connect(&echo_proxy);
    assert_eq!(echo(&mut s, b"back"), b"back");
}

/// A Kafka-style frame: 4-byte big-endian length, then `body`.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

#[test]
fn corrupt_frames_flips_bytes_near_the_end_of_large_frames_only() {
    use strait_testkit::FrameCorruption;
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut s = connect(&proxy);
    proxy.corrupt_frames(
        Direction::Downstream,
        FrameCorruption {
            frames: 2,
            min_len: 100,
            from_end: 10,
            len: 3,
        },
    );
    let small = frame(&[1u8; 50]);
    let large = frame(&[2u8; 300]);
    // Small frames pass intact; the next two large ones are damaged at 290..293 of
    // their bodies, the third is not (frames: 2).
    let mut sent = Vec::new();
    for f in [&small, &large, &small, &large, &large] {
        sent.extend_from_slice(f);
    }
    let got = echo(&mut s, &sent);
    let mut want = sent.clone();
    let second_large = small.len() + large.len() + small.len();
    for start in [small.len(), second_large] {
        for b in &mut want[start + 4 + 290..start + 4 + 293] {
            *b ^= 0xFF;
        }
    }
    assert_eq!(got, want);
    assert_eq!(proxy.frames_corrupted(Direction::Downstream), 2);
    assert_eq!(proxy.frames_corrupted(Direction::Upstream), 0);
}

/// A request frame with `client_id` in its header (api key 18, version 0, correlation 7).
fn request(client_id: &str) -> Vec<u8> {
    let mut body = vec![0, 18, 0, 0, 0, 0, 0, 7];
    body.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    body.extend_from_slice(client_id.as_bytes());
    frame(&body)
}

#[test]
fn an_exempt_client_id_is_spared_from_stalls_and_cuts() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    proxy.exempt_client_id("test-producer");
    let mut spared = connect(&proxy);
    let hello = request("test-producer-1");
    assert_eq!(echo(&mut spared, &hello), hello);
    let mut other = connect(&proxy);
    let theirs = request("strait");
    assert_eq!(echo(&mut other, &theirs), theirs);

    proxy.stall();
    assert_eq!(echo(&mut spared, b"still"), b"still");
    other
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    other.write_all(b"held").unwrap();
    let mut b = [0u8; 4];
    assert!(
        other.read_exact(&mut b).is_err(),
        "the other one is stalled"
    );
    proxy.unstall();
    proxy.reset();
    assert_eq!(echo(&mut spared, b"alive"), b"alive");
    // Between unstall and reset the proxy may already forward the held bytes and their
    // echo: they may arrive before the cut does (on a loaded machine they did), then the
    // connection must be closed.
    assert!(closed_after_echo_of(&mut other, b"held"));
}

/// Whether `s` reaches EOF or an error, after at most an echo of `pending` (bytes that
/// were legitimately in flight when it was cut), within 5 s.
fn closed_after_echo_of(s: &mut TcpStream, pending: &[u8]) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 16];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(n) => {
                got.extend_from_slice(&b[..n]);
                if !pending.starts_with(&got) {
                    return false;
                }
            }
            Err(e) => return !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        }
    }
}
