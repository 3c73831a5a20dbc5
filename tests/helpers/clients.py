"""The Python Kafka clients behind one small interface, for interop tests.

Each adapter creates a topic through the client's own admin API, produces a `Workload` with
the client's default producer settings (only compression is chosen), and reads a topic back
with assign() + seek to beginning, returning `Consumed` records. The Java client has the same
interface in `helpers.java`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol, cast

from helpers.workload import Consumed, Workload

CONSUME_TIMEOUT_S = 60.0


class ClientAdapter(Protocol):
    name: str
    codecs: tuple[str, ...]

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None: ...

    def produce(self, bootstrap: str, workload: Workload, compression: str) -> None: ...

    def consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]: ...


ALL_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


class ConfluentAdapter:
    """confluent-kafka (librdkafka)."""

    name = "confluent"
    codecs: tuple[str, ...] = ALL_CODECS

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        # Extra client settings in this client's own names (security, for instance).
        self.config = dict(config or {})

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap, **self.config})
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                                replication_factor=1)])
        futures[topic].result(timeout=30)

    def produce(self, bootstrap: str, workload: Workload, compression: str) -> None:
        from confluent_kafka import Producer

        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression,
                             **self.config})
        for i in range(workload.count):
            while True:
                try:
                    producer.produce(workload.topic, key=workload.key(i), value=workload.value(i),
                                     headers=list(workload.headers(i)),  # type: ignore[arg-type]
                                     timestamp=workload.timestamp(i), on_delivery=on_delivery)
                    break
                except BufferError:  # local queue full: let deliveries drain it
                    producer.poll(0.05)
            producer.poll(0)
        assert producer.flush(60) == 0, "records still undelivered after 60s"
        assert not errors, f"{len(errors)} delivery errors, first: {errors[0]}"

    def consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

        consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"assign-only-{topic}",  # required by the client, never joined
            "enable.auto.commit": False,
            **self.config,
        })
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: list[Consumed] = []
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        try:
            while len(records) < count and time.monotonic() < deadline:
                for msg in consumer.consume(num_messages=1000, timeout=0.5):
                    if msg.error():
                        raise KafkaException(msg.error())
                    records.append(Consumed(
                        cast(int, msg.partition()), cast(int, msg.offset()), msg.key(),
                        msg.value(), list(msg.headers() or []),  # type: ignore[arg-type]
                        msg.timestamp()[1]))
        finally:
            consumer.close()
        return records


class KafkaPythonAdapter:
    """kafka-python (pure Python; snappy/lz4/zstd need python-snappy, lz4, zstandard)."""

    name = "kafka-python"
    codecs: tuple[str, ...] = ALL_CODECS

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        # Extra client settings in this client's own names (security, for instance).
        self.config = dict(config or {})

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, **self.config)
        try:
            admin.create_topics({topic: {"num_partitions": partitions,
                                         "replication_factor": 1}})
        finally:
            admin.close()

    def produce(self, bootstrap: str, workload: Workload, compression: str) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap,
                                 compression_type=None if compression == "none" else compression,
                                 **self.config)
        try:
            futures = [
                producer.send(workload.topic, key=workload.key(i), value=workload.value(i),
                              headers=workload.headers(i), timestamp_ms=workload.timestamp(i))
                for i in range(workload.count)
            ]
            producer.flush(60)
            for future in futures:
                future.get(timeout=1)  # raises the delivery error, if any
        finally:
            producer.close(timeout=10)

    def consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 **self.config)
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records: list[Consumed] = []
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        try:
            while len(records) < count and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=500, max_records=5000).values():
                    records.extend(Consumed(r.partition, r.offset, r.key, r.value,
                                            [tuple(h) for h in r.headers], r.timestamp)
                                   for r in batch)
        finally:
            consumer.close(autocommit=False)
        return records


class AiokafkaAdapter:
    """aiokafka (asyncio; codecs through cramjam)."""

    name = "aiokafka"
    codecs: tuple[str, ...] = ALL_CODECS

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        # Extra client settings in this client's own names (security, for instance).
        self.config = dict(config or {})

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        asyncio.run(self._create_topic(bootstrap, topic, partitions))

    async def _create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **self.config)
        await admin.start()
        try:
            response = await admin.create_topics(
                [NewTopic(topic, num_partitions=partitions, replication_factor=1)])
            codes = {t[0]: t[1] for t in response.topic_errors}
            assert codes == {topic: 0}, f"CreateTopics errors: {response.topic_errors}"
        finally:
            await admin.close()

    def produce(self, bootstrap: str, workload: Workload, compression: str) -> None:
        asyncio.run(self._produce(bootstrap, workload, compression))

    async def _produce(self, bootstrap: str, workload: Workload, compression: str) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type=None if compression == "none" else compression, **self.config)
        await producer.start()
        try:
            futures = [
                await producer.send(workload.topic, workload.value(i), key=workload.key(i),
                                    headers=workload.headers(i),
                                    timestamp_ms=workload.timestamp(i))
                for i in range(workload.count)
            ]
            await producer.flush()
            await asyncio.wait_for(asyncio.gather(*futures), timeout=60)
        finally:
            await producer.stop()

    def consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]:
        return asyncio.run(self._consume_assign(bootstrap, topic, partitions, count))

    async def _consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest", **self.config)
        await consumer.start()
        records: list[Consumed] = []
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while len(records) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500, max_records=5000)
                for batch in batches.values():
                    records.extend(Consumed(r.partition, r.offset, r.key, r.value,
                                            [tuple(h) for h in r.headers], r.timestamp)
                                   for r in batch)
        finally:
            await consumer.stop()
        return records
