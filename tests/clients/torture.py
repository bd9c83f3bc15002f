#!/usr/bin/env python3
"""Crash torture load and checker for `mirrorlog serve`, with confluent-kafka (librdkafka).

tests/crash_torture.rs starts the broker, runs `load` in the background, SIGKILLs and restarts the
broker on the same port at seeded random moments, then creates STOPFILE and runs `verify`.

  torture.py load BOOTSTRAP OUTDIR STOPFILE
      Three clients until STOPFILE exists, each writing what the broker acknowledged to OUTDIR:
      - an idempotent producer (acks=all) on `torture-idem` (3 partitions): every delivered
        record's (partition, offset, value) -> idem.json;
      - a transactional producer on `torture-txn` (2 partitions), 5 records per transaction:
        transactions whose commit returned -> committed, whose abort returned -> aborted,
        anything else -> uncertain (txn.json);
      - a consumer group `torture-group` on `torture-idem` committing synchronously: the last
        commit the broker acknowledged per partition -> group.json.
  torture.py verify BOOTSTRAP OUTDIR
      After the last restart: every acknowledged record present at its offset with the same bytes
      and no value twice in the log (idempotence across crashes); every committed transaction
      visible exactly once to READ_COMMITTED, no aborted one visible, no transaction left open
      (LSO == HW); the group's committed offsets at or past the last acknowledged commit.

Waits have deadlines (DEADLINE_S) only as hang guards; the verdict never depends on timing.
"""
import hashlib
import json
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 90
IDEM, IDEM_PARTS = "torture-idem", 3
TXN, TXN_PARTS = "torture-txn", 2
GROUP = "torture-group"
# Reconnect fast after a restart (librdkafka backs off up to 10 s by default).
FAST = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 300, "retry.backoff.ms": 50,
        "retry.backoff.max.ms": 300,
        # Refused connections while the broker is down are expected: keep only critical logs.
        "log_level": 2}


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def idem_value(seq):
    """Deterministic bytes of idempotent record `seq` (100-1100 bytes), so a checker can tell a
    changed byte from a right one."""
    h = hashlib.sha256(str(seq).encode()).hexdigest()
    n = 100 + int(h[:4], 16) % 1000
    return (f"i{seq:09d}:" + (h * 20)[:n]).encode()


def create_topics(bs):
    a = AdminClient({"bootstrap.servers": bs})
    fs = a.create_topics([NewTopic(IDEM, num_partitions=IDEM_PARTS, replication_factor=1),
                          NewTopic(TXN, num_partitions=TXN_PARTS, replication_factor=1)])
    for f in fs.values():
        f.result(timeout=DEADLINE_S)


def idempotent_producer(bs, stop, out):
    acked = []

    def cb(err, msg):
        if err is None:
            acked.append([msg.partition(), msg.offset(), msg.value().decode()])

    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, "linger.ms": 2, **FAST})
    seq = 0
    while not stop.is_set():
        try:
            p.produce(IDEM, value=idem_value(seq), partition=seq % IDEM_PARTS, on_delivery=cb)
            seq += 1
        except BufferError:  # queue full while the broker is down
            p.poll(0.05)
            continue
        if seq % 64 == 0:
            p.poll(0)
            time.sleep(0.005)  # a steady load, not a flood the checker must read back
    left = p.flush(DEADLINE_S)
    out["idem"] = {"produced": seq, "acked": acked, "unflushed": left}


def transactional_producer(bs, stop, out):
    committed, aborted, uncertain = [], [], []
    pending = {}

    def cb(err, msg):
        if err is None:
            pending.setdefault(msg.value().decode().split("-")[0], []).append(
                [msg.partition(), msg.offset(), msg.value().decode()])

    def new_producer():
        p = Producer({"bootstrap.servers": bs, "transactional.id": "torture-txn-producer",
                      "transaction.timeout.ms": 10000, **FAST})
        p.init_transactions(DEADLINE_S)
        return p

    p = new_producer()
    txn = 0
    while not stop.is_set():
        name = f"t{txn:06d}"
        txn += 1
        values = [f"{name}-{k}" for k in range(5)]
        try:
            p.begin_transaction()
            for k, v in enumerate(values):
                p.produce(TXN, value=v.encode(), partition=k % TXN_PARTS, on_delivery=cb)
            # Abort every 4th on purpose: aborted data must stay invisible.
            if txn % 4 == 0:
                p.abort_transaction(DEADLINE_S)
                aborted.append(values)
            else:
                p.commit_transaction(DEADLINE_S)
                committed.append(values)
        except KafkaException as e:
            uncertain.append(values)
            err = e.args[0]
            try:
                if err.txn_requires_abort():
                    p.abort_transaction(DEADLINE_S)
                    aborted.append(uncertain.pop())
                elif not err.retriable():
                    p = new_producer()  # fatal: a new instance fences the old one
            except KafkaException:
                p = new_producer()
        except Exception:
            uncertain.append(values)
            p = new_producer()
    p.flush(DEADLINE_S)
    out["txn"] = {"committed": committed, "aborted": aborted, "uncertain": uncertain}


def group_committer(bs, stop, out):
    c = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, **FAST})
    c.subscribe([IDEM])
    last = {}
    n = 0
    while not stop.is_set():
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        n += 1
        if n % 50 == 0:
            try:
                for tp in c.commit(asynchronous=False) or []:
                    if tp.error is None and tp.offset >= 0:
                        last[str(tp.partition)] = max(last.get(str(tp.partition), -1), tp.offset)
            except KafkaException:
                pass  # the broker died mid-commit: that commit is not acknowledged
    c.close()
    out["group"] = last


