#!/usr/bin/env python3
"""`scripts/bench kafka` (issue 32): Strait beside MirrorMaker 2 and a librdkafka loop, on
Apache Kafka brokers, one backlog per codec, in one run.

    bench_kafka.py run --strait BIN --relay BIN --kafka BIN --out DIR [--total 512MiB]
        [--partitions 6] [--batch-size 16KiB] [--codecs none,lz4,zstd,snappy] [--only "case ..."]
    bench_kafka.py report --out DIR --command CMD     (the markdown block, on stdout)
    bench_kafka.py loop ...                           (the librdkafka peer; run by `run`)

`run` starts two single-node Kafka clusters (`strait-kafka --production-jvm 2`: G1 and the
full JIT as Kafka's scripts run them; pinned with taskset to the cores the replicators do
not use when the machine has 4 or more; on fewer it says so),
measures the byte-relay floor and the request floor (strait-relay, as scripts/bench does),
loads one topic per codec on the source (`strait bench --mode load`, 1 KiB records, 16 KiB
batches) and reads each with librdkafka into a digest (per partition: records and a hash of
key, value, headers and timestamp in offset order). Then, for each codec, each case copies
that backlog to a topic of its own on the target, as a process of its own:

  strait-<mode>   `strait run --once`, `[engine] recompress = "<mode>"` (small, the default;
                  never, fast, allowed; for codec none small and never, the two that differ)
  mm2             MirrorMaker 2 in dedicated mode (connect-mirror's MirrorMaker class, the JVM
                  flags of connect-mirror-maker.sh), tasks.max = partitions, its producer's
                  compression.type = the source's codec, offset syncs, checkpoints and
                  heartbeats at MM2's defaults; stopped (SIGTERM) once it has copied the
                  backlog, i.e. every target partition's end offset equals the source's
  rdkafka         a confluent-kafka consume→produce loop (`bench_kafka.py loop`), producer
                  with the source's codec, acks=all, idempotence, linger.ms=5

For each: CPU-s (utime + stime of the whole process, the JVM included: wait4's rusage, or
/proc/PID/stat at the moment MM2 had drained), max RSS (VmHWM, polled every 50 ms while it runs: ru_maxrss would
include the harness's own RSS, which Linux carries into a forked child), wall time from
the process's start to the moment the target held the whole backlog (the harness polls the
target's end offsets every 50 ms), MiB/s of the source log over that time, and the time to
the first record on the target. CPU-s/GiB is per GiB of the source topic's log (the batches
as stored on the source broker, the bytes the byte floor relays). Every case is verified
with librdkafka: the target topic's digest must equal the source's (counts and content per
partition). The brokers' CPU over each case is recorded too (raw results only).

Everything started here is stopped in a finally block; children also get
PR_SET_PDEATHSIG, and strait-kafka stops its JVMs when its stdin closes.
Raw results: <out>/kafka/results.json (plus each case's logs and configs).
"""

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_out_kit import (  # noqa: E402
    BenchError, GIB, MIB, Procs, _die_with_parent, compare, free_port, parse_size, proc_cpu,
    proc_hwm_mib, read_digest, wait_rusage,
)

