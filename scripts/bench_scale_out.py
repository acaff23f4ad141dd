#!/usr/bin/env python3
"""The scale-out case of scripts/bench (issue 14): several `strait run` processes, one flow.

Run by scripts/bench with the venv python ($STRAIT_PYTHON, confluent-kafka = librdkafka);
by hand:

    bench_scale_out.py drain --strait BIN --tansu BIN --out DIR [--total 512MiB]
        [--codecs none,lz4] [--members 1,2,3] [--partitions 24]
    bench_scale_out.py rebalance --strait BIN --tansu BIN --out DIR [--before 15]
        [--after 10] [--rate 1000] [--value-size 512] [--fetch-max-wait-ms 100]
    bench_scale_out.py report --out DIR --command "scripts/bench ..."   (markdown on stdout)
    bench_scale_out.py produce|tail ...   (helpers the rebalance case starts as processes)

drain: one source Tansu broker is loaded once per codec (`strait bench --mode load`, 24
partitions) and hashed once with librdkafka; then, for N = 1, 2, 3, a fresh target Tansu
broker and N `strait run` processes with `[flows.scale_out]` (dynamic members,
`instance_id = ""`) started at the same moment. `--once` is refused with scale-out, so
"drained" is detected from outside: librdkafka reads, on every target partition, the
record at offset (source records - 1), and every partition is owned by a member whose
`strait_lag_offsets` is 0. Then all members get SIGTERM. CPU and peak RSS per member come
from /proc at the drained moment (and from wait4 for the whole life); the target is read
back with librdkafka and compared per partition with the source (count and a BLAKE2b over
key, value, headers and timestamp, in order).

rebalance: two members replicate a live load (a librdkafka producer, every partition,
CreateTime timestamps) tailed on the target by a librdkafka consumer; a third member is
started. Per target record: latency = the tailer's arrival time - the record's CreateTime
(same clock; Tansu has no LogAppendTime). Partitions whose owner is the same before and
after (read off each member's /metrics every 100 ms) are the unaffected ones; their worst
latency during the rebalance is compared with before it and with engine.fetch_max_wait.

Every process started here is stopped here (finally blocks; children also get
PR_SET_PDEATHSIG so that they die with this process if it is killed).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic

import scale_out_kit as kit
import scale_out_report as report
from scale_out_kit import (MIB, BenchError, EndWatch, Member, Procs, compare, consumer, log,
                           owners, ownership, parse_size, proc_cpu, proc_hwm_mib, read_digest,
                           start_broker, topic_ready)

# The group settings of every member (docs/configuration.md, `[flows.scale_out]`).
SESSION_TIMEOUT = "6s"
REBALANCE_TIMEOUT = "20s"


def group_settings(args):
    return {"session_timeout": args.session_timeout, "rebalance_timeout": args.rebalance_timeout}


# ---------------------------------------------------------------- drain: 1, 2, 3 members

def load_backlog(strait, source, topic, total, codec, partitions, out):
    """`strait bench --mode load` fills `topic` (the bench's synthetic records)."""
    path = os.path.join(out, f"load-{codec}.json")
    with open(path, "w") as f, open(os.path.join(out, f"load-{codec}.err"), "w") as e:
        rc = subprocess.run([strait, "--log-level", "warn", "bench", "--source", source,
                             "--target", source, "--partitions", str(partitions), "--json",
                             "--mode", "load", "--total", str(total), "--codec", codec,
                             "--topic", topic], stdout=f, stderr=e).returncode
    if rc != 0:
        raise BenchError(f"loading {topic}: strait bench exit {rc} (see {path})")
    return json.load(open(path))["load"]


def drain_run(procs, args, src_proc, source, topic, digest, n, codec, value_bytes):
    """N members drain `topic` into a fresh target; times, CPU, memory, verification."""
    name = f"{codec}-n{n}"
    run = {"codec": codec, "members": n, "value_bytes": value_bytes}
    tgt_proc, target = start_broker(procs, args.tansu, args.out, f"dst-{name}")
    target_topic = f"src.{topic}"
    members, watch, meta = [], None, consumer(target)
    try:
        b0 = (proc_cpu(src_proc.pid), proc_cpu(tgt_proc.pid))
        t0 = time.time()
        members = [Member(procs, args.strait, args.out, f"{name}-m{i}", source, target, topic,
                          group_settings(args)) for i in range(n)]
        seen_assigned = drained = None
        deadline = time.monotonic() + args.timeout
        timeline = []
        while drained is None:
            if time.monotonic() > deadline:
                short = len(watch.pending) if watch else args.partitions
                raise BenchError(f"not drained within {args.timeout:.0f} s ({short} partitions short)")
            views = ownership(members, topic)
            own, double = owners(views)
            timeline.append((round(time.time() - t0, 2), {k: len((v or {}).get("lag", {}))
                                                           for k, v in views.items()}))
            if own and seen_assigned is None:
                seen_assigned = time.time()
            if watch is None and topic_ready(meta, target_topic, args.partitions):
                watch = EndWatch(target, target_topic, digest["counts"])
            done = watch is not None and watch.poll(0.05)
            lags_zero = (len(own) == args.partitions and not double and
                         all(lag <= 0 for v in views.values() for lag in (v or {}).get("lag", {}).values()))
            if done and lags_zero:
                drained = time.time()
            elif watch is None:
                time.sleep(0.05)
        run["cpu_at_drained"] = [proc_cpu(m.proc.pid) for m in members]
        run["hwm_mib_at_drained"] = [proc_hwm_mib(m.proc.pid) for m in members]
        b1 = (proc_cpu(src_proc.pid), proc_cpu(tgt_proc.pid))
        run["broker_cpu"] = [b1[0] - b0[0], b1[1] - b0[1]]
        final = ownership(members, topic)
        for key, field in (("generation", "generation"), ("rebalances", "rebalances"),
                           ("rebalancing_s", "rebalancing_s")):
            run[key] = [(final[m.name] or {}).get(field) for m in members]
        run["owned_at_drained"] = [len((final[m.name] or {}).get("lag", {})) for m in members]
        # The first assignment from the members' logs (exact), else as first scraped.
        logged = [t for t in (m.first_assignment() for m in members) if t is not None]
        first = min(logged) if logged else seen_assigned
        run["first_assignment_from"] = "log" if logged else "metrics"
        run["to_first_assignment_s"] = first - t0
        run["wall_s"] = drained - t0
        run["from_assignment_s"] = drained - first
        run["timeline"] = timeline
        stops = [procs.stop(m.proc) for m in members]
        run["exit"] = [s["exit"] for s in stops]
        run["cpu_total"] = [s["cpu"] for s in stops]
        run["maxrss_mib"] = [s["maxrss_mib"] for s in stops]
        moved = [m.moved() for m in members]
        run["records_by_member"] = [x[0] if x else None for x in moved]
        run["batch_bytes_by_member"] = [x[1] if x else None for x in moved]
        watch.close()
        watch = None
        run["verify"] = compare(digest, read_digest(target, target_topic, args.partitions,
                                                    expect=digest["counts"]))
        run["ok"] = run["verify"]["ok"] and all(e == 0 for e in run["exit"])
    except BenchError as e:
        run["error"] = str(e)
        run["ok"] = False
        log(f"{name}: {e}")
    finally:
        if watch is not None:
            watch.close()
        meta.close()
        for m in members:
            procs.stop(m.proc)
        procs.stop(tgt_proc)
    return run


def cmd_drain(args):
    os.makedirs(args.out, exist_ok=True)
    procs = Procs()
    results = {"partitions": args.partitions, "total": args.total, **group_settings(args),
               "runs": [], "loads": {}}
    try:
        src_proc, source = start_broker(procs, args.tansu, args.out, "src-drain")
        for codec in args.codecs.split(","):
            topic = f"strait-scale-{codec}"
            log(f"loading {args.total / MIB:.0f} MiB of values, {codec}, {args.partitions} partitions")
            load = load_backlog(args.strait, source, topic, args.total, codec, args.partitions, args.out)
            results["loads"][codec] = load
            log(f"hashing the {codec} backlog with librdkafka")
            t = time.monotonic()
            digest = read_digest(source, topic, args.partitions)
            load["digest_secs"] = time.monotonic() - t
            if sum(digest["counts"]) != load["records"]:
                raise BenchError(f"source holds {sum(digest['counts'])} records, loaded {load['records']}")
            for n in [int(x) for x in args.members.split(",")]:
                log(f"{codec}: {n} member(s) draining")
                run = drain_run(procs, args, src_proc, source, topic, digest, n, codec,
                                load["value_bytes"])
                results["runs"].append(run)
                if run.get("ok"):
                    log(f"{codec}, {n}: {run['wall_s']:.2f} s ({run['from_assignment_s']:.2f} s "
                        f"from the first assignment), CPU {sum(run['cpu_at_drained']):.2f} s")
    except BenchError as e:
        results["error"] = str(e)
        log(str(e))
    finally:
        procs.stop_all()
        with open(os.path.join(args.out, "drain.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0 if not results.get("error") and all(r.get("ok") for r in results["runs"]) else 1


# ---------------------------------------------------------------- rebalance under live load

def settled(members, topic, partitions, timeline, within, stable=3.0):
    """Waits until the members own every partition once, each at least one, unchanged for
    `stable` s; returns ({partition: member}, the time that state was first seen, views)."""
    deadline = time.monotonic() + within
    last, since = None, None
    while True:
        views = ownership(members, topic)
        now = time.time()
        own, double = owners(views)
        timeline.append((now, own))
        ok = (len(own) == partitions and not double
              and all((v or {}).get("lag") for v in views.values()))
        if ok and own == last:
            if now - since >= stable:
                return own, since, views
        else:
            since = now if ok else None
        last = own if ok else None
        if time.monotonic() > deadline:
            raise BenchError(f"ownership never settled within {within:.0f} s: {own}")
        time.sleep(0.1)


def watch_for(members, topic, timeline, secs):
    """Samples ownership every 100 ms for `secs`."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        timeline.append((time.time(), owners(ownership(members, topic))[0]))
        time.sleep(0.1)


def cmd_rebalance(args):
    os.makedirs(args.out, exist_ok=True)
    procs = Procs()
    topic, target_topic = "strait-scale-live", "src.strait-scale-live"
    res = {"partitions": args.partitions, "rate": args.rate, "value_size": args.value_size,
           "fetch_max_wait_ms": args.fetch_max_wait_ms, **group_settings(args),
           "before_s": args.before, "after_s": args.after}
    me = os.path.abspath(__file__)
    tail_path = os.path.join(args.out, "tail.json")
    try:
        _, source = start_broker(procs, args.tansu, args.out, "src-live")
        _, target = start_broker(procs, args.tansu, args.out, "dst-live")
        admin = AdminClient({"bootstrap.servers": source})
        for f in admin.create_topics([NewTopic(topic, args.partitions, 1)]).values():
            f.result(10)
        tailer = procs.start([sys.executable, me, "tail", "--bootstrap", target, "--topic",
                              target_topic, "--partitions", str(args.partitions), "--out", tail_path],
                             os.path.join(args.out, "tail.log"))
        producer = procs.start([sys.executable, me, "produce", "--bootstrap", source, "--topic", topic,
                                "--partitions", str(args.partitions), "--rate", str(args.rate),
                                "--value-size", str(args.value_size)],
                               os.path.join(args.out, "produce.log"))

        def member(n):
            return Member(procs, args.strait, args.out, f"live-{n}", source, target, topic,
                          group_settings(args), args.fetch_max_wait_ms)

        members = [member("a"), member("b")]
        timeline = []
        before, _, _ = settled(members, topic, args.partitions, timeline, 120)
        log(f"two members settled; steady for {args.before:.0f} s")
        t_steady = time.time()
        watch_for(members, topic, timeline, args.before)
        t_join = time.time()
        log("starting the third member")
        members.append(member("c"))
        after, t_settled, views = settled(members, topic, args.partitions, timeline, 180)
        log(f"three members settled {t_settled - t_join:.1f} s after the join; {args.after:.0f} s more")
        watch_for(members, topic, timeline, args.after)
        t_stop = time.time()
        cpu = {m.name: proc_cpu(m.proc.pid) for m in members}
        res["members"] = {m.name: {"before": sum(1 for o in before.values() if o == m.name),
                                   "after": sum(1 for o in after.values() if o == m.name),
                                   "rebalances": (views[m.name] or {}).get("rebalances"),
                                   "rebalancing_s": (views[m.name] or {}).get("rebalancing_s"),
                                   "cpu": cpu[m.name]}
                          for m in members}
        res["assignments"] = {m.name: m.assignments() for m in members}
        res["producer_exit"] = procs.stop(producer, 40)["exit"]
        time.sleep(3)  # let the last records reach the tailer
        procs.stop(tailer, 30)
        tail = json.load(open(tail_path))
        res["tail_records"] = len(tail["partition"])
        res["tail_errors"] = tail["errors"]
        res["analysis"] = report.analyse(tail, timeline, before, after, t_steady, t_join,
                                         t_settled, t_stop, args.fetch_max_wait_ms,
                                         res["assignments"])
        # The raw inputs of the analysis, to look at or re-run it (the tailer's file stays).
        res["raw"] = {"timeline": timeline, "before": before, "after": after,
                      "t_steady": t_steady, "t_join": t_join, "t_settled": t_settled,
                      "t_stop": t_stop}
        res["exit"] = [procs.stop(m.proc)["exit"] for m in members]
        src = read_digest(source, topic, args.partitions)
        res["verify"] = compare(src, read_digest(target, target_topic, args.partitions,
                                                 expect=src["counts"]))
        res["ok"] = res["verify"]["ok"] and all(e == 0 for e in res["exit"])
    except BenchError as e:
        res["error"] = str(e)
        res["ok"] = False
        log(str(e))
    finally:
        procs.stop_all()
        with open(os.path.join(args.out, "rebalance.json"), "w") as f:
            json.dump(res, f, indent=1)
    return 0 if res.get("ok") else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command_name", required=True)
    for name in ("drain", "rebalance"):
        s = sub.add_parser(name)
        s.add_argument("--strait", required=True)
        s.add_argument("--tansu", required=True)
        s.add_argument("--out", required=True)
        s.add_argument("--partitions", type=int, default=24)
        s.add_argument("--timeout", type=float, default=300.0)
        s.add_argument("--session-timeout", default=SESSION_TIMEOUT)
        s.add_argument("--rebalance-timeout", default=REBALANCE_TIMEOUT)
    d = sub.choices["drain"]
    d.add_argument("--total", type=parse_size, default=512 * MIB)
    d.add_argument("--codecs", default="none,lz4")
    d.add_argument("--members", default="1,2,3")
    r = sub.choices["rebalance"]
    r.add_argument("--before", type=float, default=15.0)
    r.add_argument("--after", type=float, default=10.0)
    r.add_argument("--rate", type=int, default=1000)
    r.add_argument("--value-size", type=int, default=512)
    r.add_argument("--fetch-max-wait-ms", type=int, default=100)
    s = sub.add_parser("report")
    s.add_argument("--out", required=True)
    s.add_argument("--command", default="scripts/bench")
    s.add_argument("--machine", default="?")
    s = sub.add_parser("produce")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--partitions", type=int, required=True)
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--value-size", type=int, default=512)
    s = sub.add_parser("tail")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--partitions", type=int, required=True)
    s.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.command_name in ("drain", "rebalance"):
        # SIGTERM (scripts/bench's cleanup) unwinds through the finally blocks.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return {"drain": cmd_drain, "rebalance": cmd_rebalance, "report": report.cmd_report,
            "produce": kit.cmd_produce, "tail": kit.cmd_tail}[args.command_name](args)


if __name__ == "__main__":
    sys.exit(main())
