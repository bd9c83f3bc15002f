#!/usr/bin/env python3
"""Real-client scenarios against `mirrorlog serve`, with aiokafka 0.14 (asyncio).

Each subcommand is one phase of a scenario; tests/broker_aiokafka.rs starts, stops and restarts
the broker between phases. Every check raises on failure (non-zero exit with a message), and so
does any protocol error aiokafka logs (see `ErrorLogs`).

  aiokafka_scenarios.py codecs BOOTSTRAP
  aiokafka_scenarios.py admin BOOTSTRAP
  aiokafka_scenarios.py offsets BOOTSTRAP
  aiokafka_scenarios.py txn BOOTSTRAP
  aiokafka_scenarios.py group_phase1 BOOTSTRAP        (two members, rebalance on leave, commit)
  aiokafka_scenarios.py group_phase2 BOOTSTRAP TOTAL  (after a restart: resume from the commit)
"""
import asyncio
import json
import logging
import sys
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

DEADLINE_S = 60  # hang guard for every wait below; never a pass/fail timing
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


class ErrorLogs(logging.Handler):
    """Collects what aiokafka logs at WARNING and above: against a correct broker a healthy run
    logs none of it (a protocol error, an unexpected error code, a failed connection), except
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
logging.getLogger("aiokafka").addHandler(LOGS)
logging.getLogger("aiokafka").setLevel(logging.WARNING)


async def admin(bs):
    a = AIOKafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=DEADLINE_S * 1000)
    await a.start()
    return a


def check_errors(resp, what):
    """Every (name, code, ...) entry of a create/delete topics answer has error code 0."""
    obj = resp.to_object()
    for key in ("topic_errors", "topic_error_codes", "topics", "responses"):
        for t in obj.get(key, []):
            if t.get("error_code", 0) != 0:
                fail(f"{what}: {t}")


async def create_topic(bs, name, partitions=1, config=None):
    a = await admin(bs)
    try:
        check_errors(await a.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})]),
                     "create_topics")
    finally:
        await a.close()


async def consume(bs, topic, n, partitions, isolation="read_uncommitted"):
    c = AIOKafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False,
                         auto_offset_reset="earliest")
    await c.start()
    try:
        c.assign([TopicPartition(topic, p) for p in partitions])
        out = []
        deadline = time.time() + DEADLINE_S
        while len(out) < n and time.time() < deadline:
            for recs in (await c.getmany(timeout_ms=500)).values():
                out.extend(recs)
        return out
    finally:
        await c.stop()


async def codecs(bs):
    topic = f"codecs-{uuid.uuid4().hex[:8]}"
    await create_topic(bs, topic, 1)
    sent = []
    base_ts = int(time.time() * 1000) - 10_000
    for codec in CODECS:
        p = AIOKafkaProducer(bootstrap_servers=bs, enable_idempotence=True, acks="all",
                             compression_type=codec, linger_ms=5)
        await p.start()
        try:
            futures = []
            for i in range(200):
                name = codec or "none"
                key = f"{name}-k{i}".encode()
                value = (f"{name}-value-{i}-" + "x" * (i % 50)).encode() + bytes([i % 256])
                headers = [("h1", f"{i}".encode()), ("codec", name.encode())]
                ts = base_ts + len(sent)
                futures.append(await p.send(topic, value=value, key=key, headers=headers,
                                            partition=0, timestamp_ms=ts))
                sent.append((key, value, headers, ts))
            await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S)
        finally:
            await p.stop()
    got = await consume(bs, topic, len(sent), [0])
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


async def admin_ops(bs):
    a = await admin(bs)
    try:
        name = f"adm-{uuid.uuid4().hex[:8]}"
        check_errors(await a.create_topics([NewTopic(name, 2, 1, topic_configs={"retention.ms": "3600000"})]),
                     "create_topics")
        desc = {t["topic"]: t for t in await a.describe_topics([name])}
        if len(desc[name]["partitions"]) != 2:
            fail(f"describe after create: {desc}")
        resps = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        entries = {}
        for r in resps:
            for res in r.to_object()["resources"]:
                if res["error_code"] != 0:
                    fail(f"describe_configs: {res}")
                for e in res["config_entries"]:
                    entries[e["config_names"]] = e["config_value"]
        if entries.get("retention.ms") != "3600000":
            fail(f"describe_configs: retention.ms is {entries.get('retention.ms')}")
        # AlterConfigs (aiokafka has no IncrementalAlterConfigs): the configs given become the
        # topic's, retention.ms left out goes back to the default.
        for r in await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name,
                                                       configs={"max.message.bytes": "2000000"})]):
            for res in r.to_object()["resources"]:
                if res["error_code"] != 0:
                    fail(f"alter_configs: {res}")
        entries = {}
        for r in await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)]):
            for res in r.to_object()["resources"]:
                for e in res["config_entries"]:
                    entries[e["config_names"]] = (e["config_value"], e.get("config_source"))
        if entries["max.message.bytes"] != ("2000000", 1) or entries["retention.ms"][1] == 1:
            fail(f"after alter_configs: {entries}")
        await a.create_partitions({name: NewPartitions(4)})
        desc = {t["topic"]: t for t in await a.describe_topics([name])}
        if len(desc[name]["partitions"]) != 4:
            fail("create_partitions did not grow the topic")
        check_errors(await a.delete_topics([name]), "delete_topics")
        if name in await a.list_topics():
            fail("topic still listed after delete")
    finally:
        await a.close()
    print(json.dumps({"ok": True}))


async def offsets(bs):
    topic = f"oft-{uuid.uuid4().hex[:8]}"
    await create_topic(bs, topic, 1)
    p = AIOKafkaProducer(bootstrap_servers=bs, acks="all")
    await p.start()
    base = int(time.time() * 1000) - 100_000
    try:
        for i in range(100):
            await p.send_and_wait(topic, value=f"v{i}".encode(), partition=0, timestamp_ms=base + i * 1000)
    finally:
        await p.stop()
    c = AIOKafkaConsumer(bootstrap_servers=bs)
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        want = {0: 0, 50: 1, 50_500: 51, 99_000: 99}
        for delta, off in want.items():
            r = (await c.offsets_for_times({tp: base + delta}))[tp]
            if r is None or r.offset != off or r.timestamp != base + off * 1000:
                fail(f"offsets_for_times({delta}) = {r}, want {off}")
        r = (await c.offsets_for_times({tp: base + 200_000}))[tp]
        if r is not None:
            fail(f"a time after every record gives {r}, want None")
        lo, hi = (await c.beginning_offsets([tp]))[tp], (await c.end_offsets([tp]))[tp]
        if (lo, hi) != (0, 100):
            fail(f"beginning/end offsets {lo},{hi}")
    finally:
        await c.stop()
    print(json.dumps({"ok": True}))


async def txn(bs):
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    await create_topic(bs, topic, 1)
    p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"tx-{uuid.uuid4()}")
    group = f"txg-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    await p.start()
    try:
        async with p.transaction():
            for i in range(10):
                await p.send(topic, value=f"committed-{i}".encode(), partition=0)
        await p.begin_transaction()
        for i in range(7):
            await p.send_and_wait(topic, value=f"aborted-{i}".encode(), partition=0)
        await p.abort_transaction()
        # Consume-transform-produce: a group's offset committed with the transaction, and one
        # aborted with it.
        async with p.transaction():
            for i in range(5):
                await p.send(topic, value=f"committed2-{i}".encode(), partition=0)
            await p.send_offsets_to_transaction({tp: 15}, group)
        await p.begin_transaction()
        await p.send_and_wait(topic, value=b"aborted-last", partition=0)
        await p.send_offsets_to_transaction({tp: 20}, group)
        await p.abort_transaction()
    finally:
        await p.stop()
    want = [f"committed-{i}" for i in range(10)] + [f"committed2-{i}" for i in range(5)]
    rc = [m.value.decode() for m in await consume(bs, topic, 15, [0], "read_committed")]
    if rc != want:
        fail(f"read_committed saw {rc}")
    ru = [m.value.decode() for m in await consume(bs, topic, 23, [0], "read_uncommitted")]
    if sorted(ru) != sorted(want + [f"aborted-{i}" for i in range(7)] + ["aborted-last"]):
        fail(f"read_uncommitted saw {ru}")
    c = AIOKafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", group_id=group,
                         enable_auto_commit=False)
    await c.start()
    try:
        end = (await c.end_offsets([tp]))[tp]
        committed = await c.committed(tp)
    finally:
        await c.stop()
    # 10 + a marker + 7 + a marker + 5 + a marker + 1 + a marker.
    if end != 27:
        fail(f"end offset {end}, want 27")
    if committed != 15:
        fail(f"the group's offset committed in the transaction is {committed}, want 15")
    print(json.dumps({"read_committed": len(rc), "read_uncommitted": len(ru)}))


GROUP_TOPIC = "aio-group-topic"
GROUP = "aio-g-resume"


async def group_member(bs):
    c = AIOKafkaConsumer(GROUP_TOPIC, bootstrap_servers=bs, group_id=GROUP,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=10000, heartbeat_interval_ms=500)
    await c.start()
    return c


async def group_phase1(bs):
    # A member's heartbeat answered REBALANCE_IN_PROGRESS while the other joins or leaves: what
    # Kafka answers too, and aiokafka logs it as a warning.
    LOGS.expected.append("because it is rebalancing")
    await create_topic(bs, GROUP_TOPIC, 4)
    p = AIOKafkaProducer(bootstrap_servers=bs, acks="all")
    await p.start()
    try:
        futures = [await p.send(GROUP_TOPIC, value=f"m{i}".encode(), partition=i % 4) for i in range(400)]
        await asyncio.gather(*futures)
    finally:
        await p.stop()
    c1, c2 = await group_member(bs), await group_member(bs)
    seen = 0
    deadline = time.time() + DEADLINE_S

    def shared():
        a1, a2 = {tp.partition for tp in c1.assignment()}, {tp.partition for tp in c2.assignment()}
        return a1 and a2 and not a1 & a2 and len(a1 | a2) == 4

    while time.time() < deadline and not (shared() and seen >= 100):
        for c in (c1, c2):
            seen += sum(len(r) for r in (await c.getmany(timeout_ms=200, max_records=10)).values())
    if not shared():
        fail(f"two members did not share the partitions: {c1.assignment()} {c2.assignment()}")
    await c1.commit()
    await c2.commit()
    await c2.stop()
    while time.time() < deadline and {tp.partition for tp in c1.assignment()} != {0, 1, 2, 3}:
        await c1.getmany(timeout_ms=200, max_records=1)  # read, not committed: phase 2 reads it again
    if {tp.partition for tp in c1.assignment()} != {0, 1, 2, 3}:
        fail(f"after c2 left, c1 has {c1.assignment()}")
    total = 0
    for p in range(4):
        total += await c1.committed(TopicPartition(GROUP_TOPIC, p)) or 0
    await c1.stop()
    print(json.dumps({"committed_total": total}))


async def group_phase2(bs, committed_total):
    c = await group_member(bs)
    try:
        total = 0
        for p in range(4):
            total += await c.committed(TopicPartition(GROUP_TOPIC, p)) or 0
        if total != committed_total:
            fail(f"committed offsets after restart sum to {total}, before {committed_total}")
        got = 0
        deadline = time.time() + DEADLINE_S
        while got < 400 - committed_total and time.time() < deadline:
            got += sum(len(r) for r in (await c.getmany(timeout_ms=500)).values())
        if got != 400 - committed_total:
            fail(f"resumed consumer read {got}, want {400 - committed_total}")
    finally:
        await c.stop()
    print(json.dumps({"resumed": got}))


def main():
    cmd, bs, *rest = sys.argv[1:]
    coro = {
        "codecs": lambda: codecs(bs),
        "admin": lambda: admin_ops(bs),
        "offsets": lambda: offsets(bs),
        "txn": lambda: txn(bs),
        "group_phase1": lambda: group_phase1(bs),
        "group_phase2": lambda: group_phase2(bs, int(rest[0])),
    }[cmd]()
    asyncio.run(asyncio.wait_for(coro, 3 * DEADLINE_S))
    if LOGS.records:
        fail("aiokafka logged warnings or errors:\n" + "\n".join(LOGS.records[:20]))


if __name__ == "__main__":
    main()
