#!/usr/bin/env python3
"""Helper for scripts/demo (run with the venv python; librdkafka through confluent-kafka).

    demo_data.py seed SOURCE            create sample topics in several codecs, produce, and
                                        commit offsets for group `billing`
    demo_data.py compare SOURCE TARGET  the group's committed offsets on both sides, side by
                                        side, with the record each one points at
"""

import sys

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

GROUP = "billing"
# topic -> (partitions, codec, records, {partition: committed offset})
TOPICS = {
    "orders": (3, "zstd", 3000, {0: 412, 1: 250, 2: 999}),
    "clicks": (2, "lz4", 2000, {0: 77}),
    "payments": (1, "gzip", 600, {0: 345}),
    "audit": (1, "snappy", 400, {}),
}


def seed(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(t, num_partitions=p, replication_factor=1,
                    config={"retention.ms": "604800000"} if t == "payments" else {})
           for t, (p, _, _, _) in TOPICS.items()]
    for t, f in admin.create_topics(new, operation_timeout=10).items():
        f.result(timeout=15)
    for topic, (parts, codec, n, _) in TOPICS.items():
        txn = topic == "payments"
        conf = {"bootstrap.servers": bootstrap, "compression.type": codec,
                "linger.ms": 20, "enable.idempotence": True}
        if txn:
            # Transactions of 100: each commit marker takes a source offset that is not
            # copied, so source and target offsets differ and translation matters.
            conf["transactional.id"] = "demo-payments"
        p = Producer(conf)
        if txn:
            p.init_transactions(15)
        for i in range(n):
            if txn and i % 100 == 0:
                if i:
                    p.commit_transaction(15)
                p.begin_transaction()
            p.produce(topic, key=f"{topic}-{i}".encode(),
                      value=f"{{\"n\": {i}, \"topic\": \"{topic}\"}}".encode(),
                      partition=i % parts)
            if i % 500 == 0:
                p.poll(0)
        if txn:
            p.commit_transaction(15)
        if p.flush(30) != 0:
            raise SystemExit(f"produce to {topic}: records not delivered")
        how = ", in transactions of 100" if txn else ""
        print(f"  produced {n} records to {topic} ({parts} partition(s), {codec}{how})")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "enable.auto.commit": False})
    offsets = [TopicPartition(t, p, o) for t, (_, _, _, cs) in TOPICS.items()
               for p, o in cs.items()]
    c.commit(offsets=offsets, asynchronous=False)
    c.close()
    print(f"  group {GROUP} committed: " +
          ", ".join(f"{o.topic}/{o.partition}@{o.offset}" for o in offsets))


def committed(bootstrap, topics):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "enable.auto.commit": False})
    got = c.committed(topics, timeout=15)
    c.close()
    return {(t.topic, t.partition): t.offset for t in got}


def record_at(bootstrap, topic, partition, offset):
    if offset < 0:
        return "-"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, offset)])
    try:
        for _ in range(20):
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            return f"@{m.offset()} key={m.key().decode()} value={m.value().decode()}"
        return "(no record there)"
    finally:
        c.close()


def compare(source, target):
    pairs = [(t, p) for t, (_, _, _, cs) in TOPICS.items() for p in cs]
    src = committed(source, [TopicPartition(t, p) for t, p in pairs])
    dst = committed(target, [TopicPartition(f"source.{t}", p) for t, p in pairs])
    same = 0
    for t, p in pairs:
        so, to = src[(t, p)], dst[(f"source.{t}", p)]
        a = record_at(source, t, p, so)
        b = record_at(target, f"source.{t}", p, to)
        print(f"  {t}/{p}: source offset {so:>5} -> target offset {to:>5}")
        print(f"      source {t}/{p} {a}")
        print(f"      target source.{t}/{p} {b}")
        ka, kb = a.split(" ", 1)[-1], b.split(" ", 1)[-1]
        if ka == kb and to >= 0:
            same += 1
    print(f"  {same} of {len(pairs)} committed positions point at the same record on both sides")
    if same != len(pairs):
        raise SystemExit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["seed"]:
        seed(sys.argv[2])
    elif sys.argv[1:2] == ["compare"]:
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
