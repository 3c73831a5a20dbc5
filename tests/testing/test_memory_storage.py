"""The test broker's default storage is memory: real clients produce, consume in a group
and commit against it, in process and as a `serve --data-dir memory` subprocess, and no
file of the broker's data reaches any disk."""

from __future__ import annotations

import os
import tempfile
import time

import pytest
from confluent_kafka import Consumer, Producer
from helpers import confluent_io

from groupcoord.storage.memory_io import MEMORY_ROOT, MemoryFileIO
from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

PARTITIONS = 3
RECORDS = 30


def _scratch_dirs() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("groupcoord-")}


def _produce_consume_commit(broker: KafkaBroker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    confluent_io.create_topic(bootstrap, topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while len(seen) < RECORDS:
        assert time.monotonic() < deadline, f"consumed {len(seen)} of {RECORDS}"
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            seen.add(message.value())
            consumer.commit(message, asynchronous=False)
    consumer.close()
    offsets = broker.describe_group(group)["offsets"][topic]
    assert offsets == {str(p): RECORDS // PARTITIONS for p in range(PARTITIONS)}


def test_in_process_memory_storage(unique_topic: str, unique_group: str) -> None:
    before = _scratch_dirs()
    with KafkaBroker() as broker:
        assert broker.broker is not None
        io = broker.broker.config.file_io
        assert isinstance(io, MemoryFileIO)
        assert _scratch_dirs() == before  # no temporary directory at all
        _produce_consume_commit(broker, unique_topic, unique_group)
        names = {os.path.basename(d) for d in io.dirs}
        assert {f"{unique_topic}-{p}" for p in range(PARTITIONS)} <= names
        assert any(n.startswith("__consumer_offsets-") for n in names)
    assert not os.path.exists(MEMORY_ROOT)


def test_serve_data_dir_memory(unique_topic: str, unique_group: str) -> None:
    with KafkaBroker(subprocess=True) as broker:
        assert broker._process is not None
        assert "--data-dir" in broker._process.args
        assert broker._process.args[broker._process.args.index("--data-dir") + 1] == "memory"
        _produce_consume_commit(broker, unique_topic, unique_group)
    assert not os.path.exists(MEMORY_ROOT)