import bench_kafka_more as more  # noqa: E402
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["small", "never", "fast", "allowed"]
# Uncompressed batches: `small` forwards large ones as they are, the others merge them.
NONE_MODES = ["small", "never"]
# What connect-mirror-maker.sh and kafka-run-class.sh give MirrorMaker 2's JVM by default.
MM2_JVM = ["-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
           "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
           "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
RELAY_BYTES = "4GiB"
PING_REQUESTS = 20000
PING_BYTES = 64


def log(msg):
    print(f"bench kafka: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- machine and processes

def cpu_plan():
    """(replicator cores, broker cores, note): pinned only with 4 or more cores."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= 4:
        rep = cores[:2]
        return rep, cores[2:], (f"brokers pinned to cores {cores[2]}-{cores[-1]}, the replicator "
                                f"under test to cores {rep[0]}-{rep[1]} (taskset)")
    return None, None, (f"NOT pinned: only {len(cores)} cores, so the brokers, the replicator "
                        "under test and the harness share them")


def pinned(cores, argv):
    if not cores:
        return argv
    return ["taskset", "-c", ",".join(map(str, cores))] + argv


def binary_kind(path):
    """How the measured `strait` was linked, as `file` says: the static (musl) build that
    ships, or a glibc one (its allocator behaves differently)."""
    try:
        out = subprocess.run(["file", "-L", path], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    return "static (musl)" if "static" in out else "dynamically linked (glibc)"


def wait_exit(p, timeout):
    """Reaps `p` with wait4 once it exits (its own CPU), within `timeout` s; None while it
    runs. Never Popen.poll(): that would reap it without the rusage.

    Its maximum RSS is the largest VmHWM read from /proc every 50 ms while it runs, not
    wait4's ru_maxrss: Linux carries the RSS the child had before exec into ru_maxrss, and
    a child forked from this harness starts with the harness's RSS (hundreds of MiB once it
    holds the backlogs' digests), which ru_maxrss then reports for a 50 MiB replicator."""
    deadline = time.monotonic() + timeout
    while True:
        hwm = proc_hwm_mib(p.pid)
        if hwm is not None:
            p.hwm_mib = max(getattr(p, "hwm_mib", 0.0), hwm)
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            p.reaped = {"exit": p.returncode, "killed": False, "cpu": ru.ru_utime + ru.ru_stime,
                        "user": ru.ru_utime, "sys": ru.ru_stime,
                        "maxrss_mib": getattr(p, "hwm_mib", None),
                        "ru_maxrss_mib": ru.ru_maxrss / 1024}
            return p.reaped
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def java_children(pid):
    """Pids of the `java` processes whose parent is `pid` (strait-kafka's brokers)."""
    out = []
    for d in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = open(d).read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        if ppid == pid and comm == "java":
            out.append(int(d.split("/")[2]))
    return sorted(out)


class Kafka:
    """`strait-kafka --production-jvm 2`: two single-node clusters, stopped by closing its stdin."""

    def __init__(self, binary, out, cores):
        self.log_path = os.path.join(out, "strait-kafka.log")
        self.err = open(self.log_path, "ab")
        self.p = subprocess.Popen(pinned(cores, [binary, "--production-jvm", "2"]), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err,
                                  preexec_fn=_die_with_parent)
        self.clusters = []
        deadline = time.monotonic() + 240
        while len(self.clusters) < 2:
            line = self.p.stdout.readline().decode()
            if not line:
                raise BenchError(f"strait-kafka exited before printing its brokers (see {self.log_path})")
            if time.monotonic() > deadline:
                raise BenchError("strait-kafka: no brokers after 240 s")
            f = line.split()
            if f and f[0] == "BOOTSTRAP":
                self.clusters.append({"bootstrap": f[2], "dir": f[3]})
        self.broker_pids = java_children(self.p.pid)

    def broker_cpu(self):
        return sum(proc_cpu(p) or 0 for p in self.broker_pids)

    def log_bytes(self, which, topic):
        """Bytes of `topic`'s segment files in cluster `which` (0 source, 1 target)."""
        total = 0
        for f in glob.glob(os.path.join(self.clusters[which]["dir"], "**", f"{topic}-[0-9]*", "*.log"),
                           recursive=True):
            total += os.path.getsize(f)
        return total

    def log_batches(self, which, topic):
        """Record batches in `topic`'s segment files in cluster `which`: each is a base offset
        (8 bytes) and a length (4) followed by that many bytes."""
        n = 0
        for f in glob.glob(os.path.join(self.clusters[which]["dir"], "**", f"{topic}-[0-9]*", "*.log"),
                           recursive=True):
            with open(f, "rb") as fh:
                size, at = os.path.getsize(f), 0
                while at + 12 <= size:
                    fh.seek(at + 8)
                    at += 12 + int.from_bytes(fh.read(4), "big")
                    n += 1
        return n

    def stop(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        for pid in self.broker_pids:  # strait-kafka kills them; make sure
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------- librdkafka side

def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def end_offsets(adm, topic, partitions):
    """Latest offsets per partition, or None while the topic does not exist."""
    try:
        if topic not in adm.list_topics(timeout=2).topics:
            return None
        req = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
        res = adm.list_offsets(req, request_timeout=5)
        ends = [0] * partitions
        for tp, f in res.items():
            ends[tp.partition] = f.result(timeout=5).offset
        return ends
    except Exception:  # not there yet, a leader moving: not yet
        return None


def create_topic(bootstrap, topic, partitions):
    adm = admin(bootstrap)
    f = adm.create_topics([NewTopic(topic, partitions, 1)])[topic]
    f.result(30)


def delete_topic(bootstrap, topic):
    adm = admin(bootstrap)  # kept alive until the future resolves
    try:
        adm.delete_topics([topic])[topic].result(30)
    except Exception as e:  # noqa: BLE001 (space only; a leftover topic is harmless)
        log(f"could not delete {topic}: {e}")


class Watch:
    """Polls the target topic's end offsets every 50 ms on a thread: when the first record
    arrived and when every partition reached the source's end."""

    def __init__(self, bootstrap, topic, ends, t0, pid):
        self.adm = admin(bootstrap)
        self.pid = pid
        self.cpu_at_first = None
        self.topic, self.ends, self.t0 = topic, ends, t0
        self.first = None
        self.drained = None
        self.last = None
        self.stop_flag = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def check(self):
        now = time.monotonic()
        e = end_offsets(self.adm, self.topic, len(self.ends))
        if e is None:
            return
        self.last = e
        if self.first is None and sum(e) > 0:
            self.first = now - self.t0
            # The process's start-up (JVM, connections, metadata) apart from its copying.
            self.cpu_at_first = proc_cpu(self.pid)
        if self.drained is None and all(x >= y for x, y in zip(e, self.ends)):
            self.drained = now - self.t0

    def run(self):
        while not self.stop_flag.is_set() and self.drained is None:
            self.check()
            self.stop_flag.wait(0.05)

    def stop(self):
        self.stop_flag.set()
        self.t.join()
        if self.drained is None:
            self.check()


# ---------------------------------------------------------------- the cases

def strait_toml(path, src, dst, case, topic, mode, extra=""):
    engine = (f'recompress = "{mode}"\n' if mode else "") + extra
    engine = f"[engine]\n{engine}" if engine else ""
    with open(path, "w") as f:
        f.write(f"""[clusters.src]
bootstrap_servers = ["{src}"]
[clusters.dst]
bootstrap_servers = ["{dst}"]
{engine}
[[flows]]
name = "{case}"
source = "src"
target = "dst"
state_topic = "strait-state-{case}"
[flows.topics]
include = ["{topic}"]
start_position = "earliest"
[flows.naming]
alias = "{case}"
[flows.sync]
group_offsets = false
heartbeats = false
checkpoints = false
[metrics]
enabled = false
""")


def mm2_properties(path, alias, src, dst, topic, partitions, codec):
    internal = ["checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
                "offset-syncs.topic.replication.factor", "offset.storage.replication.factor",
                "status.storage.replication.factor", "config.storage.replication.factor"]
    lines = [f"clusters = {alias}, dst",
             f"{alias}.bootstrap.servers = {src}",
             f"dst.bootstrap.servers = {dst}",
             f"{alias}->dst.enabled = true",
             f"dst->{alias}.enabled = false",
             f"{alias}->dst.topics = {topic}",
             f"tasks.max = {partitions}",
             # The target's producer keeps the source's codec.
             f"dst.producer.compression.type = {codec}",
             "replication.factor = 1"] + [f"{k} = 1" for k in internal]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def log4j2(path, logfile):
    with open(path, "w") as f:
        f.write(f"""status = warn
appender.f.type = File
appender.f.name = F
appender.f.fileName = {logfile}
appender.f.layout.type = PatternLayout
appender.f.layout.pattern = [%d] %p %c{{1}}: %m%n
rootLogger.level = info
rootLogger.appenderRef.f.ref = F
""")


def java_env():
    env = {}
    try:
        for line in open(os.path.join(ROOT, ".tools", "kafka", "env")):
            k, _, v = line.strip().partition("=")
            env[k] = v
    except OSError:
        pass
    java = os.environ.get("STRAIT_JAVA") or env.get("JAVA") or "java"
    libs = os.environ.get("STRAIT_MM2_LIBS") or env.get("MM2_LIBS")
    if not libs:
        raise BenchError("no MM2 jars: run scripts/install-brokers (.tools/kafka/env)")
    return java, libs


def run_case(procs, kafka, cfg, case, codec, kind, mode, backlog, engine=""):
    """One replicator copying `backlog` to a fresh target topic; returns its result.
    `engine`: more `[engine]` lines for a Strait case."""
    a = cfg.args
    src, dst = kafka.clusters[0]["bootstrap"], kafka.clusters[1]["bootstrap"]
    topic = backlog["topic"]
    d = os.path.join(cfg.out, case)
    os.makedirs(d, exist_ok=True)
    if kind == "strait":
        dest = f"{case}.{topic}"
        conf = os.path.join(d, "strait.toml")
        strait_toml(conf, src, dst, case, topic, mode, engine)
        argv = [a.strait, "--log-level", "warn", "run", "--once", "--config", conf]
    elif kind == "mm2":
        dest = f"{case}.{topic}"
        java, libs = java_env()
        props = os.path.join(d, "mm2.properties")
        mm2_properties(props, case, src, dst, topic, a.partitions, codec)
        log4j2(os.path.join(d, "log4j2.properties"), os.path.join(d, "mm2.log"))
        argv = [java] + MM2_JVM + [f"-Dlog4j2.configurationFile={d}/log4j2.properties",
                                   "-cp", f"{libs}/*", "org.apache.kafka.connect.mirror.MirrorMaker", props]
    else:
        dest = f"{case}.{topic}"
        create_topic(dst, dest, a.partitions)
        argv = [sys.executable, os.path.abspath(__file__), "loop", "--source", src, "--target", dst,
                "--topic", topic, "--dest", dest, "--codec", codec,
                "--ends", ",".join(map(str, backlog["ends"]))]
    log(f"case {case}: {' '.join(argv[:1] + argv[-4:])}")
    b0 = kafka.broker_cpu()
    t0 = time.monotonic()
    p = procs.start(pinned(cfg.rep_cores, argv), os.path.join(d, "process.log"))
    w = Watch(dst, dest, backlog["ends"], t0, p.pid)
    res = {"case": case, "codec": codec, "kind": kind, "mode": mode, "target_topic": dest}
    deadline = t0 + a.case_timeout
    try:
        if kind == "mm2":
            while w.drained is None and time.monotonic() < deadline and wait_exit(p, 0) is None:
                time.sleep(0.05)
            # The process's CPU and high-water RSS at the moment it had copied everything.
            res["cpu_at_drain"] = proc_cpu(p.pid)
            res["maxrss_mib"] = proc_hwm_mib(p.pid)
            if w.drained is None:
                res["error"] = ("exited" if p.reaped else "timed out") + " before draining"
            ru = procs.stop(p, 60.0)
            res["cpu"] = res["cpu_at_drain"]
            res["cpu_with_shutdown"] = ru.get("cpu")
        else:
            wait_exit(p, max(0.0, deadline - time.monotonic()))
            ru = procs.stop(p, 10.0)
            res["cpu"], res["maxrss_mib"] = ru.get("cpu"), ru.get("maxrss_mib")
            res["exit"] = ru.get("exit")
            if ru.get("exit") != 0:
                res["error"] = f"exit {ru.get('exit')}" + (" (timed out)" if ru.get("killed") else "")
        res["wall_process"] = time.monotonic() - t0
    finally:
        w.stop()
    res["broker_cpu"] = kafka.broker_cpu() - b0
    res["first_record_s"] = w.first
    res["drained_s"] = w.drained
    if w.drained is None and "error" not in res:
        res["error"] = f"target not drained: ends {w.last} vs source {backlog['ends']}"
    res["target_log_bytes"] = kafka.log_bytes(1, dest)
    res["target_batches"] = kafka.log_batches(1, dest)
    res["source_log_bytes"] = backlog["log_bytes"]
    res["cpu_at_first_record"] = w.cpu_at_first
    if res.get("cpu") is not None and w.drained:
        res["cpu_per_gib"] = res["cpu"] / (backlog["log_bytes"] / GIB)
        res["mib_per_s"] = backlog["log_bytes"] / MIB / w.drained
        if w.cpu_at_first is not None and w.drained > w.first:
            # From the first record on the target to the last: the copying without start-up.
            res["copy_cpu_per_gib"] = (res["cpu"] - w.cpu_at_first) / (backlog["log_bytes"] / GIB)
            res["copy_mib_per_s"] = backlog["log_bytes"] / MIB / (w.drained - w.first)
    # Verified by librdkafka: the same records, in order, per partition.
    try:
        dig = read_digest(dst, dest, a.partitions, expect=backlog["ends"], within=300.0)
        res["verify"] = compare(backlog["digest"], dig)
        res["verify"]["counts"] = dig["counts"]
    except BenchError as e:
        res["verify"] = {"ok": False, "error": str(e)}
    res["verified"] = bool(res["verify"].get("ok")) and "error" not in res
    log(f"case {case}: cpu {res.get('cpu')} s, drained {w.drained} s, first record {w.first} s, "
        f"verified {res['verified']}" + (f", {res['error']}" if "error" in res else ""))
    delete_topic(dst, dest)
    return res


def floors(procs, cfg):
    """The byte-relay floor and the request floor, as scripts/bench measures them."""
    a, d = cfg.args, cfg.out
    res = {}
    sink_port, relay_port = free_port(), free_port()
    sink = procs.start([a.relay, "sink", "--listen", f"127.0.0.1:{sink_port}"], os.path.join(d, "relay.sink.log"))
    relay = procs.start(pinned(cfg.rep_cores, [a.relay, "relay", "--listen", f"127.0.0.1:{relay_port}",
                                               "--upstream", f"127.0.0.1:{sink_port}", "--connections", "1"]),
                        os.path.join(d, "relay.json"))
    t0 = time.monotonic()
    subprocess.run([a.relay, "source", "--connect", f"127.0.0.1:{relay_port}", "--bytes", RELAY_BYTES],
                   stdout=open(os.path.join(d, "relay.source.json"), "w"), check=True)
    wait_exit(relay, 30.0)
    ru = procs.stop(relay, 5.0)
    wall = time.monotonic() - t0
    procs.stop(sink, 5.0)
    nbytes = parse_size(RELAY_BYTES)
    try:
        j = json.loads(open(os.path.join(d, "relay.json")).read().strip().splitlines()[-1])
        nbytes = j.get("bytes_up", nbytes)
        wall = j.get("secs", wall)
    except (OSError, ValueError, IndexError):
        pass
    res["relay"] = {"bytes": nbytes, "cpu": ru["cpu"], "secs": wall,
                    "cpu_per_gib": ru["cpu"] / (nbytes / GIB), "mib_per_s": nbytes / MIB / wall}
    echo_port = free_port()
    echo = procs.start([a.relay, "echo", "--listen", f"127.0.0.1:{echo_port}", "--request-bytes",
                        str(PING_BYTES), "--response-bytes", str(PING_BYTES)], os.path.join(d, "ping.echo.log"))
    ping = procs.start(pinned(cfg.rep_cores, [a.relay, "ping", "--connect", f"127.0.0.1:{echo_port}",
                                              "--requests", str(PING_REQUESTS), "--request-bytes", str(PING_BYTES),
                                              "--response-bytes", str(PING_BYTES)]), os.path.join(d, "ping.json"))
    wait_exit(ping, 600.0)
    ru = procs.stop(ping, 5.0)
    procs.stop(echo, 5.0)
    res["request"] = {"requests": PING_REQUESTS, "cpu": ru["cpu"],
                      "cpu_us_per_request": ru["cpu"] / PING_REQUESTS * 1e6}
    log(f"floors: relay {res['relay']['cpu_per_gib']:.3f} CPU-s/GiB, request "
        f"{res['request']['cpu_us_per_request']:.1f} µs")
    return res


def load_backlog(cfg, kafka, codec, topic=None, total=None, batch_size=None):
    a = cfg.args
    src, dst = kafka.clusters[0]["bootstrap"], kafka.clusters[1]["bootstrap"]
    topic = topic or f"bench-{codec}"
    total, batch_size = total or a.total, batch_size or a.batch_size
    lj = os.path.join(cfg.out, f"load-{topic}.json")
    log(f"loading {total} of 1 KiB records, {codec}, {batch_size} batches, into {topic} ({a.partitions} partitions)")
    subprocess.run([a.strait, "--log-level", "warn", "bench", "--source", src, "--target", dst,
                    "--partitions", str(a.partitions), "--json", "--mode", "load", "--total", total,
                    "--codec", codec, "--topic", topic, "--batch-size", batch_size, "--yes"],
                   stdout=open(lj, "w"), stderr=open(lj + ".err", "w"), check=True)
    adm = admin(src)
    ends = end_offsets(adm, topic, a.partitions)
    if not ends or not sum(ends):
        raise BenchError(f"{topic}: nothing loaded")
    digest = read_digest(src, topic, a.partitions, expect=ends)
    if digest["counts"] != ends:
        raise BenchError(f"{topic}: librdkafka read {digest['counts']} records, end offsets {ends}")
    return {"topic": topic, "ends": ends, "records": sum(ends), "digest": digest,
            "log_bytes": kafka.log_bytes(0, topic), "load": json.load(open(lj))}


def cmd_run(a):
    # scripts/bench's trap sends SIGTERM: unwind through the finally blocks, which stop
    # MM2 and the brokers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = os.path.join(a.out, "kafka")
    os.makedirs(out, exist_ok=True)
    rep, brk, note = cpu_plan()
    log(note)
    if brk:
        # The harness (its end-offset polls, the digests, the relay's far ends) on the
        # brokers' cores: the replicator's cores are its own.
        os.sched_setaffinity(0, brk)
    cfg = argparse.Namespace(args=a, out=out, rep_cores=rep)
    only = set(a.only.split()) if a.only else None
    results = {"machine": {"cores": os.cpu_count(), "pinning": note, "total": a.total,
                           "partitions": a.partitions, "batch": a.batch_size,
                           "binary": binary_kind(a.strait)},
               "cases": [], "backlogs": {}}
    procs = Procs()
    kafka = None
    path = os.path.join(out, "results.json")
    try:
        if not only or "floors" in only:
            results["floors"] = floors(procs, cfg)
        kafka = Kafka(a.kafka, out, brk)
        results["machine"]["brokers"] = kafka.clusters
        log(f"brokers: {kafka.clusters[0]['bootstrap']} (source), {kafka.clusters[1]['bootstrap']} "
            f"(target), JVM pids {kafka.broker_pids}")
        for codec in a.codecs.split(","):
            cases = [(f"strait-{m}-{codec}", "strait", m)
                     for m in (MODES if codec != "none" else NONE_MODES)]
            cases += [(f"mm2-{codec}", "mm2", None), (f"rdkafka-{codec}", "rdkafka", None)]
            cases = [c for c in cases if not only or c[0] in only]
            threads = codec == "none" and (not only or any(c.startswith("threads-") for c in only))
            if not cases and not threads:
                continue
            backlog = load_backlog(cfg, kafka, codec)
            results["backlogs"][codec] = {k: v for k, v in backlog.items() if k != "digest"}
            # After a load the brokers are not in the state later cases find them in
            # (the target's produce path cold for its JIT, the source still writing the
            # load back): one copy per backlog, not reported, so the first case of each
            # codec is not charged for it.
            try:
                warm = run_case(procs, kafka, cfg, f"warmup-{codec}", codec, "strait",
                                "never", backlog)
                log(f"warm-up copy (not reported): verified {warm.get('verified')}")
            except (BenchError, subprocess.CalledProcessError, OSError) as e:
                log(f"warm-up copy (not reported) failed: {e}")
            for case, kind, mode in cases:
                try:
                    r = run_case(procs, kafka, cfg, case, codec, kind, mode, backlog)
                except (BenchError, subprocess.CalledProcessError, OSError) as e:
                    r = {"case": case, "codec": codec, "kind": kind, "mode": mode, "error": str(e),
                         "verified": False}
                    log(f"case {case}: failed: {e}")
                results["cases"].append(r)
                json.dump(results, open(path, "w"), indent=1)
            if threads:
                more.run_threads(procs, kafka, cfg, only, run_case, backlog, results)
            delete_topic(kafka.clusters[0]["bootstrap"], backlog["topic"])
        more.run_rest(procs, kafka, cfg, only, run_case, load_backlog, delete_topic, results)
    finally:
        procs.stop_all()
        if kafka:
            kafka.stop()
        json.dump(results, open(path, "w"), indent=1)
    log(f"results in {path}")
    bad = [c["case"] for c in results["cases"] + results.get("more", []) if not c.get("verified")]
    if bad:
        log(f"NOT verified: {' '.join(bad)}")
        return 1
    return 0


# ---------------------------------------------------------------- the librdkafka peer

def cmd_loop(a):
    """Consume the source topic from the beginning to `--ends`, produce every record to the
    same partition of `--dest` with the source's codec; exit once all are acknowledged."""
    ends = [int(x) for x in a.ends.split(",")]
    c = Consumer({"bootstrap.servers": a.source, "group.id": "strait-bench-rdkafka-loop",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    p = Producer({"bootstrap.servers": a.target, "compression.type": a.codec, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 5})
    failed = []

    def on_delivery(err, _msg):
        if err is not None:
            failed.append(str(err))

    pending = {i for i, n in enumerate(ends) if n > 0}
    c.assign([TopicPartition(a.topic, i, 0) for i in pending])
    n = 0
    while pending:
        for m in c.consume(1000, 1.0):
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise SystemExit(f"consume: {m.error()}")
                continue
            part = m.partition()
            while True:
                try:
                    p.produce(a.dest, m.value(), m.key(), partition=part, on_delivery=on_delivery,
                              timestamp=m.timestamp()[1], headers=m.headers())
                    break
                except BufferError:
                    p.poll(0.05)
            n += 1
            if m.offset() >= ends[part] - 1:
                pending.discard(part)
        p.poll(0)
    left = p.flush(120)
    c.close()
    if left or failed:
        raise SystemExit(f"{left} not delivered, {len(failed)} failed: {failed[:3]}")
    print(json.dumps({"records": n}))
    return 0


# ---------------------------------------------------------------- the report

def cmd_report(a):
    res = json.load(open(os.path.join(a.out, "kafka", "results.json")))
    f = res.get("floors") or {}
    floor = (f.get("relay") or {}).get("cpu_per_gib")
    req = (f.get("request") or {}).get("cpu_us_per_request")
    m = res["machine"]
    lines = [f"Machine: {a.machine}. Command: `{a.command}`. Date: {a.date}. Brokers: two single-node "
             f"Apache Kafka 4.4.0 clusters (`strait-kafka --production-jvm`, KRaft, G1 and the full JIT), {m['pinning']}. Backlog: "
             f"{m['total']} of 1 KiB record values per codec, {m['partitions']} partitions, "
             f"{m.get('batch', '16KiB')} "
             f"batches (`strait bench --mode load`). Strait binary: {m.get('binary', 'glibc')}. Each case is one process copying the backlog to a "
             "fresh target topic; CPU-s/GiB is that process's user + system CPU (the JVM included) "
             "per GiB of the source topic's log, and × floor its multiple of the byte-relay floor "
             "measured in the same run. Verified: librdkafka read the target topic and its records "
             "(count, and key, value, headers and timestamp in offset order, per partition) equal the "
             "source's.", ""]
    if floor:
        r = f["relay"]
        lines.append(f"**Byte-relay floor** (`strait-relay`, {r['bytes']/GIB:.0f} GiB, plain read/write): "
                     f"**{floor:.3f} CPU-s/GiB**, {r['mib_per_s']:.0f} MiB/s. "
                     f"**Request floor** (`strait-relay ping`): **{req:.1f} µs** of CPU per exchange.")
    else:
        lines.append("**Byte-relay floor**: not measured in this run, so no ratios.")
    lines.append("")
    lines.append("| codec | case | CPU-s/GiB | × floor | MiB/s | max RSS | first record on target | "
                 "wall (to drained) | after the first record: CPU-s/GiB, MiB/s | target log / source log | verified |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    names = {"strait": "Strait `run --once`", "mm2": "MirrorMaker 2 (dedicated)", "rdkafka": "librdkafka loop"}
    for c in res["cases"]:
        label = names[c["kind"]] + (f", recompress `{c['mode']}`" if c.get("mode") else "")
        if c.get("mode") == "small":
            label += " (default)"
        cpg = c.get("cpu_per_gib")
        if cpg is None:
            lines.append(f"| {c['codec']} | {label} | failed: {c.get('error', '?')} | | | | | | | | no |")
            continue
        x = f"{cpg / floor:.1f}×" if floor else "n/a"
        ratio = c["target_log_bytes"] / c["source_log_bytes"] if c.get("source_log_bytes") else 0
        v = "yes" if c.get("verified") else "NO: " + (c.get("error") or json.dumps(c.get("verify")))
        fr = f"{c['first_record_s']:.2f} s" if c.get("first_record_s") is not None else "n/a"
        cp = (f"{c['copy_cpu_per_gib']:.2f}, {c['copy_mib_per_s']:.1f}" if c.get("copy_cpu_per_gib") is not None
              else "n/a")
        lines.append(f"| {c['codec']} | {label} | {cpg:.2f} | {x} | {c['mib_per_s']:.1f} | "
                     f"{c['maxrss_mib']:.0f} MiB | {fr} | {c['drained_s']:.2f} s | {cp} | {ratio:.2f} | {v} |")
    lines.append("")
    mm2 = {c["codec"]: c for c in res["cases"] if c["kind"] == "mm2" and c.get("cpu_per_gib")}
    rows = []
    for c in res["cases"]:
        o = mm2.get(c["codec"])
        if c["kind"] != "strait" or not o or not c.get("cpu_per_gib"):
            continue
        copy = "n/a"
        if c.get("copy_cpu_per_gib") and o.get("copy_cpu_per_gib"):
            copy = (f"{o['copy_cpu_per_gib'] / c['copy_cpu_per_gib']:.1f}× less, "
                    f"{c['copy_mib_per_s'] / o['copy_mib_per_s']:.2f}×")
        rows.append(f"| {c['codec']} | {c.get('mode') or 'default'} | {o['cpu_per_gib'] / c['cpu_per_gib']:.1f}× less | "
                    f"{c['mib_per_s'] / o['mib_per_s']:.2f}× | {copy} | {o['maxrss_mib'] / c['maxrss_mib']:.1f}× smaller |")
    if rows:
        lines.append("Strait against MirrorMaker 2, same backlog (issue 32's targets: ≥ 10× less CPU per GiB, "
                     "≥ MM2's throughput, RSS ≤ 1/5 of MM2's). The whole-process figures include each one's "
                     "start-up (MM2's JVM and Connect worker take seconds), which weighs more the smaller the "
                     "backlog; the copy-phase columns count from the first record on the target to the last:")
        lines.append("")
        lines.append("| codec | recompress | CPU per GiB vs MM2 | MiB/s vs MM2 | copy phase: CPU per GiB, MiB/s vs MM2 | RSS vs MM2 |")
        lines.append("|---|---|---|---|---|---|")
        lines += rows
    lines += [""] + more.report(res, floor, req)
    print("\n".join(lines).rstrip("\n"))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("run")
    s.add_argument("--strait", required=True)
    s.add_argument("--relay", required=True)
    s.add_argument("--kafka", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--total", default="512MiB")
    s.add_argument("--partitions", type=int, default=6)
    s.add_argument("--batch-size", default="16KiB",
                   help="source batch size the backlog is loaded with (strait bench --batch-size)")
    s.add_argument("--codecs", default="none,lz4,zstd,snappy")
    s.add_argument("--only", default=os.environ.get("STRAIT_BENCH_ONLY", ""),
                   help="case names (strait-<mode>-<codec>, mm2-<codec>, rdkafka-<codec>, floors, "
                        "and bench_kafka_more's: " + " ".join(more.case_names()) + ")")
    s.add_argument("--case-timeout", type=float, default=900.0)
    s = sub.add_parser("report")
    s.add_argument("--out", required=True)
    s.add_argument("--command", default="scripts/bench kafka")
    s.add_argument("--machine", default="")
    s.add_argument("--date", default=time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()))
    s = sub.add_parser("loop")
    for k in ("source", "target", "topic", "dest", "codec", "ends"):
        s.add_argument(f"--{k}", required=True)
    a = ap.parse_args(argv)
    return {"run": cmd_run, "report": cmd_report, "loop": cmd_loop}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
