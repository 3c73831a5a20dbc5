"""confluent-kafka helpers shared by the produce and fetch benchmarks.

Same client library, same settings against every broker; only the bootstrap address
changes. Records are 1 KiB values with no key, no compression.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

RECORD_SIZE = 1024
#: Deterministic, incompressible-looking 1 KiB payload (compression is off anyway).
PAYLOAD = bytes((i * 131 + 7) % 251 for i in range(RECORD_SIZE))

#: Failures of one run that are reported in its table row instead of aborting the harness.
BENCH_ERRORS: tuple[type[BaseException], ...] = (
    KafkaException, RuntimeError, TimeoutError, OSError, ValueError)

#: Producer settings common to every run; ``acks`` is added per run.
PRODUCER_CONFIG: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 10_000,
    "compression.type": "none",
    "enable.idempotence": False,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 2_097_151,
    "message.timeout.ms": 60_000,
}

#: Consumer settings (librdkafka defaults for fetch sizing, stated explicitly). The one
#: change from the defaults: librdkafka stops fetching for `fetch.queue.backoff.ms` (1 s by
#: default) once its local queue is full, which a broker that delivers faster than this
#: Python loop drains triggers in most runs; the benchmark would then time that pause, not
#: the broker. 10 ms keeps the queue refilled without measuring the client's back-off.
CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": "bench-fetch",
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 1_048_576,
    "fetch.wait.max.ms": 500,
    "fetch.queue.backoff.ms": 10,
}


def create_topic(bootstrap: str, topic: str, timeout_s: float = 15.0,
                 partitions: int = 1, security: dict[str, Any] | None = None) -> str:
    """Create a topic (one partition by default) and wait until metadata shows a leader for
    every partition.

    Returns "" on success. If CreateTopics itself fails, returns the error text and leaves
    the topic to auto-creation by the producer's warm-up record (callers record the note).
    """
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4, **(security or {})})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                  request_timeout=timeout_s)
    try:
        futures[topic].result(timeout=timeout_s)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            return f"CreateTopics failed ({exc}); relying on auto-creation"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=topic, timeout=5)
        tmd = md.topics.get(topic)
        if tmd is not None and tmd.error is None and len(tmd.partitions) == partitions \
                and all(p.leader >= 0 for p in tmd.partitions.values()):
            return ""
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} has no leader after {timeout_s}s")


@dataclass
class ProduceOutcome:
    """What one timed produce run did."""

    records: int
    seconds: float
    errors: int
    first_error: str


def produce(bootstrap: str, topic: str, records: int, acks: str,
            timeout_s: float = 120.0, security: dict[str, Any] | None = None) -> ProduceOutcome:
    """Produce ``records`` 1 KiB records with one producer; time from first send to flush.

    One warm-up record is produced and flushed before the clock starts, so connection
    set-up and metadata are not timed. ``security`` adds TLS/SASL client settings.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **PRODUCER_CONFIG,
                         **(security or {})})
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer.produce(topic, PAYLOAD, on_delivery=on_delivery)
    if producer.flush(30) != 0 or errors:
        raise RuntimeError(f"warm-up produce failed: {errors[:1] or 'flush timed out'}")
    send = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    deadline = start + timeout_s
    for _ in range(records):
        while True:
            try:
                send(topic, PAYLOAD, on_delivery=on_delivery)
                break
            except BufferError:
                poll(0.005)
                if time.perf_counter() > deadline:
                    raise TimeoutError("produce queue stayed full") from None
    left = producer.flush(max(1.0, deadline - time.perf_counter()))
    elapsed = time.perf_counter() - start
    if left:
        raise TimeoutError(f"{left} records still undelivered after {timeout_s}s")
    return ProduceOutcome(records=records, seconds=elapsed, errors=len(errors),
                          first_error=errors[0] if errors else "")


@dataclass
class FetchOutcome:
    """What one timed fetch run did."""

    records: int
    value_bytes: int
    seconds: float
    first_record_s: float


def consume(bootstrap: str, topic: str, records: int, timeout_s: float = 120.0,
            security: dict[str, Any] | None = None) -> FetchOutcome:
    """Read ``records`` records from offset 0 of partition 0 with ``assign()``.

    The clock starts just before ``assign`` and stops when the last expected record has
    been handed to Python; ``first_record_s`` is the time to the first batch. Every value
    is checked to be the 1 KiB payload.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG, **(security or {})})
    got = 0
    value_bytes = 0
    first = 0.0
    try:
        start = time.perf_counter()
        deadline = start + timeout_s
        consumer.assign([TopicPartition(topic, 0, 0)])
        while got < records:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"fetched {got}/{records} records in {timeout_s}s")
            # Never ask for more than remain: consume() waits out its timeout otherwise.
            batch = consumer.consume(num_messages=min(10_000, records - got), timeout=1.0)
            if got == 0 and batch:
                first = time.perf_counter()
            for msg in batch:
                err = msg.error()
                if err is not None:
                    raise RuntimeError(f"fetch error: {err}")
                value = msg.value()
                if value != PAYLOAD:
                    raise RuntimeError(f"unexpected record value at offset {msg.offset()}")
                got += 1
                value_bytes += len(value)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    return FetchOutcome(records=got, value_bytes=value_bytes, seconds=elapsed,
                        first_record_s=first - start)
