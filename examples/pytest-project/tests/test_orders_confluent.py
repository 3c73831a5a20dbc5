"""A consumer group of two confluent-kafka consumers against a broker of the test's own."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

RECORDS = 20
DEADLINE_S = 30.0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(10)


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=f"order-{i}".encode(),
                         partition=i % 2)
    assert producer.flush(10) == 0


def consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "heartbeat.interval.ms": 200})


def test_two_consumers_share_the_orders(groupcoord_fresh_broker, unique_topic, unique_group):
    bootstrap = groupcoord_fresh_broker.bootstrap_servers
    create_topic(bootstrap, unique_topic, partitions=2)
    produce(bootstrap, unique_topic, RECORDS)

    members = [consumer(bootstrap, unique_group) for _ in range(2)]
    for member in members:
        member.subscribe([unique_topic])
    seen: dict[int, set[bytes]] = {0: set(), 1: set()}
    deadline = time.monotonic() + DEADLINE_S
    while sum(len(v) for v in seen.values()) < RECORDS or not all(
            len(m.assignment()) == 1 for m in members):
        assert time.monotonic() < deadline, f"consumed {seen}"
        for index, member in enumerate(members):
            message = member.poll(0.05)
            if message is not None and message.error() is None:
                seen[message.partition()].add(message.value())
                member.commit(message, asynchronous=False)
    # Each member owns one partition; every order was consumed exactly once overall.
    owned = sorted(tp.partition for m in members for tp in m.assignment())
    assert owned == [0, 1]
    assert set().union(*seen.values()) == {f"order-{i}".encode() for i in range(RECORDS)}
    for member in members:
        member.close()

    # A new member of the group starts where the group committed: nothing is left.
    restarted = consumer(bootstrap, unique_group)
    committed = restarted.committed([TopicPartition(unique_topic, p) for p in (0, 1)], 10)
    assert sorted(tp.offset for tp in committed) == [RECORDS // 2, RECORDS // 2]
    restarted.close()
