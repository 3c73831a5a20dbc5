"""aiokafka consumer groups against a broker of the test's own, one of them in virtual time."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

RECORDS = 20


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"order-{i}".encode(), partition=i % 2)
    finally:
        await producer.stop()


def consumer(bootstrap: str, topic: str, group: str, **settings: int) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                            auto_offset_reset="earliest", enable_auto_commit=False,
                            heartbeat_interval_ms=200, **settings)


async def consume_all(member: AIOKafkaConsumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    async with asyncio.timeout(30):
        while len(values) < count:
            for records in (await member.getmany(timeout_ms=100)).values():
                values.extend(r.value for r in records)
    return values


def test_a_member_resumes_from_the_group_commit(groupcoord_fresh_broker, unique_topic,
                                                 unique_group):
    bootstrap = groupcoord_fresh_broker.bootstrap_servers

    async def scenario() -> None:
        await create_topic(bootstrap, unique_topic, 2)
        await produce(bootstrap, unique_topic, RECORDS)
        first = consumer(bootstrap, unique_topic, unique_group)
        await first.start()
        values = await consume_all(first, RECORDS)
        await first.commit()
        await first.stop()
        assert sorted(values) == sorted(f"order-{i}".encode() for i in range(RECORDS))

        await produce(bootstrap, unique_topic, 2)  # two new orders only
        second = consumer(bootstrap, unique_topic, unique_group)
        await second.start()
        try:
            assert sorted(await consume_all(second, 2)) == [b"order-0", b"order-1"]
        finally:
            await second.stop()

    asyncio.run(scenario())


@pytest.mark.groupcoord(clock="manual")
def test_a_silent_member_is_evicted_in_virtual_time(groupcoord_fresh_broker, unique_topic,
                                                    unique_group):
    broker = groupcoord_fresh_broker
    bootstrap = broker.bootstrap_servers

    async def scenario() -> None:
        await create_topic(bootstrap, unique_topic, 2)
        survivor = consumer(bootstrap, unique_topic, unique_group, session_timeout_ms=300_000)
        silent = consumer(bootstrap, unique_topic, unique_group, session_timeout_ms=45_000)
        await survivor.start()
        await silent.start()
        try:
            async with asyncio.timeout(30):
                while len(survivor.assignment()) != 1 or len(silent.assignment()) != 1:
                    await survivor.getmany(timeout_ms=50)
                    await silent.getmany(timeout_ms=50)
            # Stop its heartbeats without a LeaveGroup, as a crashed process would (aiokafka
            # has no public switch for that; a test can also SIGKILL a consumer process).
            silent._coordinator._heartbeat_task.cancel()
            # The broker's clock jumps past the 45 s session (advance blocks until the
            # expiry has run on the broker, so it goes to a thread, off this loop).
            await asyncio.to_thread(broker.advance, 45_000)
            async with asyncio.timeout(5):  # the survivor hears of it at its next heartbeat
                while len(survivor.assignment()) != 2:
                    await survivor.getmany(timeout_ms=50)
        finally:
            await survivor.stop()
            await silent.stop()

    asyncio.run(scenario())
