//! [`FaultProxy`]: a TCP proxy between a client and one upstream address, with faults that
//! can be switched on and off while connections are open.
//!
//! Built on std threads, independent of any async runtime, so it works the same from
//! plain and `#[tokio::test]` tests. Per connection and direction there is a reader thread
//! and a writer thread joined by a bounded queue of chunks; the writer applies the
//! faults:
//!
//! | fault | effect |
//! |---|---|
//! | [`set_delay`](FaultProxy::set_delay) | every chunk is held until `delay` after it was read (latency, not throughput) |
//! | [`stall`](FaultProxy::stall) | nothing is forwarded, connections stay open; data queues up (then TCP backpressure) and flows again on [`unstall`](FaultProxy::unstall) |
//! | [`cut`](FaultProxy::cut) | every open connection is closed at once (both sides, FIN); new connections are accepted and closed immediately until [`uncut`](FaultProxy::uncut) |
//! | [`reset`](FaultProxy::reset) | like `cut`, but every connection (open or new) is aborted with a TCP RST (`SO_LINGER` 0, then close), as a crashed peer or a middlebox does |
//! | [`corrupt`](FaultProxy::corrupt) | the next N bytes in a direction (over all connections) are bit-flipped (`b ^ 0xFF`) |
//! | [`corrupt_frames`](FaultProxy::corrupt_frames) | in the next N Kafka frames of a direction at least `min_len` long, `len` bytes at `from_end` before the frame's end are bit-flipped: the length prefix and the frame's start stay intact, so the damage lands in the payload (the records of a Fetch response), where only a CRC can see it |
//!
//! [`exempt_client_id`](FaultProxy::exempt_client_id) spares the connections of one Kafka
//! client (by the client id in its first request) from stalls, delays, corruption and
//! cuts of open connections: a test's own producer keeps writing a source whose
//! replicator is stalled, though both follow the same advertised address.
//!
//! [`restore`](FaultProxy::restore) clears every fault. Dropping the proxy closes every
//! connection and joins all its threads.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::{Result, io};

mod frames;
pub use frames::FrameCorruption;
use frames::{FrameCursor, client_id};

const CHUNK: usize = 64 * 1024;
/// Chunks queued per direction before the reader blocks (backpressure while stalled).
const QUEUE: usize = 64;
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ACCEPT_POLL: Duration = Duration::from_millis(5);

/// A direction of traffic through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client → upstream (requests).
    Upstream,
    /// Upstream → client (responses).
    Downstream,
}

impl Direction {
    fn index(self) -> usize {
        match self {
            Direction::Upstream => 0,
            Direction::Downstream => 1,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Corruption {
    skip: u64,
    flip: u64,
}

#[derive(Debug, Default)]
struct Faults {
    delay: [Duration; 2],
    stalled: bool,
    cut: bool,
    /// While cut: abort connections with RST instead of closing them.
    rst: bool,
    corrupt: [Corruption; 2],
    frames: [FrameCorruption; 2],
}

struct Conn {
    client: TcpStream,
    upstream: TcpStream,
    /// Set once the connection is being aborted with RST: nothing may send a FIN.
    reset: Arc<AtomicBool>,
    /// Set once its first request named an exempt client id: no faults apply.
    exempt: Arc<AtomicBool>,
}

impl Conn {
    fn close(&self) {
        if self.reset.load(Ordering::SeqCst) {
            // Aborting: wake the readers without sending anything; the last close sends
            // the RST.
            let _ = self.client.shutdown(Shutdown::Read);
            let _ = self.upstream.shutdown(Shutdown::Read);
            return;
        }
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.upstream.shutdown(Shutdown::Both);
    }

    /// Aborts the connection: `SO_LINGER` 0 on both sockets (the last close of each sends
    /// a RST, not a FIN) and read sides shut down so the pump threads end and close them.
    fn reset(&self) {
        self.reset.store(true, Ordering::SeqCst);
        abort_on_close(&self.client);
        abort_on_close(&self.upstream);
        self.close();
    }
}

/// `SO_LINGER` 0: closing the socket sends a RST and drops unsent data.
fn abort_on_close(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}

struct Shared {
    upstream: SocketAddr,
    faults: Mutex<Faults>,
    /// Signalled on every fault change and on shutdown (wakes stalled writers).
    changed: Condvar,
    shutdown: AtomicBool,
    conns: Mutex<HashMap<u64, Conn>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    next_conn: AtomicU64,
    accepted: AtomicU64,
    forwarded: [AtomicU64; 2],
    frames_corrupted: [AtomicU64; 2],
    /// Client-id prefix whose connections no fault touches.
    exempt: Mutex<Vec<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in one proxy thread must not take the others down with it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn faults(&self) -> MutexGuard<'_, Faults> {
        lock(&self.faults)
    }

    fn update(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut self.faults());
        self.changed.notify_all();
    }

    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) {
        if let Ok(h) = thread::Builder::new().name(name.into()).spawn(f) {
            let mut threads = lock(&self.threads);
            threads.retain(|t| !t.is_finished());
            threads.push(h);
        }
    }

