"""Transactions with unmodified clients: the Java KafkaProducer (4.4) and confluent-kafka.

- Committed and aborted transactions: a read_committed consumer (Java and librdkafka) gets
  exactly the committed records, a read_uncommitted one gets every record.
- consume-transform-produce with `sendOffsetsToTransaction`: every input record appears once
  in the output, and the group's committed offset is the input's end.
- A broker SIGKILLed while a transaction is open: after the restart the committed data is
  all there, the open transaction holds read_committed consumers back until a new producer
  with the same transactional id fences it (the coordinator aborts it), and nothing of it
  is ever visible to read_committed consumers.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers import confluent_io, java
from helpers.broker import BROKER_KINDS, BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]


def _need_java() -> None:
    reason = java.unavailable_reason()
    if reason:
        pytest.skip(reason)


def _java_read(bootstrap: str, topic: str, isolation: str, count: int,
               timeout_ms: int = 20_000) -> list[tuple[bytes | None, bytes | None]]:
    """Records a fresh Java consumer reads from the start (exit 2: fewer than `count`)."""
    run = java.run_harness("consume-assign", bootstrap, "--topic", topic, "--count", str(count),
                           "--timeout-ms", str(timeout_ms), "--prop",
                           f"isolation.level={isolation}", expect=(0, 2))
    return [(r.key, r.value) for r in map(java.decode_record, run.of("record"))]


def _confluent_read(bootstrap: str, topic: str, isolation: str,
                    quiet_s: float = 3.0) -> list[tuple[bytes | None, bytes | None]]:
    """Everything a librdkafka consumer gets until nothing arrives for `quiet_s`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time()}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[bytes | None, bytes | None]] = []
    last = time.monotonic()
    try:
        while time.monotonic() - last < quiet_s:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            out.append((msg.key(), msg.value()))
            last = time.monotonic()
    finally:
        consumer.close()
    return out


def _values(records: list[tuple[Any, Any]]) -> list[str]:
    return [v.decode() for _k, v in records]


def _expected(plan: list[tuple[str, int]], outcomes: tuple[str, ...]) -> list[str]:
    return [f"{o}-{step}-{i}" for step, (o, n) in enumerate(plan) if o in outcomes
            for i in range(n)]


@pytest.mark.parametrize("broker", BROKER_KINDS, indirect=True)
def test_java_transactions_commit_and_abort(broker: BrokerProcess) -> None:
    _need_java()
    bootstrap, topic = broker.bootstrap, "txn-java"
    confluent_io.create_topic(bootstrap, topic, 1)
    plan = [("commit", 5), ("abort", 3), ("commit", 2), ("abort", 4)]
    run = java.run_harness("txn-produce", bootstrap, "--topic", topic, "--transactional-id",
                           "java-tx", "--plan", ",".join(f"{o}:{n}" for o, n in plan))
    assert [e["outcome"] for e in run.of("txn")] == ["commit", "abort", "commit", "abort"]
    committed = _expected(plan, ("commit",))
    everything = _expected(plan, ("commit", "abort"))
    # One more than there is: the reader must time out having seen exactly these.
    assert _values(_java_read(bootstrap, topic, "read_committed", 8, 8000)) == committed
    assert _values(_java_read(bootstrap, topic, "read_uncommitted", 14)) == everything
    assert _values(_confluent_read(bootstrap, topic, "read_committed")) == committed
    assert _values(_confluent_read(bootstrap, topic, "read_uncommitted")) == everything


@pytest.mark.parametrize("broker", BROKER_KINDS, indirect=True)
def test_confluent_transactions_commit_and_abort(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "txn-confluent"
    confluent_io.create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "rdkafka-tx"})
    producer.init_transactions(30)
    plan = [("commit", 4), ("abort", 6), ("commit", 3)]
    for step, (outcome, n) in enumerate(plan):
        producer.begin_transaction()
        for i in range(n):
            producer.produce(topic, key=f"{step}-{i}", value=f"{outcome}-{step}-{i}", partition=0)
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = _expected(plan, ("commit",))
    everything = _expected(plan, ("commit", "abort"))
    assert _values(_confluent_read(bootstrap, topic, "read_committed")) == committed
    assert _values(_confluent_read(bootstrap, topic, "read_uncommitted")) == everything
    if java.unavailable_reason() is None:
        assert _values(_java_read(bootstrap, topic, "read_committed", 8, 8000)) == committed


def test_java_consume_transform_produce(broker: BrokerProcess) -> None:
    _need_java()
    bootstrap = broker.bootstrap
    confluent_io.create_topic(bootstrap, "ctp-in", 1)
    confluent_io.create_topic(bootstrap, "ctp-out", 1)
    producer = confluent_io.acks_all_producer(bootstrap)
    for i in range(30):
        producer.produce("ctp-in", key=f"k{i}", value=f"v{i}", partition=0)
    producer.flush(30)
    run = java.run_harness("ctp", bootstrap, "--input", "ctp-in", "--output", "ctp-out",
                           "--group", "ctp-group", "--transactional-id", "ctp-tx",
                           "--count", "30")
    assert run.of("ctp-done")[0]["count"] == 30
    out = _values(_java_read(bootstrap, "ctp-out", "read_committed", 30))
    assert out == [f"out-v{i}" for i in range(30)]
    offsets = java.run_harness("group-offsets", bootstrap, "--group", "ctp-group").of("offset")
    assert [(o["partition"], o["offset"]) for o in offsets] == [(0, 30)]


def test_open_transaction_survives_sigkill_and_is_aborted(broker: BrokerProcess) -> None:
    _need_java()
    bootstrap, topic = broker.bootstrap, "txn-crash"
    confluent_io.create_topic(bootstrap, topic, 1)
    plan = [("commit", 3), ("open", 4)]
    run = java.run_harness("txn-produce", bootstrap, "--topic", topic, "--transactional-id",
                           "crash-tx", "--plan", "commit:3,open:4")
    assert run.of("open")
    broker.kill()
    broker.start()
    bootstrap = broker.bootstrap
    committed = _expected(plan, ("commit",))
    # The open transaction still holds read_committed readers at its first offset.
    assert _values(_confluent_read(bootstrap, topic, "read_committed")) == committed
    assert len(_confluent_read(bootstrap, topic, "read_uncommitted")) == 7
    # A new instance of the producer fences the crashed one: its transaction is aborted.
    after = java.run_harness("txn-produce", bootstrap, "--topic", topic, "--transactional-id",
                             "crash-tx", "--plan", "commit:2")
    assert after.of("txn-produced")
    final = _values(_java_read(bootstrap, topic, "read_committed", 6, 8000))
    assert final == committed + ["commit-0-0", "commit-0-1"]
