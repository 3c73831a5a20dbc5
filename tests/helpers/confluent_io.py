"""Small confluent-kafka routines for server tests: create a topic, produce while recording
exactly which offsets were acknowledged, and read a topic up to its high watermarks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

READ_TIMEOUT_S = 60.0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """CreateTopics through the admin API; raises if the broker reports an error."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=1)])
    futures[topic].result(timeout=30)


@dataclass
class AckLog:
    """What the broker acknowledged: (partition, offset) -> value, plus failures."""

    acked: dict[tuple[int, int], bytes] = field(default_factory=dict)
    failed: list[bytes] = field(default_factory=list)
    # Offsets acknowledged twice for different records: an offset handed out again.
    reused: list[tuple[int, int]] = field(default_factory=list)

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            key = (msg.partition(), msg.offset())
            if key in self.acked and self.acked[key] != msg.value():
                self.reused.append(key)
            self.acked[key] = msg.value()
        else:
            self.failed.append(msg.value())


def acks_all_producer(bootstrap: str, **overrides: Any) -> Producer:
    """A producer whose acknowledgements mean the broker has the records (acks=all)."""
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2}
    config.update(overrides)
    return Producer(config)


def produce(
    producer: Producer,
    topic: str,
    values: Iterable[bytes],
    log: AckLog,
    after_each: Callable[[], bool] | None = None,
    max_in_flight: int = 100_000,
) -> None:
    """Produce keyed records (key derived from the value), recording acks in `log`.

    `after_each` runs after every record and ends the stream by returning True; crash tests
    use it to kill the broker mid-stream. `max_in_flight` paces the stream to the broker's
    acknowledgements, so a long stream really is in flight when something happens.
    Does not flush.
    """
    for value in values:
        while True:
            try:
                producer.produce(topic, key=value[-3:], value=value, on_delivery=log.on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports to drain it
                producer.poll(0.05)
        producer.poll(0)
        while len(producer) > max_in_flight:
            producer.poll(0.01)
        if after_each is not None and after_each():
            return


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """partition -> high watermark (the next offset to be written)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                         "enable.auto.commit": False})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[tuple[int, int], bytes]:
    """Every record from offset 0 to the high watermark: (partition, offset) -> value.

    Offsets must be dense and each read once; a duplicate or a gap fails here.
    """
    ends = high_watermarks(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-all",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: dict[tuple[int, int], bytes] = {}
    next_offset = dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        while any(next_offset[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"read stalled at {next_offset}, ends {ends}"
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                p, offset = cast(int, msg.partition()), cast(int, msg.offset())
                assert offset == next_offset[p], f"partition {p}: got {offset}, expected " \
                                                  f"{next_offset[p]} (gap or duplicate)"
                next_offset[p] = offset + 1
                records[(p, offset)] = cast(bytes, msg.value())
    finally:
        consumer.close()
    return records


def create_share_topic(bootstrap: str, topic: str, group: str, partitions: int,
                       group_configs: dict[str, str]) -> None:
    """A topic for share group `group`, and the group's dynamic configs (Kafka names, e.g.
    share.auto.offset.reset) set with IncrementalAlterConfigs on the GROUP resource."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    create_topic(bootstrap, topic, partitions)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
               for name, value in group_configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(timeout=30)


def produce_ids(bootstrap: str, topic: str, ids: Iterable[int], partitions: int,
                batch_records: int = 10_000) -> None:
    """Record `i` has the value str(i) and goes to partition i % partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": batch_records})
    for i in ids:
        producer.produce(topic, str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0
