"""Foundation must-show 2: acknowledged records survive restarts and crashes.

- SIGTERM and restart: the broker exits cleanly, every acknowledged record is readable at
  its acknowledged offset, and offsets continue without gaps or duplicates.
- kill -9 in the middle of an acks=all produce stream: the same holds after restart for
  every record whose acknowledgement reached the producer.
- A torn tail (garbage, half a batch, or a batch with a bad CRC appended to the last .log
  segment after a crash) is truncated on restart, the broker says so in its log, and the
  log continues at the last good offset.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from helpers.broker import BrokerProcess
from helpers.confluent_io import (
    AckLog,
    acks_all_producer,
    create_topic,
    high_watermarks,
    produce,
    read_all,
)

pytestmark = pytest.mark.timeout(180)


def values(prefix: str, start: int, stop: int) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(start, stop)]


def produce_acked(broker: BrokerProcess, topic: str, batch: list[bytes]) -> AckLog:
    """Produce and flush while the broker stays up; every record must be acknowledged."""
    log = AckLog()
    producer = acks_all_producer(broker.bootstrap)
    produce(producer, topic, batch, log)
    assert producer.flush(60) == 0
    assert not log.failed, f"{len(log.failed)} records not acknowledged"
    return log


def assert_continues(broker: BrokerProcess, topic: str, partitions: int) -> None:
    """New records land exactly at the old high watermarks and the whole log stays dense."""
    before = high_watermarks(broker.bootstrap, topic, partitions)
    log = produce_acked(broker, topic, values("after", 0, 600))
    firsts: dict[int, int] = {}
    for partition, offset in log.acked:
        firsts[partition] = min(offset, firsts.get(partition, offset))
    for partition, first in firsts.items():
        assert first == before[partition], f"partition {partition}: new offsets start at " \
                                           f"{first}, high watermark was {before[partition]}"
    read_all(broker.bootstrap, topic, partitions)  # asserts density on the way


def test_sigterm_restart_keeps_every_acked_record(broker: BrokerProcess) -> None:
    topic, partitions = "restart-clean", 3
    create_topic(broker.bootstrap, topic, partitions)
    log = produce_acked(broker, topic, values("before", 0, 3000))

    assert broker.stop() == 0, "SIGTERM should stop the broker with exit code 0"
    broker.start()

    assert read_all(broker.bootstrap, topic, partitions) == log.acked
    assert_continues(broker, topic, partitions)


def test_kill9_during_produce_stream_keeps_every_acked_record(broker: BrokerProcess) -> None:
    topic, partitions = "restart-crash", 3
    create_topic(broker.bootstrap, topic, partitions)
    log = AckLog()
    # A short message timeout makes records stuck at the dead broker fail quickly instead
    # of being retried into the restarted one, so "acked" is final before the restart.
    producer = acks_all_producer(broker.bootstrap, **{"message.timeout.ms": 3000})
    sent_after_kill = 0

    def kill_midstream() -> bool:
        """Kill once 2,000 records are acked; end the stream 500 records later."""
        nonlocal sent_after_kill
        if broker.is_running and len(log.acked) >= 2000:
            broker.kill()
        elif not broker.is_running:
            sent_after_kill += 1
        return sent_after_kill >= 500

    stream = (f"stream-{i:06d}".encode() for i in range(1_000_000))
    produce(producer, topic, stream, log, after_each=kill_midstream, max_in_flight=500)
    producer.flush(30)
    assert not broker.is_running, "the stream ended before the broker was killed"
    assert log.failed, "kill -9 should have left some records unacknowledged"

    broker.start()
    stored = read_all(broker.bootstrap, topic, partitions)
    missing = {k: v for k, v in log.acked.items() if stored.get(k) != v}
    assert not missing, f"{len(missing)} acked records lost or moved, e.g. {list(missing)[:5]}"
    assert len(set(stored.values())) == len(stored), "a record was stored twice"
    assert_continues(broker, topic, partitions)


def segment_batches(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte ranges of the record batches in a segment: each batch is
    base offset (int64), batch length (int32), then that many bytes."""
    spans, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        spans.append((pos, pos + 12 + length))
        pos += 12 + length
    return spans


def torn_tail(kind: str, segment: bytes, next_offset: int) -> bytes:
    """Bytes a crash could leave after the last good batch."""
    start, end = segment_batches(segment)[-1]
    copy = bytearray(segment[start:end])
    struct.pack_into(">q", copy, 0, next_offset)
    if kind == "garbage":
        return b"\xde\xad\xbe\xef" * 64
    if kind == "partial-batch":
        return bytes(copy[: len(copy) // 2])
    copy[-1] ^= 0xFF  # "bad-crc": a whole batch whose records no longer match its CRC
    return bytes(copy)


@pytest.mark.parametrize("kind", ["garbage", "partial-batch", "bad-crc"])
def test_torn_tail_is_truncated_on_restart(broker: BrokerProcess, kind: str) -> None:
    topic = f"torn-{kind}"
    create_topic(broker.bootstrap, topic, 1)
    log = produce_acked(broker, topic, values("kept", 0, 500))
    broker.kill()

    segment = last_segment(broker.data_dir / f"{topic}-0")
    good = segment.read_bytes()
    assert segment_batches(good)[-1][1] == len(good), "segment does not end on a batch"
    with segment.open("ab") as f:
        f.write(torn_tail(kind, good, next_offset=len(log.acked)))

    broker.start()

    assert segment.stat().st_size == len(good), "torn tail was not truncated"
    assert re.search(r"truncat", broker.log_text(current_run=True), re.IGNORECASE), \
        "the broker should log that it truncated the segment"
    assert read_all(broker.bootstrap, topic, 1) == log.acked
    assert_continues(broker, topic, 1)


def last_segment(partition_dir: Path) -> Path:
    segments = sorted(partition_dir.glob("*.log"))
    assert segments, f"no .log segments in {partition_dir}"
    return segments[-1]
