#!/usr/bin/env python3
"""The consumer side of tests/soak.rs, with confluent-kafka (librdkafka).

  soak.py consume_source BOOTSTRAP TOPIC GROUP OUTFILE STOPFILE
      A consumer group on the source reads TOPIC and commits synchronously every 100 records,
      until STOPFILE exists; then commits once more and writes to OUTFILE what it consumed
      ([partition, offset, value] each) and its last acknowledged commit per partition.
  soak.py consume_dest BOOTSTRAP TOPIC GROUP OUTFILE
      After the failover: the same group on the destination (resuming from the offsets the
      mirror synced) reads every partition to its end and writes what it consumed to OUTFILE.

Waits have deadlines only as hang guards; tests/soak.rs decides pass or fail.
"""
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

DEADLINE_S = 120
FAST = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "retry.backoff.ms": 50,
        "retry.backoff.max.ms": 500, "log_level": 2}


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def consumer(bs, group):
    return Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "session.timeout.ms": 6000, **FAST})


def commit(c, last):
    try:
        for tp in c.commit(asynchronous=False) or []:
            if tp.error is None and tp.offset >= 0:
                last[str(tp.partition)] = max(last.get(str(tp.partition), -1), tp.offset)
    except KafkaException:
        pass  # the broker died mid-commit: that commit is not acknowledged


def consume_source(bs, topic, group, outfile, stopfile):
    c = consumer(bs, group)
    c.subscribe([topic])
    got, last = [], {}
    while not os.path.exists(stopfile):
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got.append([m.partition(), m.offset(), m.value().decode()])
        if len(got) % 100 == 0:
            commit(c, last)
    commit(c, last)
    c.close()
    json.dump({"consumed": got, "committed": last}, open(outfile, "w"))
    print(json.dumps({"consumed": len(got), "committed": last}))


def consume_dest(bs, topic, group, outfile):
    probe = Consumer({"bootstrap.servers": bs, "group.id": group + "-probe", **FAST})
    md = probe.list_topics(topic, timeout=DEADLINE_S).topics[topic]
    ends = {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=DEADLINE_S)[1]
            for p in md.partitions}
    probe.close()
    c = consumer(bs, group)
    c.subscribe([topic])
    got, at = [], {}
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        if all(at.get(p, -1) >= end for p, end in ends.items()):
            break
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at[m.partition()] = max(at.get(m.partition(), -1), m.offset())
                continue
            fail(f"consume: {m.error()}")
        got.append([m.partition(), m.offset(), m.value().decode()])
        at[m.partition()] = max(at.get(m.partition(), -1), m.offset() + 1)
    else:
        fail(f"did not reach the end of every partition: at {at}, ends {ends}")
    c.close()
    json.dump({"consumed": got}, open(outfile, "w"))
    print(json.dumps({"consumed": len(got), "ends": ends}))


def main():
    cmd, *rest = sys.argv[1:]
    if cmd == "consume_source":
        consume_source(*rest)
    elif cmd == "consume_dest":
        consume_dest(*rest)
    else:
        fail(f"unknown subcommand {cmd}")


if __name__ == "__main__":
    main()
