"""Virtual time and share groups: a record a confluent-kafka share consumer acquired and never
acknowledged is released when the test moves time past its acquisition lock (30 s,
`group.share.record.lock.duration.ms`), and another member of the share group gets it, in
well under 2 s of wall time.

Both members stay alive (their heartbeats keep coming on real time and renew their 45 s
share sessions), so what frees the record is the lock alone.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka import admin as adm
from helpers.wire_client import WireConnection

from groupcoord.testing import KafkaBroker
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest

pytestmark = pytest.mark.interop

LOCK_MS = 30_000
SETUP_TIMEOUT_S = 30.0
WALL_BUDGET_S = 2.0
QUIET_S = 0.5


def _share_consumer(broker: KafkaBroker, group: str, mode: str) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                          "share.acknowledgement.mode": mode})


def _read_from_earliest(broker: KafkaBroker, group: str) -> None:
    """A share group starts at the latest offset unless told otherwise (Kafka's default)."""
    entry = adm.ConfigEntry("share.auto.offset.reset", "earliest",
                            incremental_operation=adm.AlterConfigOpType.SET)
    resource = adm.ConfigResource(adm.ResourceType.GROUP, group, incremental_configs=[entry])
    admin = adm.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _poll_values(consumer: ShareConsumer, seconds: float, want: int = 1) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(values) < want:
        for message in consumer.poll(0.05) or []:
            if message.error() is None:
                values.append(message.value())
    return values


def test_an_unacknowledged_record_is_released_when_its_lock_expires(
        unique_topic: str, unique_group: str) -> None:
    with KafkaBroker(clock="manual") as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        conn = WireConnection(host, int(port), client_id="vt-share")
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        conn.close()
        _read_from_earliest(broker, unique_group)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce(unique_topic, value=b"job-1", partition=0)
        assert producer.flush(10) == 0

        holder = _share_consumer(broker, unique_group, "explicit")
        taker = _share_consumer(broker, unique_group, "implicit")
        try:
            holder.subscribe([unique_topic])
            assert _poll_values(holder, SETUP_TIMEOUT_S) == [b"job-1"]  # acquired, no ack
            taker.subscribe([unique_topic])
            # One second short of the lock: the record stays with the holder.
            broker.advance(LOCK_MS - 1000)
            assert _poll_values(taker, QUIET_S) == []
            started = time.monotonic()
            broker.advance(1000)
            assert _poll_values(taker, WALL_BUDGET_S) == [b"job-1"]
            assert time.monotonic() - started < WALL_BUDGET_S
        finally:
            taker.close()
            holder.close()
