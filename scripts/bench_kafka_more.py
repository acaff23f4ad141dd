"""The cases of `scripts/bench kafka` beyond the side-by-side copies (issue 32): what one
batch costs, more than one worker thread, and live replication at a fixed ingest rate.
bench_kafka.py runs them after the codecs' copies, on the same two Kafka clusters, and its
report prints their tables from here.

  batch-<mode>    a backlog of one-record lz4 batches (64 MiB of 1 KiB values: 65,536
                  batches, each forwarded as its own batch under `never`), copied by
                  `strait run --once` with recompress `never` and with the default `small`
                  (which merges them): CPU µs per batch the target received, against the
                  request floor of the same run
  threads-<n>     the uncompressed backlog copied again with `engine.worker_threads` = 1 and
                  2 (recompress default): does one process go faster with a second thread
                  on a backlog the brokers can sustain
  live-<rate>     `strait bench --mode live` (producer, engine and a tailer in one process,
                  lz4, 1 KiB values, 6 partitions, 30 s) at 5,000 and 50,000 records/s: end-
                  to-end latency (the source's acknowledgement → readable on the target)
                  p50/p99, the engine's own share (Fetch response received → the target's
                  acknowledgement of that batch) p50/p99, and the engine threads' CPU per GiB
                  of values at that fixed rate

Every copy is verified by librdkafka as the other cases are; a live case counts every
record produced on the target (none missing, no duplicate) itself.
"""

import json
import os
import subprocess

from scale_out_kit import MIB, BenchError

LIVE_RATES = [5000, 50000]
LIVE_SECONDS = "30s"
RECORD = 1024
BATCH_TOTAL = "64MiB"
THREADS = [1, 2]


def case_names():
    return ([f"batch-{m}" for m in ("never", "small")] + [f"threads-{n}" for n in THREADS]
            + [f"live-{r}" for r in LIVE_RATES])


def run_threads(procs, kafka, cfg, only, run_case, backlog, results):
    """The threads-<n> cases on the uncompressed backlog (before it is deleted)."""
    more = results.setdefault("more", [])
    for n in THREADS:
        case = f"threads-{n}"
        if not only or case in only:
            r = guarded(lambda: run_case(procs, kafka, cfg, case, "none", "strait", None, backlog,
                                         engine=f"worker_threads = {n}\n"), case)
            r["threads"] = n
            more.append(r)


def run_rest(procs, kafka, cfg, only, run_case, load_backlog, delete_topic, results):
    """The batch-<mode> and live-<rate> cases, after the codecs' copies."""
    more = results.setdefault("more", [])
    modes = [m for m in ("never", "small") if not only or f"batch-{m}" in only]
    if modes:
        backlog = load_backlog(cfg, kafka, "lz4", topic="bench-batch-lz4", total=BATCH_TOTAL,
                               batch_size="1KiB")
        for mode in modes:
            case = f"batch-{mode}"
            r = guarded(lambda: run_case(procs, kafka, cfg, case, "lz4", "strait", mode, backlog), case)
            r["source_batches"] = backlog["load"]["load"]["batches"]
            more.append(r)
        delete_topic(kafka.clusters[0]["bootstrap"], backlog["topic"])
    for rate in LIVE_RATES:
        case = f"live-{rate}"
        if not only or case in only:
            more.append(guarded(lambda: live(cfg, kafka, case, rate), case))


def guarded(f, case):
    try:
        return f()
    except (BenchError, subprocess.CalledProcessError, OSError, ValueError, KeyError) as e:
        return {"case": case, "error": str(e), "verified": False}


def live(cfg, kafka, case, rate):
    a = cfg.args
    src, dst = kafka.clusters[0]["bootstrap"], kafka.clusters[1]["bootstrap"]
    out = os.path.join(cfg.out, case + ".json")
    mib = rate * RECORD / MIB
    subprocess.run([a.strait, "--log-level", "warn", "bench", "--source", src, "--target", dst,
                    "--mode", "live", "--rate", repr(mib), "--duration", LIVE_SECONDS,
                    "--codec", "lz4", "--record-size", str(RECORD), "--partitions", str(a.partitions),
                    "--json", "--yes"],
                   stdout=open(out, "w"), stderr=open(out + ".err", "w"), check=True, timeout=600)
    j = json.load(open(out))
    lv = j["live"]
    ok = bool(j.get("ok")) and lv["missing"] == 0 and lv["duplicates"] == 0 and lv["received"] == lv["produced"]
    return {"case": case, "rate": rate, "live": lv, "verified": ok,
            **({} if ok else {"error": f"missing {lv['missing']}, duplicates {lv['duplicates']}"})}


