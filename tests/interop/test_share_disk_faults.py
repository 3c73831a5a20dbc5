"""A share consumer (confluent-kafka / librdkafka) through a disk that refuses the share
state's writes: while `__share_group_state` cannot be written, acknowledgements fail with a
retriable error and the state partition fail-stops and reloads; once the disk is back the
consumer goes on without a restart, every acknowledgement confirmed to the client stays
(never delivered again, also after a restart), every record is eventually acknowledged, and
the broker's share state in memory equals a replay of its log."""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.threaded_broker import ThreadedBroker
from server.share_state_support import durable_view, rebuilt

from groupcoord.coordinator.share.state_store import share_state_partition
from groupcoord.server.share_state import STATE_TOPIC, STATE_TOPIC_PARTITIONS
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

TOPIC, GROUP, TOTAL = "share-disk", "share-disk-g", 1_000


def setup(bootstrap: str) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([admin_mod.NewTopic(TOPIC, 1, 1)]).values():
        fut.result(timeout=30)
    configs = {"share.auto.offset.reset": "earliest",
               # Many small fetches, and locks of failed acks expire soon (the minimum).
               "share.partition.max.record.locks": "100",
               "share.record.lock.duration.ms": "15000"}
    entries = [admin_mod.ConfigEntry(k, v, incremental_operation=admin_mod.AlterConfigOpType.SET)
               for k, v in configs.items()]
    resource = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, GROUP,
                                        incremental_configs=entries)
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(timeout=30)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                            "batch.num.messages": 50})
    for i in range(TOTAL):
        producer.produce(TOPIC, str(i).encode(), partition=0)
    assert producer.flush(30) == 0


def share_consumer(bootstrap: str) -> Any:
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([TOPIC])
    return consumer


class Tally:
    """What the client was told: acknowledgements confirmed, failed, redelivered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.confirmed: set[int] = set()
        self.failed_commits = 0
        self.back_after_confirmed: list[int] = []
        self.errors: list[str] = []
        # The consumer holds at 200 confirmed acks until the fault is armed.
        self.reached = threading.Event()
        self.armed = threading.Event()


def consume(bootstrap: str, tally: Tally, stop: threading.Event) -> None:
    consumer = share_consumer(bootstrap)
    try:
        while not stop.is_set():
            batch = [m for m in consumer.poll(0.5) if m.error() is None]
            ids = {int(m.value()) for m in batch}
            for msg in batch:
                consumer.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
            with tally.lock:
                tally.back_after_confirmed += sorted(ids & tally.confirmed)
            try:
                results = consumer.commit_sync(5)
            except ck.KafkaException as exc:
                results = {None: exc}
            with tally.lock:
                if all(err is None for err in results.values()):
                    tally.confirmed |= ids
                else:
                    tally.failed_commits += 1
                    tally.errors.append(repr(results))
            if len(tally.confirmed) >= 200 and not tally.reached.is_set():
                tally.reached.set()
                tally.armed.wait(30)
    finally:
        consumer.close()


def wait_for(condition: Any, timeout_s: float, what: str, detail: Any = str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {detail()}")


def memory_equals_log(node: ThreadedBroker) -> None:
    def check() -> None:
        broker = node.broker
        assert broker is not None
        for key, sp in broker.shares.partitions.items():
            partition = share_state_partition(key, STATE_TOPIC_PARTITIONS)
            assert rebuilt(broker, partition).canonical()[key] == durable_view(sp)
    node.run(check)


def test_share_consumer_rides_out_a_disk_refusing_share_state(tmp_path: Path) -> None:
    io = FaultInjectingFileIO()
    with ThreadedBroker(tmp_path / "data", file_io=io) as node:
        setup(node.bootstrap)
        tally, stop = Tally(), threading.Event()
        thread = threading.Thread(target=consume, args=(node.bootstrap, tally, stop),
                                  daemon=True)
        thread.start()
        try:
            assert tally.reached.wait(60), "200 acks never confirmed"

            def state_partition() -> int:
                broker = node.broker
                assert broker is not None
                topic = broker.topics.get(TOPIC)
                return share_state_partition((GROUP, bytes(topic.topic_id), 0),
                                             STATE_TOPIC_PARTITIONS)

            segment = f"{STATE_TOPIC}-{node.run(state_partition)}/00000000000000000000.log"
            io.add(FaultRule("write", errno.ENOSPC, suffix=segment, times=None, short=True))
            tally.armed.set()
            wait_for(lambda: tally.failed_commits >= 1, 60, "acks refused by the full disk",
                     lambda: (len(tally.confirmed), io.fired[:3], tally.errors[:3]))
            assert io.fired
            io.clear()
            wait_for(lambda: len(tally.confirmed) == TOTAL, 120, "every record acknowledged",
                     lambda: (len(tally.confirmed), tally.failed_commits, tally.errors[-3:]))
        finally:
            stop.set()
            thread.join(30)
        assert not tally.back_after_confirmed, tally.back_after_confirmed[:20]
        assert node.run(lambda: node.broker.shares.state.reloads) >= 1  # type: ignore[union-attr]
        memory_equals_log(node)

        node.restart()
        memory_equals_log(node)
        consumer = share_consumer(node.bootstrap)
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                extra = [int(m.value()) for m in consumer.poll(0.5) if m.error() is None]
                assert not extra, extra
        finally:
            consumer.close()
