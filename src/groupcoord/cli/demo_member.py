"""One consumer-group member of the demo workload, in its own process.

Run as `python -m groupcoord.cli.demo_member --bootstrap B --topic T --group G --name N
[--delay-ms D] [--session-timeout-ms S] [--leave-reason TEXT]`. The member is a consumer
subscribed to the topic; it processes each record (sleeping `--delay-ms`, which makes a slow
consumer) and then commits the next offsets of what it processed, synchronously, so
everything it commits it has processed.

The consumer is confluent-kafka's, except with `--leave-reason`: librdkafka sends no KIP-800
reason with LeaveGroup, so such a member is a kafka-python consumer, which can (LeaveGroup
v5), and the reason shows up in the coordinator's group events.

Each member runs in a process of its own so that the demo can SIGKILL one: a killed process
sends no LeaveGroup, and the coordinator only notices it when its session times out.

stdin: a line `close` (or end of input) closes the consumer the normal way, which sends
LeaveGroup. stdout: one JSON object per line with `ev` and the wall time `ts` in ms:
`assigned` / `revoked` / `lost` (`parts`), `committed` (`offsets`: {partition: next offset},
`records`: how many were processed), `commit_failed` (`error`), `closed`, `error`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

POLL_TIMEOUT_S = 0.2
# Small batches keep the slow member responsive: librdkafka serves rebalance callbacks only
# between polls, and a long processing stretch would hold up every other member's rejoin.
MAX_BATCH = 25


def emit(ev: str, **fields: Any) -> None:
    """Write one event line; the parent reads these as they come."""
    record = {"ev": ev, "ts": int(time.time() * 1000), **fields}
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m groupcoord.cli.demo_member",
                                description=__doc__)
    for name in ("bootstrap", "topic", "group", "name"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--delay-ms", type=float, default=0.0, help="processing time per record")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--leave-reason", help="use kafka-python and leave with this reason")
    return p


def _watch_stdin(stop: threading.Event) -> None:
    """Set `stop` on a `close` line or when the parent closes our stdin."""
    for line in sys.stdin:
        if line.strip() == "close":
            break
    stop.set()


def _consumer(opts: argparse.Namespace) -> Any:
    from confluent_kafka import Consumer

    return Consumer({
        "bootstrap.servers": opts.bootstrap, "group.id": opts.group, "client.id": opts.name,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": opts.session_timeout_ms,
        # a third of the session timeout at most, so one lost heartbeat is not fatal
        "heartbeat.interval.ms": max(100, opts.session_timeout_ms // 6),
    })


def _process(msgs: list[Any], delay_s: float) -> dict[int, int]:
    """'Process' the records; returns {partition: next offset} to commit."""
    offsets: dict[int, int] = {}
    for m in msgs:
        if delay_s:
            time.sleep(delay_s)
        offsets[m.partition()] = m.offset() + 1
    return offsets


def _commit(consumer: Any, topic: str, offsets: dict[int, int], count: int) -> None:
    from confluent_kafka import KafkaException, TopicPartition

    tps = [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())]
    try:
        done = consumer.commit(offsets=tps, asynchronous=False)
    except KafkaException as exc:  # e.g. a rebalance took the partitions away meanwhile
        emit("commit_failed", error=str(exc))
        return
    errors = [str(tp.error) for tp in done or [] if tp.error is not None]
    if errors:
        emit("commit_failed", error=errors[0])
    else:
        emit("committed", offsets={str(p): o for p, o in offsets.items()}, records=count)


def run_confluent(opts: argparse.Namespace, stop: threading.Event) -> int:
    """Consume, process and commit with librdkafka until told to close."""
    consumer = _consumer(opts)

    def parts(tps: list[Any]) -> list[int]:
        return sorted(tp.partition for tp in tps)

    consumer.subscribe([opts.topic],
                       on_assign=lambda _c, tps: emit("assigned", parts=parts(tps)),
                       on_revoke=lambda _c, tps: emit("revoked", parts=parts(tps)),
                       on_lost=lambda _c, tps: emit("lost", parts=parts(tps)))
    try:
        while not stop.is_set():
            msgs = [m for m in consumer.consume(MAX_BATCH, POLL_TIMEOUT_S) if m.error() is None]
            if msgs:
                _commit(consumer, opts.topic, _process(msgs, opts.delay_ms / 1000), len(msgs))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which shows it
        emit("error", message=repr(exc))
        return 1
    finally:
        consumer.close()  # LeaveGroup: the graceful way out
        emit("closed")
    return 0


def run_kafka_python(opts: argparse.Namespace, stop: threading.Event) -> int:
    """The same loop with kafka-python; closing sends LeaveGroup with `--leave-reason`."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", parts=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", parts=sorted(tp.partition for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=opts.bootstrap, group_id=opts.group, client_id=opts.name,
        enable_auto_commit=False, auto_offset_reset="earliest",
        session_timeout_ms=opts.session_timeout_ms,
        heartbeat_interval_ms=max(100, opts.session_timeout_ms // 6))
    consumer.subscribe([opts.topic], listener=Listener())
    try:
        while not stop.is_set():
            batches = consumer.poll(timeout_ms=POLL_TIMEOUT_S * 1000, max_records=MAX_BATCH)
            for tp, records in batches.items():
                for _ in records:
                    time.sleep(opts.delay_ms / 1000)
                offset = records[-1].offset + 1
                try:
                    consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
                except KafkaError as exc:  # e.g. a rebalance took the partition away
                    emit("commit_failed", error=repr(exc))
                    continue
                emit("committed", offsets={str(tp.partition): offset}, records=len(records))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which shows it
        emit("error", message=repr(exc))
        return 1
    finally:
        # KafkaConsumer.close() leaves without a reason; leave first with one (KIP-800)
        consumer._coordinator.maybe_leave_group(reason=opts.leave_reason)
        consumer.close()
        emit("closed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # Ctrl-C reaches every process of the terminal's group: the demo stops its members
    # itself (SIGKILL when interrupted), so a member ignores it rather than print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    opts = _parser().parse_args(argv)
    stop = threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    if opts.leave_reason:
        return run_kafka_python(opts, stop)
    return run_confluent(opts, stop)


if __name__ == "__main__":
    raise SystemExit(main())
