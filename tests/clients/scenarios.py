#!/usr/bin/env python3
"""Real-client scenarios against `mirrorlog serve`, with confluent-kafka (librdkafka).

Each subcommand is one phase of a scenario; the Rust tests in tests/broker_*.rs start, stop and
crash the broker between phases. Every check raises on failure (non-zero exit with a message).

  scenarios.py codecs BOOTSTRAP
  scenarios.py admin BOOTSTRAP
  scenarios.py offsets_for_times BOOTSTRAP
  scenarios.py txn BOOTSTRAP
  scenarios.py group_phase1 BOOTSTRAP            (two members, rebalance on leave, commit)
  scenarios.py group_phase2 BOOTSTRAP            (after a restart: resume from the commit)
  scenarios.py produce_acked BOOTSTRAP TOPIC N OUTFILE
  scenarios.py consume_check BOOTSTRAP TOPIC ACKFILE
  scenarios.py consume_values BOOTSTRAP TOPIC ISOLATION  (partition 0 to its end: JSON values,
                                                          and the end offsets seen by
                                                          read_committed and read_uncommitted)
"""
import json
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

DEADLINE_S = 60  # hang guard for every wait below; never a pass/fail timing


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def admin(bs):
    return AdminClient({"bootstrap.servers": bs})


def create_topic(bs, name, partitions=1, config=None):
    a = admin(bs)  # must outlive the futures
    fs = a.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})])
    for t, f in fs.items():
        f.result(timeout=DEADLINE_S)


def consume_all(bs, topic, n, isolation="read_committed", group=None, partitions=None):
    c = Consumer({
        "bootstrap.servers": bs,
        "group.id": group or f"g-{uuid.uuid4()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    if partitions is not None:
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
    else:
        c.subscribe([topic])
    out = []
    deadline = time.time() + DEADLINE_S
    while len(out) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                continue
            fail(f"consume error {m.error()}")
        out.append(m)
    c.close()
    return out


def codecs(bs):
    topic = f"codecs-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    sent = []
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "acks": "all",
                      "compression.type": codec, "linger.ms": 5})
        for i in range(200):
            key = f"{codec}-k{i}".encode()
            value = (f"{codec}-value-{i}-" + "x" * (i % 50)).encode() + bytes([i % 256])
            headers = [("h1", f"{i}".encode()), ("codec", codec.encode())]
            p.produce(topic, value=value, key=key, headers=headers)
            sent.append((key, value, headers))
        if p.flush(DEADLINE_S) != 0:
            fail(f"{codec}: unflushed messages")
    got = consume_all(bs, topic, len(sent), partitions=[0])
    if len(got) != len(sent):
        fail(f"consumed {len(got)} of {len(sent)}")
    for (k, v, h), m in zip(sent, got):
        if m.key() != k or m.value() != v:
            fail(f"record mismatch at offset {m.offset()}: {m.key()!r} {m.value()[:40]!r}")
        if [(a, b) for a, b in (m.headers() or [])] != h:
            fail(f"headers mismatch at offset {m.offset()}: {m.headers()}")
    offsets = [m.offset() for m in got]
    if offsets != list(range(len(sent))):
        fail("offsets are not 0..n in order")
    print(json.dumps({"records": len(got)}))


