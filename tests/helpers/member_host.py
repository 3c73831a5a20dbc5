"""A process hosting consumer-group members of one Python Kafka client, driven over stdin.

Run as `python member_host.py --client confluent|kafka-python|aiokafka --bootstrap B
--topic T --group G --assignor NAME [--protocol classic|consumer] [--prop K=V ...]`
(`--protocol consumer` and `--prop`, extra client settings, are for confluent-kafka). Each member is a real consumer in its own thread,
subscribed to the topic, committing synchronously after processing every non-empty poll
(so what it commits it has processed). The Java harness mode `group-members` speaks the
same protocol, so one test driver serves every client.

stdin, one command per line: `start IDX [INSTANCE_ID]` starts member IDX (client.id
`mIDX`); `leave IDX` closes it the client's normal way (LeaveGroup for dynamic members);
`exit` leaves every member and ends the process. A member that must vanish without leaving
runs alone in a host that the test SIGKILLs.

stdout, one JSON object per line, each with `ev`, the member index `m` and the wall-clock
time `t` (ms) at which it happened: `assigned` /
`revoked` / `lost` (`parts`: partitions), `records` (`recs`: [partition, offset] pairs of
one processed poll), `committed` (`offsets`: {partition: next offset}), `commit_failed`
(`error`), `closed`, `error` (`message`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
POLL_S = 0.2
# kafka-python's poll: long enough that a join and sync complete within one call. When its
# poll times out with the SyncGroup in flight, kafka-python 3.0 can stay a member that never
# heartbeats nor fetches until its session expires (the race of dpkp/kafka-python#2610).
KAFKA_PYTHON_POLL_MS = 2000

_out_lock = threading.Lock()


def emit(event: dict[str, Any]) -> None:
    event["t"] = time.time() * 1000
    line = json.dumps(event, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Member(threading.Thread):
    """One consumer; `run_client` is the client-specific poll/commit loop."""

    def __init__(self, opts: argparse.Namespace, idx: int, instance_id: str | None) -> None:
        super().__init__(daemon=True, name=f"member-{idx}")
        self.opts = opts
        self.idx = idx
        self.instance_id = instance_id
        self.stop = threading.Event()

    def ev(self, kind: str, **fields: Any) -> None:
        emit({"ev": kind, "m": self.idx, **fields})

    def run(self) -> None:
        try:
            RUNNERS[self.opts.client](self)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            self.ev("error", message=f"{type(exc).__name__}: {exc}")
        self.ev("closed")


def _confluent(member: Member) -> None:
    from confluent_kafka import Consumer

    opts = member.opts
    config = {
        "bootstrap.servers": opts.bootstrap, "group.id": opts.group,
        "client.id": f"m{member.idx}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "partition.assignment.strategy": opts.assignor,
        "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
    }
    if opts.protocol == "consumer":
        # The broker owns timeouts and assignment under KIP-848.
        for name in ("partition.assignment.strategy", "session.timeout.ms",
                     "heartbeat.interval.ms"):
            del config[name]
        config["group.protocol"] = "consumer"
    for prop in opts.prop:
        name, _, value = prop.partition("=")
        config[name] = value
    if member.instance_id:
        config["group.instance.id"] = member.instance_id
    consumer = Consumer(config)

    def parts(tps: list[Any]) -> list[int]:
        return sorted(tp.partition for tp in tps)

    consumer.subscribe(
        [opts.topic],
        on_assign=lambda _c, tps: member.ev("assigned", parts=parts(tps)),
        on_revoke=lambda _c, tps: member.ev("revoked", parts=parts(tps)),
        on_lost=lambda _c, tps: member.ev("lost", parts=parts(tps)))
    try:
        while not member.stop.is_set():
            msgs = consumer.consume(num_messages=500, timeout=POLL_S)
            recs = [[int(m.partition() or 0), int(m.offset() or 0)]
                    for m in msgs if m.error() is None]
            if not recs:
                continue
            member.ev("records", recs=recs)
            _confluent_commit(member, consumer, _next_offsets(recs))
    finally:
        consumer.close()


def _confluent_commit(member: Member, consumer: Any, offsets: dict[int, int]) -> None:
    """Synchronous commit of `offsets`; reports `committed` or `commit_failed`."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        done = consumer.commit(offsets=[TopicPartition(member.opts.topic, p, o)
                                        for p, o in offsets.items()], asynchronous=False)
    except KafkaException as exc:
        member.ev("commit_failed", error=str(exc))
        return
    failed = [str(tp.error) for tp in done or [] if tp.error is not None]
    if failed:
        member.ev("commit_failed", error=failed[0])
    else:
        member.ev("committed", offsets=offsets)


