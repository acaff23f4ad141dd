#!/usr/bin/env python3
"""The tables of `scripts/bench scaling` (issue 16), from the raw files it leaves in OUT.

Usage: bench_scaling.py OUT CPU_MODEL CORES DATE COMMAND TOTAL

Per case NAME, OUT holds NAME.load.json (`strait bench --mode load`), NAME.time
(`/usr/bin/time -v` of `strait run --once`), NAME.out (its summary lines),
NAME.brokers.before / .after (source and target broker utime+stime in clock ticks),
NAME.load-average (`uptime` right after the run), NAME.verify.json
(`strait bench --mode verify`) and NAME.rc. The relay floor is relay.time / relay.json.
Prints the markdown block; a case that failed reads "failed (exit N)".
"""

import json
import os
import re
import sys

GIB = 1 << 30
MIB = 1 << 20
TICK = 1 / os.sysconf("SC_CLK_TCK")


def read(out, name):
    try:
        return open(os.path.join(out, name)).read()
    except OSError:
        return None


def time_v(out, name):
    text = read(out, name + ".time")
    if text is None:
        return None
    d = {}
    for line in text.splitlines():
        k, _, v = line.strip().rpartition(": ")
        d[k] = v
    wall = d.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "0:0")
    return {
        "user": float(d.get("User time (seconds)", 0)),
        "sys": float(d.get("System time (seconds)", 0)),
        "maxrss_mib": int(d.get("Maximum resident set size (kbytes)", 0)) / 1024,
        "wall": sum(float(x) * 60**i for i, x in enumerate(reversed(wall.split(":")))),
    }


def js(out, name):
    try:
        return json.loads(read(out, name) or "")
    except ValueError:
        return None


def case(out, name):
    """The figures of one case, or (None, reason)."""
    rc = (read(out, name + ".rc") or "?").strip()
    t, load, ver = time_v(out, name), js(out, name + ".load.json"), js(out, name + ".verify.json")
    text = read(out, name + ".out") or ""
    m = re.search(
        r"flow [^:]*: .*?(\d+) record\(s\), (\d+) byte\(s\).*?(\d+) batch\(es\) produced in "
        r"(\d+) Produce request\(s\), offset maps (\d+) byte\(s\)",
        text,
    )
    if rc != "0" or not t or not load or not m:
        return None, f"failed (exit {rc})"
    before = [int(x) for x in (read(out, name + ".brokers.before") or "0 0").split()]
    after = [int(x) for x in (read(out, name + ".brokers.after") or "0 0").split()]
    la = re.search(r"load average: ([\d.]+)", read(out, name + ".load-average") or "")
    records, nbytes, produced, requests, maps = (int(g) for g in m.groups())
    cpu = t["user"] + t["sys"]
    src_cpu = (after[0] - before[0]) * TICK
    dst_cpu = (after[1] - before[1]) * TICK
    l = load["load"]
    return {
        "records": records,
        "loaded_records": l["records"],
        "value_bytes": l["value_bytes"],
        "batch_bytes": nbytes,
        "source_batches": l["batches"],
        "produced": produced,
        "requests": requests,
        "offset_maps": maps,
        "cpu": cpu,
        "user": t["user"],
        "sys": t["sys"],
        "wall": t["wall"],
        "rss": t["maxrss_mib"],
        "src_cpu": src_cpu,
        "dst_cpu": dst_cpu,
        "load_average": la.group(1) if la else "?",
        "verified": bool(ver and ver.get("ok")),
    }, None


HEADER = (
    "| {what} | codec | values / batches moved | source batches | wall s | MiB/s (values) | records/s "
    "| CPU-s (user + sys) | CPU-s/GiB of batches | × floor | µs per source batch | batches per request "
    "| max RSS | source broker CPU-s | target broker CPU-s | target broker µs per Produce request "
    "| load avg | verified |"
)