def admin_ops(bs):
    a = admin(bs)
    name = f"adm-{uuid.uuid4().hex[:8]}"
    create_topic(bs, name, 2, {"retention.ms": "3600000"})
    md = a.list_topics(timeout=DEADLINE_S)
    if name not in md.topics or len(md.topics[name].partitions) != 2:
        fail(f"metadata after create: {md.topics.get(name)}")
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    cfg = a.describe_configs([res])[res].result(timeout=DEADLINE_S)
    if cfg["retention.ms"].value != "3600000":
        fail(f"retention.ms is {cfg['retention.ms'].value}")
    # An unsupported config is refused with INVALID_CONFIG.
    try:
        list(a.create_topics([NewTopic(name + "-c", 1, 1, config={"cleanup.policy": "compact"})]).values())[0].result(timeout=DEADLINE_S)
        fail("cleanup.policy=compact was accepted")
    except KafkaException as e:
        if "INVALID_CONFIG" not in str(e) and "nvalid" not in str(e):
            fail(f"unexpected error for compact: {e}")
    a.create_partitions([NewPartitions(name, 4)])[name].result(timeout=DEADLINE_S)
    md = a.list_topics(name, timeout=DEADLINE_S)
    if len(md.topics[name].partitions) != 4:
        fail("create_partitions did not grow the topic")
    a.delete_topics([name])[name].result(timeout=DEADLINE_S)
    md = a.list_topics(timeout=DEADLINE_S)
    if name in md.topics:
        fail("topic still listed after delete")
    print(json.dumps({"ok": True}))


def offsets_for_times(bs):
    topic = f"oft-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    base = int(time.time() * 1000) - 100_000
    for i in range(100):
        p.produce(topic, value=f"v{i}".encode(), timestamp=base + i * 1000)
        p.flush(DEADLINE_S)
    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4()}"})
    want = {0: 0, 50: 1, 50_500: 51, 99_000: 99}
    for delta, off in want.items():
        r = c.offsets_for_times([TopicPartition(topic, 0, base + delta)], timeout=DEADLINE_S)
        if r[0].offset != off:
            fail(f"offsets_for_times({delta}) = {r[0].offset}, want {off}")
    r = c.offsets_for_times([TopicPartition(topic, 0, base + 200_000)], timeout=DEADLINE_S)
    if r[0].offset not in (-1,):
        fail(f"a time after every record gives {r[0].offset}, want -1 (end)")
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=DEADLINE_S)
    if (lo, hi) != (0, 100):
        fail(f"watermarks {lo},{hi}")
    c.close()
    print(json.dumps({"ok": True}))


def txn(bs):
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{uuid.uuid4()}"})
    p.init_transactions(DEADLINE_S)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"committed-{i}".encode())
    p.commit_transaction(DEADLINE_S)
    p.begin_transaction()
    for i in range(7):
        p.produce(topic, value=f"aborted-{i}".encode())
    p.flush(DEADLINE_S)
    p.abort_transaction(DEADLINE_S)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"committed2-{i}".encode())
    p.commit_transaction(DEADLINE_S)
    rc = [m.value().decode() for m in consume_all(bs, topic, 15, "read_committed", partitions=[0])]
    want = [f"committed-{i}" for i in range(10)] + [f"committed2-{i}" for i in range(5)]
    if rc != want:
        fail(f"read_committed saw {rc}")
    ru = [m.value().decode() for m in consume_all(bs, topic, 22, "read_uncommitted", partitions=[0])]
    if sorted(ru) != sorted(want + [f"aborted-{i}" for i in range(7)]):
        fail(f"read_uncommitted saw {ru}")
    print(json.dumps({"read_committed": len(rc), "read_uncommitted": len(ru)}))


GROUP_TOPIC = "group-topic"
GROUP = "g-resume"


