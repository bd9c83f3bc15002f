#!/usr/bin/env python3
"""A consumer that fails over: joins GROUP on BOOTSTRAP with auto.offset.reset=latest (the
review thread's VK12 setting), subscribes to TOPIC and reads until it has N records, then prints
one JSON line: {"offsets": [...]} — the offsets it received, in order.

  failover_consumer.py BOOTSTRAP GROUP TOPIC N

With a committed offset inside the log it resumes there; with one past the log end it would get
OFFSET_OUT_OF_RANGE, jump to the end and skip whatever comes before its next poll. The wait is a
hang guard (60 s), never a pass/fail timing: it stops early once N records arrived.
"""
import json
import sys
import time

from confluent_kafka import Consumer

DEADLINE_S = 60


def main():
    bs, group, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    c = Consumer({
        "bootstrap.servers": bs,
        "group.id": group,
        "auto.offset.reset": "latest",
        "enable.auto.commit": False,
    })
    c.subscribe([topic])
    got = []
    deadline = time.time() + DEADLINE_S
    while len(got) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append(m.offset())
    c.close()
    print(json.dumps({"offsets": got}))


if __name__ == "__main__":
    main()
