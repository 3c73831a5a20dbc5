"""One consumer-group member of a Python Kafka client in a process of its own, so that a
test can SIGKILL it: a member that vanishes without LeaveGroup, whose session must expire.

`python vt_member.py CLIENT BOOTSTRAP TOPIC GROUP SESSION_MS HEARTBEAT_MS [PROTOCOL]` (CLIENT:
confluent, kafka-python, aiokafka; PROTOCOL classic, or consumer for confluent, whose
timeouts are then the broker's) subscribes and polls until killed, printing one JSON line
`{"parts": [...]}` each time its assignment changes (the partitions it owns, sorted).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

POLL_MS = 50
KAFKA_PYTHON_POLL_MS = 2000


def report_changes() -> Callable[[list[int]], None]:
    last: list[list[int] | None] = [None]

    def report(parts: list[int]) -> None:
        parts = sorted(parts)
        if parts != last[0]:
            last[0] = parts
            sys.stdout.write(json.dumps({"parts": parts}) + "\n")
            sys.stdout.flush()
    return report


def confluent(bootstrap: str, topic: str, group: str, session_ms: int, hb_ms: int,
              protocol: str = "classic") -> None:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                              "enable.auto.commit": False}
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config.update({"session.timeout.ms": session_ms, "heartbeat.interval.ms": hb_ms})
    consumer = Consumer(config)
    consumer.subscribe([topic])
    report = report_changes()
    while True:
        consumer.poll(POLL_MS / 1000)
        report([tp.partition for tp in consumer.assignment()])


def kafka_python(bootstrap: str, topic: str, group: str, session_ms: int, hb_ms: int) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=session_ms, heartbeat_interval_ms=hb_ms)
    report = report_changes()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        """Reports from inside `poll`, which then need not return to be heard."""

        def on_partitions_revoked(self, revoked: Any) -> None:
            report([])

        def on_partitions_assigned(self, assigned: Any) -> None:
            report([tp.partition for tp in assigned])

    consumer.subscribe([topic], listener=Listener())
    while True:
        # Long polls: a join and sync complete within one (helpers/member_host.py,
        # KAFKA_PYTHON_POLL_MS, on kafka-python's SyncGroup/poll race).
        consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)


async def aiokafka(bootstrap: str, topic: str, group: str, session_ms: int, hb_ms: int) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=session_ms, heartbeat_interval_ms=hb_ms)
    await consumer.start()
    report = report_changes()
    while True:
        await consumer.getmany(timeout_ms=POLL_MS)
        report([tp.partition for tp in consumer.assignment()])


def main(argv: list[str]) -> None:
    client, bootstrap, topic, group = argv[:4]
    session_ms, hb_ms = int(argv[4]), int(argv[5])
    args: Any = (bootstrap, topic, group, session_ms, hb_ms)
    protocol = argv[6] if len(argv) > 6 else "classic"
    if protocol != "classic" and client != "confluent":
        raise SystemExit(f"{client}: classic protocol only")
    if client == "confluent":
        confluent(*args, protocol)
    elif client == "kafka-python":
        kafka_python(*args)
    elif client == "aiokafka":
        asyncio.run(aiokafka(*args))
    else:
        raise SystemExit(f"unknown client {client!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
