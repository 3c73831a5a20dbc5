"""Storage faults through the broker with real clients (issue: faults never lose data).

The broker runs in-process over a fault-injecting storage layer (`storage.faults`); a
confluent-kafka producer (acks=all, no idempotence, so a retry after a half-kept write would
show up as a duplicate) and a consumer group commit while the fault is armed. For each fault:
- while it bites, Produce answers KAFKA_STORAGE_ERROR for the partition and OffsetCommit a
  retriable coordinator error, on the wire, exactly;
- once it clears, the same producer's retries are acknowledged without a restart;
- every acknowledged record is readable at its offset, once, before and after a restart,
  every acknowledged commit is still there, and new records continue at the old high
  watermarks (no offset handed out twice).
A fault on the indexes alone must not fail any request: they are rebuilt from the log.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers.confluent_io import (
    AckLog,
    acks_all_producer,
    create_topic,
    high_watermarks,
    produce,
    read_all,
)
from helpers.threaded_broker import ThreadedBroker
from server.broker_inproc import RawClient

from groupcoord.logformat.batch import build_batch
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import offset_commit
from groupcoord.wire.generated import produce as produce_msg

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

TOPIC, PARTITIONS, GROUP = "faults", 3, "fault-group"
RETRIABLE_COORDINATOR = {int(ErrorCode.COORDINATOR_NOT_AVAILABLE), int(ErrorCode.NOT_COORDINATOR)}

Arm = Callable[[FaultInjectingFileIO], None]
FAULTS: dict[str, tuple[Arm, bool]] = {
    # name: (arm the fault, whether requests must fail while it is armed)
    "disk-full": (lambda io: io.disk_full(), True),
    "eio-from-3rd-write": (
        lambda io: io.add(FaultRule("write", errno.EIO, after=2, times=None)), True),
    "short-writes": (
        lambda io: io.add(FaultRule("write", errno.ENOSPC, times=None, short=True)), True),
    "short-write-and-truncate-refused": (
        lambda io: (io.add(FaultRule("write", errno.ENOSPC, times=None, short=True)),
                    io.add(FaultRule("truncate", errno.EIO, times=None))), True),
    "fsync-eio": (lambda io: io.add(FaultRule("fsync", errno.EIO, times=None)), True),
    "index-writes-enospc": (
        lambda io: (io.add(FaultRule("write", errno.ENOSPC, suffix="index", times=None)),
                    io.add(FaultRule("write", errno.ENOSPC, suffix=".tmp", times=None))),
        False),
}


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i:05d}".encode() for i in range(count)]


def produce_and_flush(bootstrap: str, batch: list[bytes], log: AckLog) -> None:
    producer = acks_all_producer(bootstrap, **{"enable.idempotence": False, "retries": 1000000,
                                              "retry.backoff.ms": 50})
    produce(producer, TOPIC, batch, log)
    assert producer.flush(90) == 0


def commit(bootstrap: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                   timeout=30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


async def raw_errors(port: int, attempts: int) -> tuple[list[int], list[int]]:
    """Produce and OffsetCommit over a raw connection: the error codes the broker answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = RawClient(reader, writer)
    produced, commits = [], []
    try:
        for i in range(attempts):
            batch = build_batch([(b"k", b"raw-%d" % i, [], 1000)])
            request = produce_msg.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
                produce_msg.TopicProduceData(name=TOPIC, partition_data=[
                    produce_msg.PartitionProduceData(index=0, records=batch)])])
            resp = await client.call(request, 9, produce_msg.ProduceResponse)
            produced.append(resp.responses[0].partition_responses[0].error_code)
            commit_req = offset_commit.OffsetCommitRequest(
                group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time_ms=-1, topics=[
                    offset_commit.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                        offset_commit.OffsetCommitRequestPartition(
                            partition_index=1, committed_offset=i, committed_leader_epoch=-1,
                            committed_metadata="")])])
            resp_c = await client.call(commit_req, 8, offset_commit.OffsetCommitResponse)
            commits.append(resp_c.topics[0].partitions[0].error_code)
    finally:
        await client.close()
    return produced, commits


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_loses_nothing_acknowledged(tmp_path: Path, fault: str) -> None:
    arm, must_fail = FAULTS[fault]
    io = FaultInjectingFileIO()
    with ThreadedBroker(tmp_path / "data", file_io=io) as node:
        create_topic(node.bootstrap, TOPIC, PARTITIONS)
        acked = AckLog()
        produce_and_flush(node.bootstrap, values("before", 300), acked)
        commit(node.bootstrap, {0: 10, 1: 20, 2: 30})
        ends_before = high_watermarks(node.bootstrap, TOPIC, PARTITIONS)

        arm(io)
        produced, commits = node.call(raw_errors(node.port, 6))
        if must_fail:
            assert int(ErrorCode.KAFKA_STORAGE_ERROR) in produced, produced
            assert set(produced) <= {0, int(ErrorCode.KAFKA_STORAGE_ERROR)}, produced
            assert RETRIABLE_COORDINATOR & set(commits), commits
            assert io.fired, "the fault never bit"
        else:
            assert set(produced) == {0} and set(commits) == {0}, (produced, commits)
        # The real producer keeps sending while the fault is armed; it must not give up.
        producer = acks_all_producer(node.bootstrap, **{
            "enable.idempotence": False, "retry.backoff.ms": 50, "retries": 1000000})
        produce(producer, TOPIC, values("during", 200), acked)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            producer.poll(0.05)
        io.clear()
        assert producer.flush(90) == 0
        assert not acked.failed, f"{len(acked.failed)} records failed instead of retrying"
        commit(node.bootstrap, {0: 40, 1: 50, 2: 60})

        records = read_all(node.bootstrap, TOPIC, PARTITIONS)
        check_acked(records, acked)
        ok_raw = sum(1 for code in produced if code == 0)
        assert len(records) == 500 + ok_raw
        assert all(records[(p, o)] for p in range(PARTITIONS) for o in range(ends_before[p]))
        assert committed(node.bootstrap) == {0: 40, 1: 50, 2: 60}

        node.restart()
        assert read_all(node.bootstrap, TOPIC, PARTITIONS) == records
        assert committed(node.bootstrap) == {0: 40, 1: 50, 2: 60}
        ends = high_watermarks(node.bootstrap, TOPIC, PARTITIONS)
        after = AckLog()
        produce_and_flush(node.bootstrap, values("after", 60), after)
        for (partition, offset) in after.acked:
            assert offset >= ends[partition], "an offset was handed out twice"


def check_acked(records: dict[tuple[int, int], bytes], acked: AckLog) -> None:
    for key, value in acked.acked.items():
        assert records.get(key) == value, f"acknowledged record {key} lost or changed"
    seen = [v for v in records.values() if not v.startswith(b"raw-")]
    assert len(seen) == len(set(seen)), "a record was stored twice"
