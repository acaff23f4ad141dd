"""Pieces of the scale-out case of scripts/bench (bench_scale_out.py): processes started
and always stopped, Tansu brokers, librdkafka readers (digests, the end watch), the
members' /metrics, and the live producer and tailer run as helper processes.

Every process started through `Procs` is stopped by its owner's finally block, and gets
PR_SET_PDEATHSIG so that it dies with this process if that is killed.
"""

import calendar
import ctypes
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import json
import urllib.request

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1 << 20
GIB = 1 << 30


class BenchError(Exception):
    """A run that could not be measured, with the reason (the report prints it)."""


def log(msg):
    print(f"scale-out: {msg}", file=sys.stderr, flush=True)


def parse_size(s):
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB)?", s.strip())
    if not m:
        raise SystemExit(f"bad size {s!r} (e.g. 512MiB)")
    return int(m.group(1)) * {None: 1, "KiB": 1 << 10, "MiB": MIB, "GiB": GIB}[m.group(2)]


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: the child gets SIGKILL if this process dies first.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Procs:
    """Every process this script starts; `stop_all` ends the ones still running."""

    def __init__(self):
        self.live = []

    def start(self, argv, log_path, env=None):
        f = open(log_path, "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             preexec_fn=_die_with_parent, env=env)
        f.close()
        p.reaped = None
        self.live.append(p)
        return p

    def stop(self, p, grace=20.0):
        """SIGTERM, wait up to `grace` s (then SIGKILL); returns (exit status, rusage)."""
        if p.reaped is None:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            p.reaped = wait_rusage(p, grace)
        if p in self.live:
            self.live.remove(p)
        return p.reaped

    def stop_all(self):
        for p in list(self.live):
            if p.reaped is None and p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in list(self.live):
            self.stop(p, 10.0)


def wait_rusage(p, grace):
    """Reaps `p` with wait4 (its own CPU), SIGKILL after `grace` s.

    `maxrss_mib` is wait4's ru_maxrss, which for a child of this harness is at least the
    harness's RSS when it forked (Linux carries the RSS a process had before exec into it):
    an upper bound, not the child's own. Report VmHWM (`proc_hwm_mib`) instead."""
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by Popen already
            return {"exit": p.returncode, "killed": False, "cpu": None, "maxrss_mib": None}
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return {"exit": p.returncode, "killed": False, "cpu": ru.ru_utime + ru.ru_stime,
                    "user": ru.ru_utime, "sys": ru.ru_stime, "maxrss_mib": ru.ru_maxrss / 1024}
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            return {"exit": p.returncode, "killed": True, "cpu": ru.ru_utime + ru.ru_stime,
                    "maxrss_mib": ru.ru_maxrss / 1024}
        time.sleep(0.05)


def proc_cpu(pid):
    """user + system CPU seconds of a running process, from /proc/<pid>/stat."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_hwm_mib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"nothing listens on port {port} after {within:.0f} s")


def start_broker(procs, tansu, out, name):
    port = free_port()
    env = dict(os.environ, NO_COLOR="1")
    p = procs.start([tansu, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                     "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
                     "--storage-engine", f"memory://{name}/", "--cluster-id", name],
                    os.path.join(out, f"{name}.tansu.log"), env)
    wait_port(port)
    return p, f"127.0.0.1:{port}"


# ---------------------------------------------------------------- librdkafka side

def consumer(bootstrap, **extra):
    conf = {"bootstrap.servers": bootstrap, "group.id": "strait-bench-scale-out",
            "enable.auto.commit": False, "auto.offset.reset": "error",
            "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 500}
    conf.update(extra)
    return Consumer(conf)


def topic_ready(client, topic, partitions):
    """Whether `topic` exists with `partitions` partitions (the members create it)."""
    try:
        # All topics, not this one by name: naming it could auto-create it on some brokers.
        t = client.list_topics(timeout=1).topics.get(topic)
    except Exception:  # a metadata timeout: not yet
        return False
    return t is not None and t.error is None and len(t.partitions) == partitions


def read_digest(bootstrap, topic, partitions, expect=None, within=300.0):
    """Per partition: records and a BLAKE2b over (key, value, headers, timestamp) in order,
    read to the end (the Fetch high watermark; Tansu's ListOffsets(latest) under-reports)
    and, with `expect`, at least that many records."""
    c = consumer(bootstrap, **{"enable.partition.eof": True})
    counts = [0] * partitions
    hashes = [hashlib.blake2b(digest_size=16) for _ in range(partitions)]
    at_end = set()
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + within
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise BenchError(f"reading {topic} on {bootstrap}: no end after {within:.0f} s "
                                 f"({sum(counts)} records)")
            for m in c.consume(10000, 0.5):
                err = m.error()
                p = m.partition()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if expect is None or counts[p] >= expect[p]:
                            at_end.add(p)
                        continue
                    raise BenchError(f"reading {topic}: {err}")
                counts[p] += 1
                h = hashes[p]
                for part in (m.key(), m.value()):
                    h.update(b"\x00" if part is None else len(part).to_bytes(4, "little") + part)
                for name, value in m.headers() or []:
                    h.update(name.encode() + b"\x01" + (value or b""))
                h.update(m.timestamp()[1].to_bytes(8, "little", signed=True))
    finally:
        c.close()
    return {"counts": counts, "hashes": [h.hexdigest() for h in hashes]}


def compare(src, dst):
    """Source vs target digests: identical partitions, records missing or extra."""
    same = sum(1 for a, b in zip(src["hashes"], dst["hashes"]) if a == b)
    missing = sum(max(0, a - b) for a, b in zip(src["counts"], dst["counts"]))
    extra = sum(max(0, b - a) for a, b in zip(src["counts"], dst["counts"]))
    differ = [p for p, (a, b) in enumerate(zip(src["hashes"], dst["hashes"])) if a != b]
    return {"identical_partitions": same, "partitions": len(src["counts"]), "missing": missing,
            "extra": extra, "differing": differ[:8], "ok": same == len(src["counts"])}


class EndWatch:
    """Whether every target partition holds its last source offset (n - 1): librdkafka
    fetches exactly there, and a partition is done once that record arrives."""

    def __init__(self, bootstrap, topic, ends):
        self.topic = topic
        self.pending = {p: n for p, n in enumerate(ends) if n > 0}
        self.c = consumer(bootstrap, **{"fetch.wait.max.ms": 100})
        self.c.assign([TopicPartition(topic, p, n - 1) for p, n in self.pending.items()])

    def poll(self, timeout):
        for m in self.c.consume(1000, timeout):
            if m.error() is not None:
                continue  # Tansu answers an offset past the end with nothing; Kafka errs
            p = m.partition()
            if p in self.pending and m.offset() >= self.pending[p] - 1:
                del self.pending[p]
                self.c.incremental_unassign([TopicPartition(self.topic, p)])
        return not self.pending

    def close(self):
        self.c.close()


# ---------------------------------------------------------------- strait members

METRIC = re.compile(r'^(\w+)\{([^}]*)\}\s+(\S+)')


def scrape(port, topic):
    """A member's view from its /metrics: {partition: lag}, generation, rebalances, time
    spent rebalancing. None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    view = {"lag": {}, "generation": None, "rebalances": None, "rebalancing_s": None}
    for line in text.splitlines():
        m = METRIC.match(line)
        if not m:
            continue
        name, labels, value = m.groups()
        if name == "strait_lag_offsets" and f'topic="{topic}"' in labels:
            pm = re.search(r'partition="(-?\d+)"', labels)
            if pm:
                view["lag"][int(pm.group(1))] = float(value)
        elif name == "strait_scale_generation":
            view["generation"] = int(float(value))
        elif name == "strait_scale_rebalances_total":
            view["rebalances"] = int(float(value))
        elif name == "strait_scale_rebalancing_seconds":
            view["rebalancing_s"] = float(value)
    return view


def member_config(path, source, target, topic, port, group, fetch_max_wait_ms=None):
    """A member's config: one flow of `topic`, `[flows.scale_out]` with `group`'s
    session_timeout and rebalance_timeout, metrics on `port`."""
    engine = f'[engine]\nfetch_max_wait = "{fetch_max_wait_ms}ms"\n' if fetch_max_wait_ms else ""
    text = f"""[clusters.src]
bootstrap_servers = ["{source}"]
[clusters.dst]
bootstrap_servers = ["{target}"]
[[flows]]
source = "src"
target = "dst"
[flows.topics]
include = ["{topic}"]
start_position = "earliest"
[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[flows.scale_out]
# Dynamic members: Tansu's static membership is unreliable (docs/compatibility.md).
instance_id = ""
session_timeout = "{group['session_timeout']}"
rebalance_timeout = "{group['rebalance_timeout']}"
{engine}[metrics]
listen = "127.0.0.1:{port}"
[logging]
level = "{os.environ.get('STRAIT_SCALE_LOG', 'info')}"
"""
    with open(path, "w") as f:
        f.write(text)


ANSI = re.compile(r"\x1b\[[0-9;]*m")
STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d(?:\.\d+)?)Z")


class Member:
    """One `strait run` process of the flow, its metrics port and log."""

    def __init__(self, procs, strait, out, name, source, target, topic, group,
                 fetch_max_wait_ms=None):
        self.name = name
        self.port = free_port()
        cfg = os.path.join(out, f"{name}.toml")
        self.log_path = os.path.join(out, f"{name}.log")
        member_config(cfg, source, target, topic, self.port, group, fetch_max_wait_ms)
        self.started = time.time()
        self.proc = procs.start([strait, "run", "--config", cfg], self.log_path,
                                dict(os.environ, NO_COLOR="1"))

    def check_running(self):
        if self.proc.poll() is not None:
            raise BenchError(f"member {self.name} exited with {self.proc.returncode} (see its log)")

    def log_lines(self):
        try:
            return [ANSI.sub("", line) for line in open(self.log_path, errors="replace")]
        except OSError:
            return []

    def assignments(self):
        """[(wall-clock time, generation, partitions)] of every assignment in the log."""
        out = []
        for line in self.log_lines():
            if "scale-out: assignment" not in line:
                continue
            m, g, n = STAMP.match(line), re.search(r"generation=(-?\d+)", line), \
                re.search(r"partitions=(\d+)", line)
            if m and g and n:
                y, mo, d, h, mi, sec = m.groups()
                t = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), 0)) + float(sec)
                out.append((t, int(g.group(1)), int(n.group(1))))
        return out

    def first_assignment(self):
        """Wall-clock time of the first assignment with partitions, from the member's log."""
        return next((t for t, _, n in self.assignments() if n > 0), None)

    def moved(self):
        """(records, batch bytes) the process replicated, from its `flow stopped` line."""
        for line in reversed(self.log_lines()):
            if "flow stopped" in line:
                r, b = re.search(r"records=(\d+)", line), re.search(r"bytes=(\d+)", line)
                if r and b:
                    return int(r.group(1)), int(b.group(1))
        return None


