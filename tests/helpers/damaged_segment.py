"""One damaged batch in the middle of a closed segment, the same on groupcoord and on Kafka.

The scenario of `tests/interop/test_interop_read_damage.py`: a topic with one partition and 1 MiB
segments (Kafka's smallest `segment.bytes`) gets `BATCHES` batches of `PER_BATCH` records,
one batch per produce (confluent-kafka, flushed after every `PER_BATCH` records), so the
first segment closes with about a thousand records in it. After a clean stop the first
bytes of the batch at `DAMAGED_OFFSET` are overwritten in place; nothing here imports
groupcoord, so the same code damages both brokers' files.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

PER_BATCH = 10
BATCHES = 150
VALUE_SIZE = 1000
DAMAGED_OFFSET = 450
GARBAGE = b"\xa5" * 64  # a length field of -1515870811: no valid batch starts here
TOPIC_CONFIG = {"segment.bytes": str(1 << 20)}
_PREFIX = struct.Struct(">qi")  # base offset, batch length


def value_of(offset: int) -> bytes:
    return f"{offset:08d}".encode().ljust(VALUE_SIZE, b".")


def produce(bootstrap: str, topic: str) -> None:
    """`BATCHES` batches of `PER_BATCH` records, each acknowledged before the next."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60_000,
                         "compression.type": "none", "enable.idempotence": False,
                         "acks": "all"})
    failed: list[KafkaError] = []

    def report(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failed.append(err)

    for batch in range(BATCHES):
        for i in range(PER_BATCH):
            producer.produce(topic, value_of(batch * PER_BATCH + i), partition=0,
                             on_delivery=report)
        assert producer.flush(30) == 0
    assert not failed, failed


def batch_positions(segment: Path) -> dict[int, int]:
    """Base offset -> file position of every batch in a segment file."""
    data = segment.read_bytes()
    found, pos = {}, 0
    while pos + _PREFIX.size <= len(data):
        base, length = _PREFIX.unpack_from(data, pos)
        found[base] = pos
        pos += length + 12
    return found


def damage(partition_dir: Path) -> tuple[Path, int]:
    """Overwrite the first bytes of the batch at `DAMAGED_OFFSET` in the first segment,
    which must be closed; the segment and the damaged position."""
    segments = sorted(partition_dir.glob("*.log"))
    assert len(segments) >= 2, "the damaged segment must be closed"
    first = segments[0]
    positions = batch_positions(first)
    assert DAMAGED_OFFSET in positions and max(positions) > DAMAGED_OFFSET + 2 * PER_BATCH
    position = positions[DAMAGED_OFFSET]
    with first.open("r+b") as f:
        f.seek(position)
        f.write(GARBAGE)
    return first, position


def segment_end(partition_dir: Path) -> int:
    """The base offset of the second segment: the end of the damaged one."""
    return int(sorted(partition_dir.glob("*.log"))[1].stem)


@dataclass
class Consumed:
    """What a consumer read from one offset on: the record offsets, then the first error."""

    offsets: list[int] = field(default_factory=list)
    error_code: int | None = None
    error_text: str = ""
    values_ok: bool = True


def consume_confluent(bootstrap: str, topic: str, offset: int, count: int,
                      timeout_s: float = 30.0) -> Consumed:
    """librdkafka from `offset` until `count` records, the first error, or the timeout."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"damage-{offset}",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    out = Consumed()
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + timeout_s
        while len(out.offsets) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                out.error_code, out.error_text = err.code(), err.str()
                break
            out.offsets.append(msg.offset())
            out.values_ok = out.values_ok and msg.value() == value_of(msg.offset())
    except KafkaException as exc:
        err = exc.args[0]
        out.error_code, out.error_text = err.code(), err.str()
    finally:
        consumer.close()
    return out