def report(res, floor, req):
    """Markdown lines for the cases above (empty when none ran)."""
    more = {c["case"]: c for c in res.get("more", [])}
    if not more:
        return []
    lines = []
    rows = [more[c] for c in ("batch-never", "batch-small") if c in more]
    if rows:
        lines += ["**What one batch costs.** A backlog of one-record lz4 batches (64 MiB of 1 KiB "
                  "values, 65,536 batches over 6 partitions), copied by `strait run --once` (the whole "
                  "process, start-up included): `never` forwards every batch as it is, `small` merges and "
                  "recompresses them. CPU per source batch, beside the request floor"
                  + (f" ({req:.1f} µs)" if req else "") + ".", "",
                  "| recompress | source batches | target batches | CPU-s | µs per source batch "
                  "| × request floor | MiB/s | verified |", "|---|---|---|---|---|---|---|---|"]
        for c in rows:
            if c.get("cpu") is None:
                lines.append(f"| `{c.get('mode')}` | failed: {c.get('error')} | | | | | | no |")
                continue
            per = c["cpu"] / c["source_batches"] * 1e6
            lines.append(f"| `{c['mode']}` | {c['source_batches']:,} | {c.get('target_batches', 0):,} | "
                         f"{c['cpu']:.2f} | {per:.1f} | " + (f"{per / req:.1f}× | " if req else "n/a | ")
                         + f"{c.get('mib_per_s', 0):.1f} | {'yes' if c.get('verified') else 'NO'} |")
        lines.append("")
    rows = [more[f"threads-{n}"] for n in THREADS if f"threads-{n}" in more]
    if rows:
        lines += ["**Worker threads.** The uncompressed backlog copied again with `engine.worker_threads` "
                  "1 and 2:", "", "| worker_threads | CPU-s/GiB | MiB/s | share of one core while copying "
                  "| max RSS | verified |", "|---|---|---|---|---|---|"]
        for c in rows:
            if c.get("cpu_per_gib") is None:
                lines.append(f"| {c.get('threads')} | failed: {c.get('error')} | | | | no |")
                continue
            share = c["cpu"] / c["drained_s"] * 100 if c.get("drained_s") else 0
            lines.append(f"| {c['threads']} | {c['cpu_per_gib']:.2f} | {c['mib_per_s']:.1f} | {share:.0f} % | "
                         f"{c['maxrss_mib']:.0f} MiB | {'yes' if c.get('verified') else 'NO'} |")
        lines.append("")
    rows = [more[f"live-{r}"] for r in LIVE_RATES if f"live-{r}" in more]
    if rows:
        lines += ["**Live, at a fixed ingest rate** (`strait bench --mode live`: the bench's producer, the "
                  "engine and a tailer in one process; lz4, 1 KiB values, 6 partitions, 30 s, engine "
                  "`fetch_max_wait` 20 ms). End to end: the source's acknowledgement of a record → "
                  "readable on the target. Engine share: the Fetch response that brought a batch → the "
                  "target's acknowledgement of it. CPU: the engine's threads only.", "",
                  "| records/s | MiB/s achieved | end to end p50 / p99 / max | engine share p50 / p99 "
                  "| engine CPU-s/GiB | engine share of one core | kept up | missing / duplicates |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in rows:
            lv = c.get("live")
            if not lv:
                lines.append(f"| {c.get('rate')} | failed: {c.get('error')} | | | | | | |")
                continue
            e2e, eng = lv["ack_to_readable_ms"], lv["engine_fetch_to_ack_ms"]
            cpu = lv["engine_cpu"]["user_secs"] + lv["engine_cpu"]["sys_secs"]
            gib = lv["achieved_mib_per_sec"] * lv["duration_secs"] / 1024
            lines.append(f"| {c['rate']:,} | {lv['achieved_mib_per_sec']:.1f} | {e2e['p50']:.1f} / {e2e['p99']:.1f} / "
                         f"{e2e['max']:.0f} ms | {eng['p50']:.1f} / {eng['p99']:.1f} ms | {cpu / gib:.2f} | "
                         f"{cpu / lv['duration_secs'] * 100:.1f} % | {'yes' if lv['kept_up'] else 'no'} | "
                         f"{lv['missing']} / {lv['duplicates']} |")
        lines.append("")
    return lines
