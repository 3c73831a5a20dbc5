"""A kafka-python consumer-group member for the health scenarios, in its own process.

Run as `python kafka_python_member.py --bootstrap B --topic T --group G --name N [--cap C]
[--leave-reason TEXT]`. The member is a classic-protocol consumer (client.id `N`) with
kafka-python's range assignor, or with `--cap` the `CappedRangeAssignor`: members in
member-id order take at most `C` consecutive partitions each, so when the group has fewer
than partitions/C members, the remaining partitions go to nobody. The coordinator only
relays what the leader's assignor decided, as Kafka does, so the group stays stable while
those partitions wait: silent non-assignment made by a real client. `--leave-reason` is
the KIP-800 reason its LeaveGroup gives when it closes.

It processes every record it polls and commits the next offsets synchronously. stdout, one
JSON object per line with `ev`: `assigned` (`parts`), `committed` (`offsets`: {partition: next
offset}), `commit_failed`, `error` (`message`). stdin: `close` (or end of input) closes the consumer, which
sends LeaveGroup. A member that must not leave is SIGKILLed by the test.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
from kafka.coordinator.assignors.abstract import (
    AbstractPartitionAssignor,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import KafkaError

POLL_MS = 2000  # long enough for a join and sync within one poll (see helpers/member_host)


def emit(ev: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": ev, **fields}, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class CappedRangeAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """Range over member ids, but never more than `cap` partitions of a topic per member."""

    name = "capped-range"
    version = 0
    cap = 2

    @classmethod
    def assign(cls, cluster: Any, members: Any) -> dict[str, Any]:
        ids = sorted(m.member_id for m in members)
        topics = sorted({t for m in members for t in m.metadata.topics})
        plan: dict[str, list[tuple[str, list[int]]]] = {m: [] for m in ids}
        for topic in topics:
            parts = sorted(cluster.partitions_for_topic(topic) or [])
            for i, member in enumerate(ids):
                plan[member].append((topic, parts[i * cls.cap:(i + 1) * cls.cap]))
        return {m: ConsumerProtocolAssignment(cls.version, plan[m], b"") for m in ids}

    @classmethod
    def metadata(cls, topics: Any) -> Any:
        return ConsumerProtocolSubscription(cls.version, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment: Any, generation: Any) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("bootstrap", "topic", "group", "name"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--cap", type=int, help="at most this many partitions per member")
    parser.add_argument("--leave-reason")
    opts = parser.parse_args()
    assignor: Any = RangePartitionAssignor
    if opts.cap is not None:
        CappedRangeAssignor.cap = opts.cap
        assignor = CappedRangeAssignor
    stop = threading.Event()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", parts=sorted(tp.partition for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=opts.bootstrap, group_id=opts.group, client_id=opts.name,
        enable_auto_commit=False, auto_offset_reset="earliest",
        partition_assignment_strategy=[assignor],
        session_timeout_ms=10_000, heartbeat_interval_ms=500)
    consumer.subscribe([opts.topic], listener=Listener())
    try:
        while not stop.is_set():
            batches = consumer.poll(timeout_ms=POLL_MS, max_records=500)
            offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1)
                       for tp, records in batches.items() if records}
            if not offsets:
                continue
            try:
                consumer.commit(offsets)
            except KafkaError as exc:  # a rebalance took the partitions away meanwhile
                emit("commit_failed", error=repr(exc))
                continue
            emit("committed", offsets={str(tp.partition): o.offset for tp, o in offsets.items()})
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
        emit("error", message=repr(exc))
        return 1
    finally:
        if opts.leave_reason:  # close() leaves without a reason; leave first with one
            consumer._coordinator.maybe_leave_group(reason=opts.leave_reason)
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
