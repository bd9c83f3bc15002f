#!/usr/bin/env python3
"""Real-client scenarios against `mirrorlog serve`, with kafka-python 3.0 (pure Python).

Each subcommand is one phase of a scenario; tests/broker_kafka_python.rs starts, stops and
restarts the broker between phases. Every check raises on failure (non-zero exit with a message),
and so does any protocol error kafka-python logs (see `ErrorLogs`).

  kafka_python_scenarios.py codecs BOOTSTRAP
  kafka_python_scenarios.py admin BOOTSTRAP
  kafka_python_scenarios.py offsets BOOTSTRAP
  kafka_python_scenarios.py txn BOOTSTRAP
  kafka_python_scenarios.py group_phase1 BOOTSTRAP        (two members, rebalance on leave, commit)
  kafka_python_scenarios.py group_phase2 BOOTSTRAP TOTAL  (after a restart: resume from the commit)
"""
import json
import logging
import sys
import threading
import time
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidConfigurationError
from kafka.structs import OffsetAndMetadata

DEADLINE_S = 60  # hang guard for every wait below; never a pass/fail timing
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


class ErrorLogs(logging.Handler):
    """Collects what kafka-python logs at WARNING and above: against a correct broker a healthy
    run logs none of it (a protocol error, an unexpected error code, a failed connection), except
    the messages in `expected`."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        self.records = []
        self.expected = []

    def emit(self, record):
        line = self.format(record)
        if not any(e in line for e in self.expected):
            self.records.append(line)


LOGS = ErrorLogs()
# kafka-python's watchdog on its own event loop (a task that ran over 100 ms): the machine's
# load, not the broker.
LOGS.expected.append("It is blocking the event loop")
logging.getLogger("kafka").addHandler(LOGS)
logging.getLogger("kafka").setLevel(logging.WARNING)


def admin(bs):
    return KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=DEADLINE_S * 1000)


def create_topic(bs, name, partitions=1, config=None):
    a = admin(bs)
    a.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})])
    a.close()


def consume(bs, topic, n, partitions, isolation="read_uncommitted"):
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, p) for p in partitions])
    out = []
    deadline = time.time() + DEADLINE_S
    while len(out) < n and time.time() < deadline:
        for recs in c.poll(timeout_ms=500).values():
            out.extend(recs)
    c.close()
    return out


def codecs(bs):
    topic = f"codecs-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    sent = []
    base_ts = int(time.time() * 1000) - 10_000
    for codec in CODECS:
        p = KafkaProducer(bootstrap_servers=bs, enable_idempotence=True, acks="all",
                          compression_type=codec, linger_ms=5)
        futures = []
        for i in range(200):
            name = codec or "none"
            key = f"{name}-k{i}".encode()
            value = (f"{name}-value-{i}-" + "x" * (i % 50)).encode() + bytes([i % 256])
            headers = [("h1", f"{i}".encode()), ("codec", name.encode())]
            ts = base_ts + len(sent)
            futures.append(p.send(topic, value=value, key=key, headers=headers, partition=0,
                                  timestamp_ms=ts))
            sent.append((key, value, headers, ts))
        p.flush(timeout=DEADLINE_S)
        for f in futures:
            f.get(timeout=DEADLINE_S)
        p.close()
    got = consume(bs, topic, len(sent), [0])
    if len(got) != len(sent):
        fail(f"consumed {len(got)} of {len(sent)}")
    for i, ((k, v, h, ts), m) in enumerate(zip(sent, got)):
        if m.offset != i:
            fail(f"record {i} has offset {m.offset}")
        if m.key != k or m.value != v:
            fail(f"record mismatch at offset {m.offset}: {m.key!r} {m.value[:40]!r}")
        if list(m.headers) != h:
            fail(f"headers mismatch at offset {m.offset}: {m.headers}")
        if m.timestamp != ts or m.timestamp_type != 0:
            fail(f"timestamp at offset {m.offset}: {m.timestamp} type {m.timestamp_type}, want {ts}")
    print(json.dumps({"records": len(got)}))


def admin_ops(bs):
    a = admin(bs)
    name = f"adm-{uuid.uuid4().hex[:8]}"
    a.create_topics([NewTopic(name, 2, 1, topic_configs={"retention.ms": "3600000"})])
    desc = {t["name"]: t for t in a.describe_topics([name])}
    if len(desc[name]["partitions"]) != 2:
        fail(f"describe after create: {desc}")
    cfg = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
    # The default filter keeps only what was set: retention.ms, from the topic's own config.
    if list(cfg) != ["retention.ms"] or cfg["retention.ms"]["value"] != "3600000" or \
            cfg["retention.ms"]["config_source"] != "DYNAMIC_TOPIC_CONFIG":
        fail(f"describe_configs: {cfg}")
    # An unsupported config is refused with INVALID_CONFIG.
    try:
        a.create_topics([NewTopic(name + "-c", 1, 1, topic_configs={"cleanup.policy": "compact"})])
        fail("cleanup.policy=compact was accepted")
    except InvalidConfigurationError:
        pass
    a.create_partitions({name: NewPartitions(4)})
    desc = {t["name"]: t for t in a.describe_topics([name])}
    if len(desc[name]["partitions"]) != 4:
        fail("create_partitions did not grow the topic")
    a.delete_topics([name])
    if name in a.list_topics():
        fail("topic still listed after delete")
    a.close()
    print(json.dumps({"ok": True}))


def offsets(bs):
    topic = f"oft-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    p = KafkaProducer(bootstrap_servers=bs, acks="all")
    base = int(time.time() * 1000) - 100_000
    for i in range(100):
        p.send(topic, value=f"v{i}".encode(), partition=0, timestamp_ms=base + i * 1000)
        p.flush(timeout=DEADLINE_S)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    want = {0: 0, 50: 1, 50_500: 51, 99_000: 99}
    for delta, off in want.items():
        r = c.offsets_for_times({tp: base + delta})[tp]
        if r is None or r.offset != off:
            fail(f"offsets_for_times({delta}) = {r}, want {off}")
        if r.timestamp != base + off * 1000:
            fail(f"offsets_for_times({delta}) timestamp {r.timestamp}")
    r = c.offsets_for_times({tp: base + 200_000})[tp]
    if r is not None:
        fail(f"a time after every record gives {r}, want None")
    lo, hi = c.beginning_offsets([tp])[tp], c.end_offsets([tp])[tp]
    if (lo, hi) != (0, 100):
        fail(f"beginning/end offsets {lo},{hi}")
    c.close()
    print(json.dumps({"ok": True}))


def txn(bs):
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    create_topic(bs, topic, 1)
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=f"tx-{uuid.uuid4()}")
    p.init_transactions()
    p.begin_transaction()
    for i in range(10):
        p.send(topic, value=f"committed-{i}".encode(), partition=0)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(7):
        p.send(topic, value=f"aborted-{i}".encode(), partition=0)
    p.flush(timeout=DEADLINE_S)
    p.abort_transaction()
    p.begin_transaction()
    for i in range(5):
        p.send(topic, value=f"committed2-{i}".encode(), partition=0)
    # Consume-transform-produce: a group's offset committed with the transaction, and one
    # aborted with it.
    group = f"txg-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    p.send_offsets_to_transaction({tp: OffsetAndMetadata(15, "", -1)}, group)
    p.commit_transaction()
    p.begin_transaction()
    p.send(topic, value=b"aborted-last", partition=0)
    p.flush(timeout=DEADLINE_S)  # an abort drops what is not sent yet
    p.send_offsets_to_transaction({tp: OffsetAndMetadata(20, "", -1)}, group)
    p.abort_transaction()
    p.close()
    want = [f"committed-{i}" for i in range(10)] + [f"committed2-{i}" for i in range(5)]
    rc = [m.value.decode() for m in consume(bs, topic, 15, [0], "read_committed")]
    if rc != want:
        fail(f"read_committed saw {rc}")
    ru = [m.value.decode() for m in consume(bs, topic, 23, [0], "read_uncommitted")]
    if sorted(ru) != sorted(want + [f"aborted-{i}" for i in range(7)] + ["aborted-last"]):
        fail(f"read_uncommitted saw {ru}")
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False,
                      group_id=group)
    end = c.end_offsets([tp])[tp]
    committed = c.committed(tp)
    c.close()
    # 10 + a marker + 7 + a marker + 5 + a marker + 1 + a marker.
    if end != 27:
        fail(f"end offset {end}, want 27")
    if committed != 15:
        fail(f"the group's offset committed in the transaction is {committed}, want 15")
    print(json.dumps({"read_committed": len(rc), "read_uncommitted": len(ru)}))


GROUP_TOPIC = "kp-group-topic"
GROUP = "kp-g-resume"


def expect_join_before_metadata():
    """A group leader whose first metadata answer for the topic has not arrived when it is asked
    to assign logs this and assigns nothing, then rejoins once the metadata is there (kafka-python
    debounces its metadata refresh; the broker, like Kafka with the stock server.properties'
    `group.initial.rebalance.delay.ms=0`, answers the first JoinGroup at once)."""
    LOGS.expected.append("No partition metadata for topic")


def group_member(bs):
    c = KafkaConsumer(bootstrap_servers=bs, group_id=GROUP, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=500)
    # The topic's metadata first, so that the first assignment has it (see above).
    c.partitions_for_topic(GROUP_TOPIC)
    c.subscribe([GROUP_TOPIC])
    return c


class Member(threading.Thread):
    """A group member polling in its own thread, with polls long enough that a join completes
    inside one: kafka-python 3.0.12 leaves its heartbeat disabled when a JoinGroup/SyncGroup
    round it started completes after the poll that started it timed out (the member is then
    dropped at its session timeout), which two members polled in turn from one thread with short
    timeouts run into. `limit` bounds the records it reads (and commits, when asked)."""

    def __init__(self, bs, limit):
        super().__init__(daemon=True)
        self.c = group_member(bs)
        self.limit, self.seen, self.stop, self.commit = limit, 0, False, threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop:
                n = max(0, min(10, self.limit - self.seen))
                if n == 0:
                    self.c.pause(*self.c.assignment())
                got = self.c.poll(timeout_ms=1000, max_records=max(n, 1))
                if n > 0:
                    read = sum(len(r) for r in got.values())
                    self.seen += read
                    if read:
                        # Committed at once, as an application that reads each record once
                        # does: kafka-python's rebalances are eager (every partition revoked,
                        # positions restarted from the committed offsets), so a record read
                        # and not committed before one is read again by the next owner. A
                        # commit between polls is always in the member's current generation.
                        self.c.commit()
                else:
                    # At its limit, a record can still come from partitions a rebalance just
                    # gave: put it back, so that a position (what a commit writes) never
                    # counts a record `seen` does not.
                    for tp, records in got.items():
                        if records:
                            self.c.seek(tp, records[0].offset)
                if self.commit.is_set():
                    self.c.commit()
                    self.commit.clear()
        except Exception as e:  # reported by the main thread
            self.error = e

    def partitions(self):
        return {tp.partition for tp in self.c.assignment()}

    def finish(self):
        self.stop = True
        self.join(DEADLINE_S)
        if self.error:
            fail(f"member failed: {self.error!r}")


def group_phase1(bs):
    expect_join_before_metadata()
    create_topic(bs, GROUP_TOPIC, 4)
    p = KafkaProducer(bootstrap_servers=bs, acks="all")
    for i in range(400):
        p.send(GROUP_TOPIC, value=f"m{i}".encode(), partition=i % 4)
    p.flush(timeout=DEADLINE_S)
    p.close()
    m1, m2 = Member(bs, 60), Member(bs, 60)
    m1.start()
    deadline = time.time() + DEADLINE_S
    # The first member reads its share alone, so the second one's join always revokes
    # partitions with records read from them; whether it had read them raced the second start
    # before, and when it had they were read twice (the check below failed: committed 60, read
    # 120).
    while time.time() < deadline and m1.seen < m1.limit:
        time.sleep(0.05)
    m2.start()

    def shared():
        a1, a2 = m1.partitions(), m2.partitions()
        return a1 and a2 and not a1 & a2 and len(a1 | a2) == 4

    while time.time() < deadline and not (shared() and m1.seen + m2.seen >= 100):
        time.sleep(0.05)
    if not shared():
        fail(f"two members did not share the partitions: {m1.partitions()} {m2.partitions()}")
    for m in (m1, m2):
        m.limit = m.seen  # read no more
        m.commit.set()
    while time.time() < deadline and (m1.commit.is_set() or m2.commit.is_set()):
        time.sleep(0.05)
    m2.finish()
    m2.c.close()
    while time.time() < deadline and m1.partitions() != {0, 1, 2, 3}:
        time.sleep(0.05)
    if m1.partitions() != {0, 1, 2, 3}:
        fail(f"after c2 left, c1 has {m1.c.assignment()}")
    m1.finish()
    total = sum(m1.c.committed(TopicPartition(GROUP_TOPIC, p)) or 0 for p in range(4))
    if total != m1.seen + m2.seen:
        fail(f"committed {total}, read {m1.seen + m2.seen}")
    m1.c.close()
    print(json.dumps({"committed_total": total}))


def group_phase2(bs, committed_total):
    expect_join_before_metadata()
    c = group_member(bs)
    total = sum(c.committed(TopicPartition(GROUP_TOPIC, p)) or 0 for p in range(4))
    if total != committed_total:
        fail(f"committed offsets after restart sum to {total}, before {committed_total}")
    got = 0
    deadline = time.time() + DEADLINE_S
    while got < 400 - committed_total and time.time() < deadline:
        got += sum(len(r) for r in c.poll(timeout_ms=500).values())
    if got != 400 - committed_total:
        fail(f"resumed consumer read {got}, want {400 - committed_total}")
    c.close()
    print(json.dumps({"resumed": got}))


def main():
    cmd, bs, *rest = sys.argv[1:]
    {
        "codecs": lambda: codecs(bs),
        "admin": lambda: admin_ops(bs),
        "offsets": lambda: offsets(bs),
        "txn": lambda: txn(bs),
        "group_phase1": lambda: group_phase1(bs),
        "group_phase2": lambda: group_phase2(bs, int(rest[0])),
    }[cmd]()
    if LOGS.records:
        fail("kafka-python logged warnings or errors:\n" + "\n".join(LOGS.records[:20]))


if __name__ == "__main__":
    main()