    /// Closes every connection; with `spare_exempt`, not those of the exempt client.
    fn close_all(&self, spare_exempt: bool) {
        for conn in lock(&self.conns).values() {
            if !(spare_exempt && conn.exempt.load(Ordering::SeqCst)) {
                conn.close();
            }
        }
    }

    fn reset_all(&self) {
        for conn in lock(&self.conns).values() {
            if !conn.exempt.load(Ordering::SeqCst) {
                conn.reset();
            }
        }
    }
}

/// A TCP proxy on `127.0.0.1:<free port>` forwarding to one upstream address, with
/// runtime-controlled faults. See the [module docs](self).
///
/// ```no_run
/// # fn main() -> strait_testkit::Result<()> {
/// use std::time::Duration;
/// use strait_testkit::{Direction, FaultProxy, TansuBroker};
///
/// let broker = TansuBroker::start()?;
/// let proxy = FaultProxy::start(broker.addr())?;
/// // point the client under test at proxy.bootstrap() instead of broker.bootstrap()
/// proxy.set_delay(Direction::Downstream, Duration::from_millis(200));
/// proxy.cut(); // every connection drops now
/// proxy.restore(); // back to normal
/// # Ok(()) }
/// ```
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("upstream", &self.shared.upstream)
            .field("faults", &*self.shared.faults())
            .finish()
    }
}

