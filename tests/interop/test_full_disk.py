"""A real full filesystem: 10 cycles of fill / free / kill -9 lose nothing acknowledged.

The broker subprocess keeps its data dir on a 30 MiB tmpfs mounted for the test (root
only; elsewhere the test is skipped with the reason). Each cycle: a confluent-kafka
producer (acks=all, `--fsync always`) streams records; a filler file takes every free byte,
but a few KiB, so an append runs out of space half-way and fails (the broker answers
KAFKA_STORAGE_ERROR and the producer retries); the filler
is removed and the retries land; the broker is SIGKILLed mid-stream and restarted. After
the space comes back, and again after every restart, each record whose acknowledgement reached the producer is readable at its
offset, no offset was acknowledged for two different records, and the log is dense.
"""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import AckLog, acks_all_producer, create_topic, produce, read_all

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC, PARTITIONS, CYCLES = "full-disk", 2, 10
TMPFS_SIZE = "30m"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                           str(mount)], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path, leave: int) -> Path:
    """Take every free byte of the filesystem but `leave`, so the next append runs out of
    space half-way (a short write) rather than at its first byte; the filler file."""
    filler = directory / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        while True:  # the last partial MiB too
            try:
                f.write(b"\0" * 4096)
            except OSError:
                break
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def stream_for(producer: object, log: AckLog, prefix: str, seconds: float) -> None:
    """Produce 2 KiB records at about 200/s for `seconds` (batches of tens of KiB, so a full
    disk cuts them in the middle), serving delivery reports as they come."""
    start = time.monotonic()
    pad = b"." * 2048
    i = 0
    while (elapsed := time.monotonic() - start) < seconds:
        if i < elapsed * 200:
            batch = [f"{prefix}-{i + j:06d}".encode() + pad for j in range(20)]
            produce(producer, TOPIC, batch, log)  # type: ignore[arg-type]
            i += 20
        producer.poll(0.01)  # type: ignore[attr-defined]


def check(acked: AckLog, records: dict[tuple[int, int], bytes], when: str) -> None:
    """Every acknowledged record at its offset (read_all also asserts a dense log)."""
    missing = [k for k, v in acked.acked.items() if records.get(k) != v]
    assert not missing, f"{when}: {len(missing)} acknowledged records lost"
    assert not acked.reused, f"{when}: offsets reused: {acked.reused[:5]}"


def test_fill_free_kill_cycles_lose_nothing(small_fs: Path) -> None:
    factory = BrokerFactory(small_fs.parent)
    broker: BrokerProcess = factory.create(["--fsync", "always"], start=False)
    broker.data_dir = small_fs / "data"
    broker.start()
    try:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        acked = AckLog()
        for cycle in range(CYCLES):
            producer = acks_all_producer(broker.bootstrap, **{
                "enable.idempotence": False, "retry.backoff.ms": 20, "retries": 1000000,
                "message.timeout.ms": 120000})
            stream_for(producer, acked, f"c{cycle}-pre", 0.5)
            filler = fill(small_fs, leave=4096 * (1 + cycle * 3))
            before_full = len(acked.acked)
            stream_for(producer, acked, f"c{cycle}-full", 1.0)
            os.unlink(filler)
            stream_for(producer, acked, f"c{cycle}-freed", 1.0)
            assert len(acked.acked) > before_full, "no acknowledgement after space came back"
            producer.flush(30)
            check(acked, read_all(broker.bootstrap, TOPIC, PARTITIONS), f"cycle {cycle} live")
            stream_for(producer, acked, f"c{cycle}-killed", 0.3)
            broker.kill()
            producer.flush(0)  # whatever was in flight is unacknowledged, not failed-over
            broker.start()
            check(acked, read_all(broker.bootstrap, TOPIC, PARTITIONS), f"cycle {cycle} restart")
        log = broker.log_text()
        assert "No space left on device" in log, "the disk never filled up"
    finally:
        factory.close()