def ownership(members, topic):
    """{member name: view} for every member (raises if one has exited)."""
    views = {}
    for m in members:
        m.check_running()
        views[m.name] = scrape(m.port, topic)
    return views


def owners(views):
    """{partition: member} from the views, and whether any partition has two owners."""
    out, double = {}, False
    for name, v in views.items():
        for p in (v or {}).get("lag", {}):
            double |= p in out
            out[p] = name
    return out, double


# ---------------------------------------------------------------- live load helpers

class Stop:
    """Set by SIGTERM/SIGINT in the helper processes."""
    flag = False


def on_stop(_sig, _frame):
    Stop.flag = True


def cmd_produce(args):
    """Writes `rate` records/s round-robin over every partition until SIGTERM (CreateTime
    timestamps set by librdkafka at produce()); prints {"delivered", "errors"}."""
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    p = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True,
                  "linger.ms": 5, "acks": "all"})
    state = {"delivered": 0, "errors": 0, "first_error": None}

    def cb(err, _msg):
        if err is None:
            state["delivered"] += 1
        else:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or str(err)

    value = (b"0123456789abcdef" * (args.value_size // 16 + 1))[: args.value_size]
    tick, seq, start = 0.01, 0, time.monotonic()
    while not Stop.flag:
        due = int((time.monotonic() - start) * args.rate)
        while seq < due:
            part = seq % args.partitions
            try:
                p.produce(args.topic, value=value, key=b"%d:%d" % (part, seq), partition=part,
                          on_delivery=cb)
            except BufferError:
                break
            seq += 1
        p.poll(0)
        time.sleep(tick)
    p.flush(30)
    print(json.dumps(state), flush=True)
    return 0 if state["errors"] == 0 else 1


def cmd_tail(args):
    """Tails every target partition from offset 0 until SIGTERM; writes per record
    (partition, CreateTime ms, arrival ms) to --out as JSON."""
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    meta = consumer(args.bootstrap)
    while not Stop.flag and not topic_ready(meta, args.topic, args.partitions):
        time.sleep(0.1)
    meta.close()
    c = consumer(args.bootstrap)
    c.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
    parts, created, arrived, errors = [], [], [], []
    while not Stop.flag:
        # What is queued, at once; else block for the next record (consume(n, timeout)
        # would hold early records until it has n or the timeout passed).
        msgs = c.consume(1000, 0)
        if not msgs:
            m = c.poll(0.05)
            msgs = [m] if m is not None else []
        now = time.time() * 1000.0
        for m in msgs:
            if m.error() is not None:
                errors.append(str(m.error()))
                continue
            parts.append(m.partition())
            created.append(m.timestamp()[1])
            arrived.append(round(now, 1))
    c.close()
    with open(args.out, "w") as f:
        json.dump({"partition": parts, "created_ms": created, "arrived_ms": arrived,
                   "errors": errors[:20]}, f)
    return 0