impl FaultProxy {
    /// Listens on `127.0.0.1:0` and forwards every accepted connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding the proxy"))?;
        Self::start_on(listener, upstream)
    }

    /// Like [`start`](Self::start), on a listener the caller already bound (to know the
    /// proxy's port before the upstream exists, as
    /// [`TansuBroker::start_behind_proxy`](crate::TansuBroker::start_behind_proxy) does).
    pub fn start_on(listener: TcpListener, upstream: SocketAddr) -> Result<Self> {
        let addr = listener
            .local_addr()
            .map_err(io("reading the proxy address"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("making the proxy listener non-blocking"))?;
        let shared = Arc::new(Shared {
            upstream,
            faults: Mutex::new(Faults::default()),
            changed: Condvar::new(),
            shutdown: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            forwarded: [AtomicU64::new(0), AtomicU64::new(0)],
            frames_corrupted: [AtomicU64::new(0), AtomicU64::new(0)],
            exempt: Mutex::new(Vec::new()),
        });
        let s = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fault-proxy-accept".into())
            .spawn(move || accept_loop(listener, s))
            .map_err(io("spawning the proxy accept thread"))?;
        Ok(Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients should connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT` of the proxy, for `bootstrap.servers`.
    ///
    /// Note: a Kafka broker advertises its own address in Metadata, and clients connect
    /// to that after bootstrapping. To put *all* of a client's traffic through the proxy,
    /// start the broker with [`TansuBroker::start_behind_proxy`](crate::TansuBroker::start_behind_proxy),
    /// which makes it advertise the proxy's address.
    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// The upstream address.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// Adds `delay` to every chunk forwarded in `direction` from now on (zero = none).
    pub fn set_delay(&self, direction: Direction, delay: Duration) {
        self.shared.update(|f| f.delay[direction.index()] = delay);
    }

    /// Stops forwarding in both directions; connections stay open.
    pub fn stall(&self) {
        self.shared.update(|f| f.stalled = true);
    }

    /// Resumes forwarding after [`stall`](Self::stall); queued data flows.
    pub fn unstall(&self) {
        self.shared.update(|f| f.stalled = false);
    }

    /// Closes every open connection now and refuses (accepts and closes) new ones until
    /// [`uncut`](Self::uncut) or [`restore`](Self::restore).
    pub fn cut(&self) {
        self.shared.update(|f| {
            f.cut = true;
            f.rst = false;
        });
        self.shared.close_all(true);
    }

    /// Aborts every open connection now with a TCP RST (both sides: the client and the
    /// upstream each get one) and answers new connections with a RST until
    /// [`uncut`](Self::uncut) or [`restore`](Self::restore). A peer reading sees
    /// `ECONNRESET`, not an orderly end of stream; data not yet forwarded is dropped.
    pub fn reset(&self) {
        self.shared.update(|f| {
            f.cut = true;
            f.rst = true;
        });
        self.shared.reset_all();
    }

    /// Accepts and forwards new connections again after [`cut`](Self::cut) or
    /// [`reset`](Self::reset).
    pub fn uncut(&self) {
        self.shared.update(|f| {
            f.cut = false;
            f.rst = false;
        });
    }

    /// Bit-flips the next `n` bytes forwarded in `direction`, over all connections.
    pub fn corrupt(&self, direction: Direction, n: u64) {
        self.corrupt_after(direction, 0, n);
    }

    /// Forwards the next `skip` bytes in `direction` intact, then bit-flips `n` bytes.
    /// (Skipping 4 bytes of a Kafka frame keeps its length prefix and corrupts the body.)
    pub fn corrupt_after(&self, direction: Direction, skip: u64, n: u64) {
        self.shared
            .update(|f| f.corrupt[direction.index()] = Corruption { skip, flip: n });
    }

    /// Damages the payload of the next `spec.frames` Kafka frames forwarded in `direction`
    /// that are at least `spec.min_len` long (see [`FrameCorruption`]). Frames are
    /// followed per connection from its first byte (4-byte big-endian length prefixes).
    pub fn corrupt_frames(&self, direction: Direction, spec: FrameCorruption) {
        self.shared.update(|f| f.frames[direction.index()] = spec);
    }

    /// Spares connections whose first request's client id starts with `prefix` from
    /// every fault (stall, delay, corruption, cut and reset of open connections; while
    /// cut, new connections are refused whoever makes them). Applies to connections
    /// opened from now on. librdkafka in the testkit uses `strait-testkit-rdkafka`.
    pub fn exempt_client_id(&self, prefix: &str) {
        *lock(&self.shared.exempt) = vec![prefix.as_bytes().to_vec()];
    }

    /// [`exempt_client_id`](Self::exempt_client_id) for several prefixes: a connection
    /// whose client id starts with any of them is spared.
    pub fn exempt_client_ids(&self, prefixes: &[&str]) {
        *lock(&self.shared.exempt) = prefixes.iter().map(|p| p.as_bytes().to_vec()).collect();
    }

    /// Frames damaged so far by [`corrupt_frames`](Self::corrupt_frames) in `direction`.
    pub fn frames_corrupted(&self, direction: Direction) -> u64 {
        self.shared.frames_corrupted[direction.index()].load(Ordering::Relaxed)
    }

    /// Clears every fault: no delay, not stalled, not cut, no pending corruption.
    pub fn restore(&self) {
        self.shared.update(|f| *f = Faults::default());
    }

    /// Connections accepted so far (including ones refused while cut).
    pub fn connections_accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }

    /// Connections currently open through the proxy.
    pub fn open_connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Bytes forwarded so far in `direction` (handed to the receiving socket).
    pub fn bytes_forwarded(&self, direction: Direction) -> u64 {
        self.shared.forwarded[direction.index()].load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.update(|f| f.cut = true);
        self.shared.close_all(false);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        // Connection threads exit once their sockets are shut down; new ones can't start
        // (the acceptor is gone), so draining this list joins them all.
        loop {
            let batch: Vec<_> = std::mem::take(&mut *lock(&self.shared.threads));
            if batch.is_empty() {
                break;
            }
            self.shared.close_all(false);
            for t in batch {
                let _ = t.join();
            }
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.shutdown.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::Relaxed);
                let (cut, rst) = {
                    let f = shared.faults();
                    (f.cut, f.rst)
                };
                if cut {
                    if rst {
                        abort_on_close(&client);
                    } else {
                        let _ = client.shutdown(Shutdown::Both);
                    }
                    continue;
                }
                let s = Arc::clone(&shared);
                shared.spawn("fault-proxy-conn", move || connect(client, s));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => thread::sleep(ACCEPT_POLL),
        }
    }
}

/// Connects upstream for one accepted client and starts its four pump threads.
fn connect(client: TcpStream, shared: Arc<Shared>) {
    let _ = client.set_nonblocking(false);
    let upstream = match TcpStream::connect_timeout(&shared.upstream, UPSTREAM_CONNECT_TIMEOUT) {
        Ok(u) => u,
        Err(_) => {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let clones = (|| {
        Some((
            client.try_clone().ok()?,
            client.try_clone().ok()?,
            upstream.try_clone().ok()?,
            upstream.try_clone().ok()?,
        ))
    })();
    let Some((client_r, client_w, upstream_r, upstream_w)) = clones else {
        let _ = client.shutdown(Shutdown::Both);
        let _ = upstream.shutdown(Shutdown::Both);
        return;
    };
    let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    let reset = Arc::new(AtomicBool::new(false));
    let exempt = Arc::new(AtomicBool::new(false));
    {
        let mut conns = lock(&shared.conns);
        // A cut (or shutdown) may have happened while we were connecting.
        if shared.faults().cut || shared.shutdown.load(Ordering::SeqCst) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
            return;
        }
        conns.insert(
            id,
            Conn {
                client,
                upstream,
                reset: Arc::clone(&reset),
                exempt: Arc::clone(&exempt),
            },
        );
    }
    // The connection stays in `conns` until all four threads are done, so a cut or a
    // drop can always reach (and unblock) a reader still waiting on its socket.
    let live = Arc::new(AtomicUsize::new(4));
    for (direction, from, to) in [
        (Direction::Upstream, client_r, upstream_w),
        (Direction::Downstream, upstream_r, client_w),
    ] {
        let (tx, rx) = sync_channel::<(Instant, Vec<u8>)>(QUEUE);
        let guard = LiveGuard::new(&shared, &live, id);
        let s = Arc::clone(&shared);
        let flag = Arc::clone(&exempt);
        shared.spawn("fault-proxy-read", move || {
            let _guard = guard;
            read_side(from, tx, &s, direction, &flag);
        });
        let guard = LiveGuard::new(&shared, &live, id);
        let s = Arc::clone(&shared);
        let reset = Arc::clone(&reset);
        let exempt = Arc::clone(&exempt);
        shared.spawn("fault-proxy-write", move || {
            let _guard = guard;
            if !write_side(to, rx, &s, direction, &reset, &exempt) {
                // Cut, shutdown or a failed write: tear the whole connection down.
                if let Some(conn) = lock(&s.conns).get(&id) {
                    conn.close();
                }
            }
        });
    }
}

/// Counts a connection's live threads; the last one to finish (or a thread that could
/// not be spawned, whose closure is dropped) forgets the connection.
struct LiveGuard {
    shared: Arc<Shared>,
    live: Arc<AtomicUsize>,
    id: u64,
}

impl LiveGuard {
    fn new(shared: &Arc<Shared>, live: &Arc<AtomicUsize>, id: u64) -> Self {
        Self {
            shared: Arc::clone(shared),
            live: Arc::clone(live),
            id,
        }
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if self.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            lock(&self.shared.conns).remove(&self.id);
        }
    }
}

fn read_side(
    mut from: TcpStream,
    tx: SyncSender<(Instant, Vec<u8>)>,
    shared: &Shared,
    direction: Direction,
    exempt: &AtomicBool,
) {
    let mut buf = vec![0u8; CHUNK];
    // The start of the first request, until its client id is known.
    let prefix = lock(&shared.exempt).clone();
    let mut first: Option<Vec<u8>> =
        (direction == Direction::Upstream && !prefix.is_empty()).then(Vec::new);
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(head) = first.as_mut() {
                    head.extend_from_slice(&buf[..n]);
                    if let Some(id) = client_id(head) {
                        let spared = prefix.iter().any(|want| id.starts_with(want));
                        exempt.store(spared, Ordering::SeqCst);
                        first = None;
                    } else if head.len() > 1024 {
                        first = None;
                    }
                }
                let due = Instant::now() + shared.faults().delay[direction.index()];
                if tx.send((due, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    // Dropping tx tells the writer there is no more data.
}

/// Forwards chunks from `rx` to `to`, applying the faults. Returns true when the source
/// ended cleanly (the half-close is passed on), false on cut, reset, shutdown or a write
/// error. Once `reset` is set it never shuts `to` down (that would send a FIN before the
/// RST).
fn write_side(
    mut to: TcpStream,
    rx: Receiver<(Instant, Vec<u8>)>,
    shared: &Shared,
    direction: Direction,
    reset: &AtomicBool,
    exempt: &AtomicBool,
) -> bool {
    let d = direction.index();
    let mut frames = FrameCursor::default();
    let resetting = || reset.load(Ordering::SeqCst);
    while let Ok((due, mut chunk)) = rx.recv() {
        if exempt.load(Ordering::SeqCst) {
            if shared.shutdown.load(Ordering::SeqCst) || to.write_all(&chunk).is_err() {
                let _ = to.shutdown(Shutdown::Both);
                return false;
            }
            shared.forwarded[d].fetch_add(chunk.len() as u64, Ordering::Relaxed);
            continue;
        }
        // Hold until due and not stalled; give up on cut/shutdown.
        {
            let mut faults = shared.faults();
            loop {
                if resetting() {
                    return false;
                }
                if faults.cut || shared.shutdown.load(Ordering::SeqCst) {
                    let _ = to.shutdown(Shutdown::Both);
                    return false;
                }
                let now = Instant::now();
                if faults.stalled {
                    faults = match shared.changed.wait(faults) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                } else if now < due {
                    faults = match shared.changed.wait_timeout(faults, due - now) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                } else {
                    break;
                }
            }
            let hit = frames.apply(&mut chunk, &mut faults.frames[d]);
            if hit > 0 {
                shared.frames_corrupted[d].fetch_add(hit, Ordering::Relaxed);
            }
            let c = &mut faults.corrupt[d];
            for b in chunk.iter_mut() {
                if c.skip > 0 {
                    c.skip -= 1;
                } else if c.flip > 0 {
                    *b ^= 0xFF;
                    c.flip -= 1;
                } else {
                    break;
                }
            }
        }
        // Counted before the write, so a peer that has received the bytes always sees
        // them counted.
        shared.forwarded[d].fetch_add(chunk.len() as u64, Ordering::Relaxed);
        if to.write_all(&chunk).is_err() {
            if !resetting() {
                let _ = to.shutdown(Shutdown::Both);
            }
            return false;
        }
    }
    if resetting() {
        return false;
    }
    // The reading side hit EOF (or an error): pass the half-close on.
    let _ = to.shutdown(Shutdown::Write);
    true
}
