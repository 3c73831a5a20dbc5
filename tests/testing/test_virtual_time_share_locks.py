"""Virtual time and share groups: a record a confluent-kafka share consumer acquired and never
acknowledged is released when the test moves time past its acquisition lock (30 s,
`group.share.record.lock.duration.ms`), and another member of the share group (a
confluent-kafka or a Java share consumer) gets it, in well under 2 s of wall time.

Both members stay alive (their heartbeats keep coming on real time and renew their 45 s
share sessions), so what frees the record is the lock alone. A member that joins is given
partitions only once `group.share.assignment.interval.ms` (1 s, KIP-1263) has passed on the
broker's clock since the last assignment, so the test moves time by that first; the same
holds for the first member, whose partitions come with the target computed after their share
state is initialized, one heartbeat after it joined.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka import admin as adm
from helpers.java import harness_command
from helpers.polling import poll_until, wait_for
from helpers.wire_client import WireConnection

from groupcoord.testing import KafkaBroker
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.wire.generated.share_group_describe import ShareGroupDescribeRequest

pytestmark = pytest.mark.interop

LOCK_MS = 30_000
ASSIGNMENT_INTERVAL_MS = 1_000
HEARTBEAT_MS = 300
SETUP_TIMEOUT_S = 60.0
WALL_BUDGET_S = 2.0
QUIET_S = 0.5
# The Java harness's share-consume mode accepts a record whose decimal id ends in 0.
RECORD = b"10"


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


def _wait_for_assigned_members(conn: WireConnection, group: str, count: int,
                               assigned: bool = True) -> None:
    def ready() -> bool:
        members = conn.call(ShareGroupDescribeRequest(group_ids=[group]), 1).groups[0].members
        return len(members) == count and (
            not assigned or all(m.assignment.topic_partitions for m in members))

    wait_for(ready, f"{count} members in {group}", SETUP_TIMEOUT_S)


class ConfluentTaker:
    def __init__(self, broker: KafkaBroker, topic: str, group: str, _dir: Path) -> None:
        self.consumer = _share_consumer(broker, group, "implicit")
        self.consumer.subscribe([topic])

    def records(self, seconds: float) -> list[bytes]:
        return _poll_values(self.consumer, seconds)

    def close(self) -> None:
        self.consumer.close()


class JavaTaker:
    """The harness's `share-consume` mode. Its JSON lines are buffered until it exits, but it
    marks each record it finishes with a file `done-<id>` in its directory at once."""

    def __init__(self, broker: KafkaBroker, topic: str, group: str, workdir: Path) -> None:
        self.workdir = workdir
        self.proc = subprocess.Popen(
            [*harness_command("share-consume"), "--bootstrap", broker.bootstrap_servers,
             "--topic", topic, "--group", group, "--dir", str(workdir),
             "--timeout-ms", "120000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def records(self, seconds: float) -> list[bytes]:
        done = self.workdir / f"done-{RECORD.decode()}"
        # Written by the consumer subprocess once it has the record.
        return [RECORD] if poll_until(done.exists, seconds, interval=0.01) else []

    def close(self) -> None:
        (self.workdir / "stop").touch()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


TAKERS = {"confluent": ConfluentTaker, "java": JavaTaker}


@pytest.mark.parametrize("taker_client", sorted(TAKERS))
def test_an_unacknowledged_record_is_released_when_its_lock_expires(
        taker_client: str, unique_topic: str, unique_group: str, tmp_path: Path) -> None:
    group_config = {"group.share.heartbeat.interval.ms": str(HEARTBEAT_MS)}
    with KafkaBroker(clock="manual", group_config=group_config) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        conn = WireConnection(host, int(port), client_id="vt-share")
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        _read_from_earliest(broker, unique_group)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce(unique_topic, value=RECORD, partition=0)
        assert producer.flush(10) == 0

        holder = _share_consumer(broker, unique_group, "explicit")
        taker = None
        try:
            holder.subscribe([unique_topic])
            assert _poll_values(holder, QUIET_S) == []
            _wait_for_assigned_members(conn, unique_group, 1, assigned=False)
            broker.advance(ASSIGNMENT_INTERVAL_MS)
            assert _poll_values(holder, SETUP_TIMEOUT_S) == [RECORD]  # acquired, never acked
            taker = TAKERS[taker_client](broker, unique_topic, unique_group, tmp_path)
            broker.advance(ASSIGNMENT_INTERVAL_MS)
            _wait_for_assigned_members(conn, unique_group, 2)
            # One second short of the lock: the record stays with the holder.
            broker.advance(LOCK_MS - ASSIGNMENT_INTERVAL_MS - 1000)
            assert taker.records(QUIET_S) == []
            started = time.monotonic()
            broker.advance(1000)
            assert taker.records(WALL_BUDGET_S) == [RECORD]
            assert time.monotonic() - started < WALL_BUDGET_S
        finally:
            if taker is not None:
                taker.close()
            holder.close()
            conn.close()