def _kafka_python(member: Member) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    opts = member.opts
    consumer = KafkaConsumer(
        bootstrap_servers=opts.bootstrap, group_id=opts.group, client_id=f"m{member.idx}",
        enable_auto_commit=False, auto_offset_reset="earliest",
        partition_assignment_strategy=[_assignor_class("kafka", opts.assignor)],
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            member.ev("revoked", parts=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            member.ev("assigned", parts=sorted(tp.partition for tp in assigned))

    consumer.subscribe([opts.topic], listener=Listener())
    try:
        while not member.stop.is_set():
            batches = consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=500)
            recs = [[r.partition, r.offset] for batch in batches.values() for r in batch]
            if not recs:
                continue
            member.ev("records", recs=recs)
            offsets = _next_offsets(recs)
            try:
                consumer.commit({TopicPartition(opts.topic, p): OffsetAndMetadata(o, "", -1)
                                 for p, o in offsets.items()})
            except Exception as exc:  # noqa: BLE001 - the client raises several kinds
                member.ev("commit_failed", error=f"{type(exc).__name__}: {exc}")
                continue
            member.ev("committed", offsets=offsets)
    finally:
        consumer.close()


def _aiokafka(member: Member) -> None:
    asyncio.run(_aiokafka_loop(member))


async def _aiokafka_loop(member: Member) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

    opts = member.opts
    consumer = AIOKafkaConsumer(
        bootstrap_servers=opts.bootstrap, group_id=opts.group, client_id=f"m{member.idx}",
        enable_auto_commit=False, auto_offset_reset="earliest",
        partition_assignment_strategy=(_assignor_class("aiokafka", opts.assignor),),
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            member.ev("revoked", parts=sorted(tp.partition for tp in revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            member.ev("assigned", parts=sorted(tp.partition for tp in assigned))

    consumer.subscribe([opts.topic], listener=Listener())
    await consumer.start()
    try:
        while not member.stop.is_set():
            batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=500)
            recs = [[r.partition, r.offset] for batch in batches.values() for r in batch]
            if not recs:
                continue
            member.ev("records", recs=recs)
            offsets = _next_offsets(recs)
            try:
                await consumer.commit({TopicPartition(opts.topic, p): o
                                       for p, o in offsets.items()})
            except Exception as exc:  # noqa: BLE001 - the client raises several kinds
                member.ev("commit_failed", error=f"{type(exc).__name__}: {exc}")
                continue
            member.ev("committed", offsets=offsets)
    finally:
        await consumer.stop()


def _next_offsets(recs: list[list[int]]) -> dict[int, int]:
    """partition -> the offset to commit after processing `recs` (last offset + 1)."""
    offsets: dict[int, int] = {}
    for p, o in recs:
        offsets[p] = max(offsets.get(p, 0), o + 1)
    return offsets


def _assignor_class(package: str, name: str) -> Any:
    """The client's assignor class for a classic strategy short name."""
    import importlib

    modules = {
        "range": ("coordinator.assignors.range", "RangePartitionAssignor"),
        "roundrobin": ("coordinator.assignors.roundrobin", "RoundRobinPartitionAssignor"),
        "sticky": ("coordinator.assignors.sticky.sticky_assignor", "StickyPartitionAssignor"),
    }
    module, cls = modules[name]
    return getattr(importlib.import_module(f"{package}.{module}"), cls)


RUNNERS: dict[str, Callable[[Member], None]] = {
    "confluent": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("client", "bootstrap", "topic", "group", "assignor"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--prop", action="append", default=[])
    opts = parser.parse_args()
    members: dict[int, Member] = {}
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "start":
            idx = int(cmd[1])
            members[idx] = Member(opts, idx, cmd[2] if len(cmd) > 2 else None)
            members[idx].start()
        elif cmd[0] == "leave":
            members[int(cmd[1])].stop.set()
        elif cmd[0] == "exit":
            break
    for member in members.values():
        member.stop.set()
    for member in members.values():
        member.join(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