def group_phase1(bs):
    create_topic(bs, GROUP_TOPIC, 4)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(400):
        p.produce(GROUP_TOPIC, value=f"m{i}".encode(), partition=i % 4)
    p.flush(DEADLINE_S)
    conf = {"bootstrap.servers": bs, "group.id": GROUP, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    assigned = {}

    def on_assign(name):
        def cb(consumer, parts):
            assigned[name] = sorted(p.partition for p in parts)
        return cb

    c1 = Consumer(conf)
    c1.subscribe([GROUP_TOPIC], on_assign=on_assign("c1"))
    c2 = Consumer(conf)
    c2.subscribe([GROUP_TOPIC], on_assign=on_assign("c2"))
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline and not (assigned.get("c1") and assigned.get("c2") and
                                           len(set(assigned["c1"]) | set(assigned["c2"])) == 4 and
                                           not set(assigned["c1"]) & set(assigned["c2"])):
        c1.poll(0.2)
        c2.poll(0.2)
    if not (assigned.get("c1") and assigned.get("c2")):
        fail(f"two members did not share the partitions: {assigned}")
    # Read 100 records through c1 and c2, commit, then c2 leaves: c1 must get all 4 partitions.
    seen = 0
    while seen < 100 and time.time() < deadline:
        for c in (c1, c2):
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen += 1
    c1.commit(asynchronous=False)
    c2.commit(asynchronous=False)
    c2.close()
    while time.time() < deadline and assigned.get("c1") != [0, 1, 2, 3]:
        c1.poll(0.2)
    if assigned.get("c1") != [0, 1, 2, 3]:
        fail(f"after c2 left, c1 has {assigned.get('c1')}")
    committed = c1.committed([TopicPartition(GROUP_TOPIC, p) for p in range(4)], timeout=DEADLINE_S)
    total = sum(max(tp.offset, 0) for tp in committed)
    c1.close()
    print(json.dumps({"committed_total": total}))


def group_phase2(bs, committed_total):
    c = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    committed = c.committed([TopicPartition(GROUP_TOPIC, p) for p in range(4)], timeout=DEADLINE_S)
    total = sum(max(tp.offset, 0) for tp in committed)
    if total != committed_total:
        fail(f"committed offsets after restart sum to {total}, before {committed_total}")
    c.subscribe([GROUP_TOPIC])
    got = 0
    deadline = time.time() + DEADLINE_S
    while got < 400 - committed_total and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    if got != 400 - committed_total:
        fail(f"resumed consumer read {got}, want {400 - committed_total}")
    c.close()
    print(json.dumps({"resumed": got}))


def produce_acked(bs, topic, n, outfile):
    acked = []

    def cb(err, msg):
        if err is None:
            acked.append(msg.value().decode())

    try:
        create_topic(bs, topic, 2)
    except KafkaException:
        pass
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 20000})
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=f"r{i}".encode(), partition=i % 2, on_delivery=cb)
                break
            except BufferError:  # the local queue is full (the broker may be down): wait
                p.poll(0.1)
        if i % 100 == 0:
            p.poll(0)
    p.flush(30)
    with open(outfile, "w") as f:
        json.dump(acked, f)
    print(json.dumps({"acked": len(acked)}))


def consume_check(bs, topic, ackfile):
    acked = set(json.load(open(ackfile)))
    if not acked:
        fail("the producer had nothing acknowledged: the check below would hold vacuously")
    got = {m.value().decode() for m in consume_all(bs, topic, len(acked), "read_uncommitted", partitions=[0, 1])}
    missing = acked - got
    if missing:
        fail(f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}")
    print(json.dumps({"acked": len(acked), "present": len(got)}))


def consume_values(bs, topic, isolation):
    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    tp = TopicPartition(topic, 0)
    ends = {}
    for iso in ("read_committed", "read_uncommitted"):
        probe = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4()}",
                          "isolation.level": iso})
        ends[iso] = probe.get_watermark_offsets(tp, timeout=DEADLINE_S, cached=False)[1]
        probe.close()
    c.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            fail(f"consume error {m.error()}")
        values.append(m.value().decode())
    else:
        fail("no end of partition within the deadline")
    c.close()
    print(json.dumps({"values": values, "ends": ends}))


def main():
    cmd, bs, *rest = sys.argv[1:]
    {
        "codecs": lambda: codecs(bs),
        "admin": lambda: admin_ops(bs),
        "offsets_for_times": lambda: offsets_for_times(bs),
        "txn": lambda: txn(bs),
        "group_phase1": lambda: group_phase1(bs),
        "group_phase2": lambda: group_phase2(bs, int(rest[0])),
        "produce_acked": lambda: produce_acked(bs, rest[0], int(rest[1]), rest[2]),
        "consume_check": lambda: consume_check(bs, rest[0], rest[1]),
        "consume_values": lambda: consume_values(bs, rest[0], rest[1]),
    }[cmd]()


if __name__ == "__main__":
    main()