def row(label, codec, c, floor):
    if isinstance(c, str):
        return f"| {label} | {codec} | {c} |" + " |" * 16
    per_gib = c["cpu"] / (c["batch_bytes"] / GIB) if c["batch_bytes"] else 0
    x = f"{per_gib / floor:.1f}" if floor else "n/a"
    secs = max(c["wall"], 1e-9)
    return (
        f"| {label} | {codec} | {c['value_bytes'] / MIB:.0f} / {c['batch_bytes'] / MIB:.0f} MiB "
        f"| {c['source_batches']} | {c['wall']:.2f} | {c['value_bytes'] / MIB / secs:.1f} "
        f"| {c['records'] / secs:.0f} | {c['user']:.2f} + {c['sys']:.2f} | {per_gib:.2f} | {x} "
        f"| {c['cpu'] * 1e6 / max(c['source_batches'], 1):.1f} "
        f"| {c['produced'] / max(c['requests'], 1):.1f} | {c['rss']:.1f} MiB "
        f"| {c['src_cpu']:.2f} | {c['dst_cpu']:.2f} "
        f"| {c['dst_cpu'] * 1e6 / max(c['requests'], 1):.0f} | {c['load_average']} "
        f"| {'yes' if c['verified'] and c['records'] == c['loaded_records'] else 'NO'} |"
    )


def main():
    out, cpu_model, cores, date, cmd, total = sys.argv[1:]
    rt = time_v(out, "relay")
    rj = js(out, "relay.json")
    floor = None
    lines = [
        f"Machine: {cpu_model}, {cores} cores (shared with other builds: the load average "
        f"after each case is in its row). Command: `{cmd}`. Date: {date}. Brokers: two local "
        f"Tansu (memory storage), fresh for each case. Each case: {total} of values loaded "
        "by `strait bench --mode load`, replicated by `strait run --once` (default `[engine]`) "
        "as its own process under `/usr/bin/time -v` (CPU, max RSS and wall time are that "
        "process's, start-up included), verified per partition by `strait bench --mode verify`. "
        "Broker CPU: utime + stime of each Tansu process (`/proc/PID/stat`, 10 ms ticks) over "
        "the `strait run --once` process's lifetime.",
        "",
    ]
    if rt and rj and rj.get("bytes_up"):
        floor = (rt["user"] + rt["sys"]) / (rj["bytes_up"] / GIB)
        lines.append(
            f"**Byte-relay floor** (same run, `strait-relay`, {rj['bytes_up'] / MIB:.0f} MiB): "
            f"**{floor:.2f} CPU-s/GiB**."
        )
    else:
        lines.append("**Byte-relay floor**: not measured (the relay run failed).")
    lines.append("")
    sweeps = [
        ("partitions", "(a) Partitions (16 KiB batches, 1 KiB records)",
         [(f"{p:,}", f"scale-p{p}") for p in (6, 100, 1000, 10000)]),
        ("source batch size", "(b) Source batch size (6 partitions, 1 KiB records)",
         [("1 KiB", "scale-b1"), ("16 KiB", "scale-p6"), ("256 KiB", "scale-b256"),
          ("1 MiB", "scale-b1024")]),
        ("record size", "(c) Record size (6 partitions, 16 KiB batches)",
         [("100 B", "scale-r100"), ("1 KiB", "scale-p6"), ("10 KiB", "scale-r10240")]),
    ]
    maps = {}
    for what, title, cases in sweeps:
        lines.append(f"**{title}**")
        lines.append("")
        lines.append(HEADER.format(what=what))
        lines.append("|" + "---|" * 18)
        for label, base in cases:
            for codec in ("none", "lz4", "zstd"):
                c, why = case(out, f"{base}-{codec}")
                lines.append(row(label, codec, c if c else why, floor))
                if c and what == "partitions":
                    maps[(label, codec)] = c["offset_maps"]
        lines.append("")
    if maps:
        parts = "; ".join(
            f"{label} partitions {codec}: {n / 1024:.0f} KiB ({n / max(int(label.replace(',', '')), 1):.0f} B per partition)"
            for (label, codec), n in sorted(maps.items(), key=lambda kv: int(kv[0][0].replace(',', '')))
            if codec == "none"
        )
        lines.append(
            "**Offset maps** at the end of the run (`MapWriter::heap_bytes`, summed over the "
            f"partitions; codec none): {parts}."
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