def load(bs, outdir, stopfile):
    create_topics(bs)
    stop = threading.Event()
    out = {}
    threads = [threading.Thread(target=f, args=(bs, stop, out))
               for f in (idempotent_producer, transactional_producer, group_committer)]
    for t in threads:
        t.start()
    while not os.path.exists(stopfile):
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    for k in ("idem", "txn", "group"):
        if k not in out:
            fail(f"the {k} client thread died")
        with open(os.path.join(outdir, f"{k}.json"), "w") as f:
            json.dump(out[k], f)
    i, t = out["idem"], out["txn"]
    print(json.dumps({"produced": i["produced"], "acked": len(i["acked"]),
                      "committed_txns": len(t["committed"]), "aborted_txns": len(t["aborted"]),
                      "uncertain_txns": len(t["uncertain"]), "group_commits": out["group"]}))


def read_partition(bs, topic, partition, isolation):
    """Every record of one partition up to its end for `isolation`: [(offset, value)]."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "torture-checker",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=DEADLINE_S)
    c.assign([TopicPartition(topic, partition, lo)])
    got = []
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                if m.offset() >= hi:
                    break
                continue
            fail(f"consume {topic}-{partition}: {m.error()}")
        got.append((m.offset(), m.value().decode()))
    c.close()
    return got, hi


def lso_equals_hw(bs, topic, partition):
    rc = Consumer({"bootstrap.servers": bs, "group.id": "torture-checker",
                   "isolation.level": "read_committed"})
    ru = Consumer({"bootstrap.servers": bs, "group.id": "torture-checker",
                   "isolation.level": "read_uncommitted"})
    tp = TopicPartition(topic, partition)
    deadline = time.time() + DEADLINE_S
    try:
        while True:
            lso = rc.get_watermark_offsets(tp, timeout=DEADLINE_S, cached=False)[1]
            hw = ru.get_watermark_offsets(tp, timeout=DEADLINE_S, cached=False)[1]
            if lso == hw:
                return
            if time.time() > deadline:
                fail(f"{topic}-{partition}: a transaction is still open (LSO {lso}, HW {hw})")
            time.sleep(0.5)
    finally:
        rc.close()
        ru.close()


def verify(bs, outdir):
    idem = json.load(open(os.path.join(outdir, "idem.json")))
    txn = json.load(open(os.path.join(outdir, "txn.json")))
    group = json.load(open(os.path.join(outdir, "group.json")))
    if not idem["acked"]:
        fail("the idempotent producer had nothing acknowledged")
    if not txn["committed"]:
        fail("no transaction committed")

    # Idempotent: each acknowledged record at its offset, byte for byte; nothing twice.
    logs = {}
    for p in range(IDEM_PARTS):
        recs, _ = read_partition(bs, IDEM, p, "read_uncommitted")
        logs[p] = dict(recs)
        values = [v for _, v in recs]
        if len(set(values)) != len(values):
            dup = next(v for v in values if values.count(v) > 1)
            fail(f"{IDEM}-{p}: record {dup[:11]} appears more than once")
        for off, v in recs:
            seq = int(v[1:10])
            if v.encode() != idem_value(seq):
                fail(f"{IDEM}-{p} offset {off}: bytes differ from what was produced")
    for p, off, v in idem["acked"]:
        got = logs[p].get(off)
        if got != v:
            fail(f"acknowledged {v[:11]} at {IDEM}-{p} offset {off}: found "
                 f"{'nothing' if got is None else got[:11]}")

    # Transactions: resolved, committed visible once, aborted invisible.
    seen = []
    for p in range(TXN_PARTS):
        lso_equals_hw(bs, TXN, p)
        seen += [v for _, v in read_partition(bs, TXN, p, "read_committed")[0]]
    if len(set(seen)) != len(seen):
        fail("a transactional record is visible twice")
    seen = set(seen)
    for values in txn["committed"]:
        missing = [v for v in values if v not in seen]
        if missing:
            fail(f"committed transaction {values[0]} lost {missing}")
    for values in txn["aborted"]:
        if any(v in seen for v in values):
            fail(f"aborted transaction {values[0]} is visible")
    for values in txn["uncertain"]:
        vis = [v in seen for v in values]
        if any(vis) and not all(vis):
            fail(f"transaction {values[0]} is partly visible: {vis}")

    # Group offsets: at or past the last acknowledged commit, never past the end.
    c = Consumer({"bootstrap.servers": bs, "group.id": GROUP})
    tps = c.committed([TopicPartition(IDEM, p) for p in range(IDEM_PARTS)], timeout=DEADLINE_S)
    c.close()
    for tp in tps:
        want = group.get(str(tp.partition), -1)
        end = max(logs[tp.partition].keys(), default=-1) + 1
        if tp.offset < want or tp.offset > end:
            fail(f"group offset {IDEM}-{tp.partition} is {tp.offset}: "
                 f"acknowledged {want}, log end {end}")
    print(json.dumps({"acked_records": len(idem["acked"]),
                      "log_records": sum(len(v) for v in logs.values()),
                      "committed_txns": len(txn["committed"]), "aborted_txns": len(txn["aborted"]),
                      "uncertain_txns": len(txn["uncertain"]),
                      "group_offsets": {tp.partition: tp.offset for tp in tps}}))


def main():
    cmd, bs, *rest = sys.argv[1:]
    if cmd == "load":
        load(bs, rest[0], rest[1])
    elif cmd == "verify":
        verify(bs, rest[0])
    else:
        fail(f"unknown subcommand {cmd}")


if __name__ == "__main__":
    main()
