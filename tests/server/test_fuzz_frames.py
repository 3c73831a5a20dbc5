"""Foundation must-show 3: hostile frames never take the broker down.

At least 100,000 random and mutated frames (see `helpers.frames`) go to a running broker over
many concurrent connections within a minute. Each connection sends a burst of frames and
reads the answers until the broker hangs up or goes quiet; then it closes its sending side
(so a frame promising more bytes than follow ends in EOF, as a truncated frame would). Afterwards the broker process must still be
up and a well-formed confluent-kafka producer and consumer must work against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import time
from dataclasses import dataclass

import pytest
from helpers.broker import BrokerProcess
from helpers.confluent_io import AckLog, acks_all_producer, create_topic, produce, read_all
from helpers.frames import HEADER_END, FieldFuzzer, Mutator, Seed, build_seeds, frame

TARGET_FRAMES = 100_000
TIME_BUDGET_S = 55.0
CONCURRENCY = 32
MAX_BURST = 48
FIELD_POOL = 2000
READ_TIMEOUT_S = 3.0
IDLE_S = 0.25
FUZZ_SEED = int(os.environ.get("GROUPCOORD_FUZZ_SEED", "20240611"))


@dataclass
class Stats:
    frames: int = 0
    connections: int = 0
    responses: int = 0
    reset_by_broker: int = 0
    read_timeouts: int = 0
    connect_failures: int = 0


def count_frames(data: bytes) -> int:
    """Whole length-prefixed responses in what the broker sent back."""
    count, pos = 0, 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            break
        count, pos = count + 1, pos + 4 + size
    return count


async def read_until_quiet(reader: asyncio.StreamReader) -> bytes:
    """Read until the broker closes or stays silent for IDLE_S."""
    received = bytearray()
    while True:
        try:
            chunk = await asyncio.wait_for(reader.read(1 << 16), IDLE_S)
        except TimeoutError:
            return bytes(received)
        if not chunk:
            return bytes(received)
        received += chunk


async def send_burst(port: int, burst: list[bytes], stats: Stats) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        stats.connect_failures += 1
        return
    stats.connections += 1
    stats.frames += len(burst)
    try:
        writer.write(b"".join(burst))
        await writer.drain()
        received = await read_until_quiet(reader)
        if not reader.at_eof():
            # Still open: the burst ended in valid requests or in a frame promising more
            # bytes. Closing our side turns the latter into a truncated frame.
            writer.write_eof()
            received += await asyncio.wait_for(reader.read(-1), READ_TIMEOUT_S)
        stats.responses += count_frames(received)
    except (ConnectionError, OSError):  # the broker hung up mid-burst: expected
        stats.reset_by_broker += 1
    except TimeoutError:
        stats.read_timeouts += 1
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


class Bursts:
    """Bursts of frames for one connection: requests that decode but carry hostile field
    values (the broker must answer them and keep the connection), usually closed by one
    structurally broken frame (after which the broker may hang up)."""

    def __init__(self, topic: str, seed: int) -> None:
        fields = FieldFuzzer(topic, seed)
        self.pool = [frame(fields().body) for _ in range(FIELD_POOL)]
        self.mutator = Mutator(build_seeds(topic) + [fields() for _ in range(200)], seed)
        self.rng = self.mutator.rng

    def __call__(self) -> list[bytes]:
        burst = [self.rng.choice(self.pool) for _ in range(self.rng.randint(0, MAX_BURST - 1))]
        if not burst or self.rng.random() < 0.8:
            burst.append(self.mutator())
        return burst


async def fuzz(port: int, bursts: Bursts, deadline: float) -> Stats:
    stats = Stats()

    async def worker() -> None:
        # A refused connection means the broker is gone (or not accepting): stop at once.
        while (stats.frames < TARGET_FRAMES and time.monotonic() < deadline
               and not stats.connect_failures):
            await send_burst(port, bursts(), stats)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return stats


@pytest.mark.timeout(180)
def test_broker_survives_100k_hostile_frames(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "fuzz-target", 1)  # so valid Produce/Fetch seeds do work
    bursts = Bursts("fuzz-target", FUZZ_SEED)
    started = time.monotonic()

    stats = asyncio.run(fuzz(broker.port, bursts, started + TIME_BUDGET_S))

    elapsed = time.monotonic() - started
    print(f"fuzz: {stats} in {elapsed:.1f}s (seed {FUZZ_SEED})")
    assert broker.is_running, f"broker died under fuzzing (seed {FUZZ_SEED}): {stats}"
    assert not stats.connect_failures, f"broker stopped accepting connections: {stats}"
    assert stats.frames >= TARGET_FRAMES, f"only {stats.frames} frames in {elapsed:.1f}s"
    assert elapsed < 60, f"fuzzing took {elapsed:.1f}s"
    assert stats.responses > 0, "no request was ever answered"
    assert_clients_still_work(broker)


def assert_clients_still_work(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "after-fuzz", 2)
    log = AckLog()
    producer = acks_all_producer(broker.bootstrap)
    produce(producer, "after-fuzz", [f"ok-{i}".encode() for i in range(200)], log)
    assert producer.flush(30) == 0 and not log.failed
    assert read_all(broker.bootstrap, "after-fuzz", 2) == log.acked


def test_seeds_and_mutator_are_sound() -> None:
    """The generator itself: seeds are well-formed and a fixed seed replays exactly."""
    seeds = build_seeds("fuzz-target")
    assert len(seeds) >= 25
    assert any(s.flexible for s in seeds) and any(not s.flexible for s in seeds)
    for seed in seeds:
        (api_key,) = struct.unpack_from(">h", seed.body, 0)
        assert 0 <= api_key < 100, seed.name
        if seed.flexible:  # empty header tag section where the mutator expects it
            assert seed.body[HEADER_END] == 0, seed.name
            assert seed.body[-1] == 0, seed.name
    assert _replay(seeds, 7, 500) == _replay(seeds, 7, 500)


def _replay(seeds: list[Seed], seed: int, n: int) -> list[bytes]:
    mutator = Mutator(seeds, seed=seed)
    return [mutator() for _ in range(n)]
