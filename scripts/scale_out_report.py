"""Analysis and markdown of the scale-out case of scripts/bench (bench_scale_out.py): the
rebalance latency windows, and the tables docs/benchmarks.md shows."""

import json
import os
import time

MIB = 1 << 20
GIB = 1 << 30


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def summarize(records, parts, lo, hi):
    """Latency p50/p99/max (ms) of the records of `parts` created in [lo, hi) (s), and the
    longest gap between consecutive arrivals of one partition's records among them."""
    lat, gaps, last = [], [], {}
    for p, c, a in records:
        if p in parts and lo * 1000 <= c < hi * 1000:
            lat.append(a - c)
            if p in last:
                gaps.append(a - last[p])
            last[p] = a
    return {"records": len(lat), "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
            "max": max(lat) if lat else None, "max_gap": max(gaps) if gaps else None}


def per_partition_max(records, lo, hi):
    out = {}
    for p, c, a in records:
        if lo * 1000 <= c < hi * 1000:
            out[p] = max(out.get(p, 0.0), a - c)
    return out


def per_second_max(records, parts, lo, hi):
    """The maximum latency of each second of creation time in [lo, hi), for `parts`."""
    out = {}
    for p, c, a in records:
        if p in parts and lo * 1000 <= c < hi * 1000:
            k = int(c // 1000)
            out[k] = max(out.get(k, 0.0), a - c)
    return sorted(out.values())


def at_changes(records, unaffected, before, assignments, t_join, around=1.0):
    """Around every assignment a member received after the join: the worst latency of the
    records of its unaffected partitions created within `around` s of it."""
    worst = []
    for member, events in assignments.items():
        mine = {p for p in unaffected if before.get(p) == member}
        for t, gen, _ in events:
            if t < t_join or not mine:
                continue
            lat = [a - c for p, c, a in records
                   if p in mine and (t - around) * 1000 <= c < (t + around) * 1000]
            if lat:
                worst.append({"member": member, "generation": gen, "max_ms": max(lat),
                              "records": len(lat)})
    return worst


def analyse(tail, timeline, before, after, t_steady, t_join, t_settled, t_stop, fetch_ms,
            assignments):
    """The latency windows of the rebalance case (see bench_scale_out.py)."""
    recs = list(zip(tail["partition"], tail["created_ms"], tail["arrived_ms"]))
    parts = sorted(before)
    # Unaffected: the same owner before and after, and that owner in every sample between.
    unaffected = set()
    for p in parts:
        if before[p] == after.get(p) and all(o.get(p) == before[p] for t, o in timeline
                                             if t_join <= t <= t_settled):
            unaffected.add(p)
    moved = {p for p in parts if before[p] != after.get(p)}
    # A moved partition's hand-over: last sample with its old owner -> first with the new.
    handover = []
    for p in sorted(moved):
        last_old = max((t for t, o in timeline if t <= t_settled and o.get(p) == before[p]),
                       default=t_join)
        first_new = min((t for t, o in timeline if t >= last_old and o.get(p) == after[p]),
                        default=None)
        if first_new is not None:
            handover.append(first_new - last_old)
    windows = {"before": (t_steady, t_join), "during": (t_join, t_settled),
               "after": (t_settled, t_stop - 1.0)}
    out = {"fetch_max_wait_ms": fetch_ms, "unaffected": sorted(unaffected),
           "moved": sorted(moved), "rebalance_s": t_settled - t_join,
           "handover_s": {"max": max(handover) if handover else None,
                          "median": pct(handover, 0.5)},
           "classes": {}}
    for cls, ps in (("unaffected", unaffected), ("moved", moved)):
        out["classes"][cls] = {w: summarize(recs, ps, lo, hi) for w, (lo, hi) in windows.items()}
    b = per_partition_max(recs, t_steady, t_join)
    d = per_partition_max(recs, t_join, t_settled)
    rise = [(d[p] - b[p], p) for p in unaffected if p in b and p in d]
    out["at_changes"] = at_changes(recs, unaffected, before, assignments, t_join)
    out["before_per_second_max"] = per_second_max(recs, unaffected, t_steady, t_join)
    out["worst_unaffected_rise_ms"] = max(rise)[0] if rise else None
    out["worst_unaffected_partition"] = max(rise)[1] if rise else None
    return out


# ---------------------------------------------------------------- report

def fmt(v, spec=".2f", none="n/a"):
    return none if v is None else format(v, spec)


def report_drain(d, lines):
    """The drain table: one row per codec and number of processes."""
    runs = d.get("runs", [])
    total = d.get("total", 0)
    lines.append(f"**Drain** ({d.get('partitions')} partitions, {total / MIB:.0f} MiB of record values "
                 f"(1 KiB each) per codec, loaded once by `strait bench --mode load`; every run a fresh "
                 f"target Tansu and N `strait run` processes started at once, `[flows.scale_out]` "
                 f"dynamic members, session_timeout {d.get('session_timeout')}, rebalance_timeout "
                 f"{d.get('rebalance_timeout')}, `[engine]` defaults):")
    lines.append("")
    lines.append("| codec | processes | start → first assignment | first assignment → drained | start → drained "
                 "| aggregate MiB/s of values (from first assignment / from start) | batches moved "
                 "| CPU-s per process | CPU-s summed | CPU-s/GiB of batches, summed | vs 1 process "
                 "| peak RSS per process | brokers' CPU-s (source + target) | partitions per process "
                 "| assignments per process | verified |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    one = {}
    for r in runs:
        if r.get("error") or "wall_s" not in r:
            lines.append(f"| {r['codec']} | {r['members']} | failed: {r.get('error', '?')} "
                         "| | | | | | | | | | | | | |")
            continue
        mib = r["value_bytes"] / MIB
        cpu = sum(r["cpu_at_drained"])
        moved = r.get("batch_bytes_by_member") or []
        batches = sum(moved) if moved and None not in moved else None
        per_gib = cpu / (batches / GIB) if batches else None
        if r["members"] == 1 and per_gib:
            one[r["codec"]] = per_gib
        base = one.get(r["codec"])
        v = r["verify"]
        ok = "yes" if v["ok"] else f"NO: {v['identical_partitions']}/{v['partitions']} identical, " \
                                   f"{v['missing']} missing, {v['extra']} extra"
        if any(e != 0 for e in r["exit"]):
            ok += f" (exit {r['exit']})"
        lines.append(
            f"| {r['codec']} | {r['members']} | {r['to_first_assignment_s']:.2f} s | "
            f"{r['from_assignment_s']:.2f} s | {r['wall_s']:.2f} s | "
            f"{mib / r['from_assignment_s']:.1f} / {mib / r['wall_s']:.1f} | "
            f"{fmt(batches / MIB if batches else None, '.0f')} MiB | "
            f"{' + '.join(fmt(c) for c in r['cpu_at_drained'])} | {cpu:.2f} | {fmt(per_gib)} | "
            f"{fmt(per_gib / base if base and per_gib else None)}× | "
            f"{' / '.join(fmt(m, '.0f') for m in r['hwm_mib_at_drained'])} MiB | "
            f"{r['broker_cpu'][0]:.2f} + {r['broker_cpu'][1]:.2f} | "
            f"{' / '.join(str(o) for o in r['owned_at_drained'])} | "
            f"{' / '.join(str(x) for x in r['rebalances'])} | {ok} |")
    lines.append("")
    lines.append("Times: from starting the processes; the first assignment from the members' logs; "
                 "drained = librdkafka reads every target partition's last source offset and every "
                 "owner reports lag 0 (sampled about every 0.1 s). CPU-s per process: user + system "
                 "from `/proc/<pid>/stat` at the drained moment, start-up included; batches moved: "
                 "the sum of each process's own count (its `flow stopped` log line). Whole lives, "
                 "to the exit after SIGTERM (wait4): "
                 + "; ".join(f"{r['codec']} ×{r['members']}: "
                             + " + ".join(fmt(c) for c in r.get("cpu_total") or [])
                             for r in runs if r.get("cpu_total")) + " CPU-s.")
    if d.get("error"):
        lines.append("")
        lines.append(f"The case stopped early: {d['error']}.")


def report_rebalance(r, lines):
    a = r.get("analysis")
    lines.append(f"**Rebalance under load** (2 members replicating {r.get('partitions')} partitions, a "
                 f"librdkafka producer writing {r.get('rate')} records/s of {r.get('value_size')} B "
                 f"round-robin, a librdkafka tailer on the target; then a 3rd member starts; "
                 f"`engine.fetch_max_wait` {r.get('fetch_max_wait_ms')} ms, session_timeout "
                 f"{r.get('session_timeout')}). Latency per record = tailer arrival − the record's "
                 f"CreateTime; windows by CreateTime: *before* = {r.get('before_s')} s of steady state, "
                 "*during* = the 3rd member's start until the new ownership is first seen, *after* = "
                 f"{r.get('after_s')} s more:")
    lines.append("")
    if not a:
        lines.append(f"Failed: {r.get('error', 'no analysis')}.")
        return
    lines.append("| partitions | count | latency before p50 / p99 / max | during p50 / p99 / max "
                 "| after p50 / p99 / max | longest arrival gap before / during |")
    lines.append("|---|---|---|---|---|---|")
    for cls, label in (("unaffected", "unaffected (same owner throughout)"),
                       ("moved", "moved to the new member")):
        c = a["classes"][cls]
        cell = lambda w: " / ".join(fmt(c[w][k], ".0f") for k in ("p50", "p99", "max")) + " ms"
        lines.append(f"| {label} | {len(a[cls])} | {cell('before')} | {cell('during')} | {cell('after')} | "
                     f"{fmt(c['before']['max_gap'], '.0f')} / {fmt(c['during']['max_gap'], '.0f')} ms |")
    lines.append("")
    ch = a.get("at_changes") or []
    ps = a.get("before_per_second_max") or []
    if ch:
        lines.append(
            "**At each assignment change** (every new generation a member received after the "
            "join; records of that member's unaffected partitions created within ±1 s of it): "
            + ", ".join(f"{c['member']} gen {c['generation']}: {c['max_ms']:.0f} ms" for c in ch)
            + f". For scale, before the join the unaffected partitions' worst latency per second "
            f"was {fmt(pct(ps, 0.5), '.0f')} ms (median second) / {fmt(pct(ps, 0.9), '.0f')} ms "
            f"(90th percentile) / {fmt(max(ps) if ps else None, '.0f')} ms (worst second).")
        lines.append("")
    v = r.get("verify") or {}
    lines.append(
        f"The rebalance (3rd member's start → new ownership seen) took {a['rebalance_s']:.1f} s; a moved "
        f"partition was without an owner for {fmt(a['handover_s']['median'], '.1f')} s (median) / "
        f"{fmt(a['handover_s']['max'], '.1f')} s (max), sampled every 100 ms. Worst unaffected partition: "
        f"its maximum latency during the rebalance exceeds its own maximum before by "
        f"{fmt(a['worst_unaffected_rise_ms'], '.0f')} ms (fetch_max_wait {a['fetch_max_wait_ms']} ms). "
        f"Members (partitions before → after, rebalances): "
        + ", ".join(f"{n} {m['before']} → {m['after']} ({m['rebalances']})" for n, m in r["members"].items())
        + f". Records tailed: {r.get('tail_records')}; verified: "
        + ("yes (every partition identical)" if v.get("ok") else f"NO: {v}") + ".")


def cmd_report(args):
    lines = [f"Command: `{args.command}`. Date: {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}. "
             f"Machine: {args.machine}. Brokers: local Tansu 0.6 (memory storage)."]
    lines.append("")
    for name, fn in (("drain.json", report_drain), ("rebalance.json", report_rebalance)):
        path = os.path.join(args.out, name)
        if os.path.exists(path):
            fn(json.load(open(path)), lines)
        else:
            lines.append(f"({name[:-5]}: not run)")
        lines.append("")
    print("\n".join(lines).rstrip("\n"))
    return 0
