"""Log recovery at start-up never stalls the event loop: while the data dir is recovered
(CRC scans after an unclean stop, torn tails cut, indexes rebuilt) ApiVersions is answered,
other requests wait until every log is loaded (Kafka serves no partition before its log is
loaded), and the recovery itself repairs what it always did.

The recovery is held inside its first `.log` open by a gate in the data dir's `FileIO`, so
the check does not depend on how long a real recovery takes: with recovery on the event
loop the gate would hold the loop itself and no answer could come.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from pathlib import Path

from broker_inproc import RawClient, make_config, run

from groupcoord.logformat.batch import build_batch
from groupcoord.server.broker import Broker
from groupcoord.storage.fileio import FileIO
from groupcoord.storage.manager import CLEAN_SHUTDOWN_FILE, LogManager
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)

TOPIC = "orders"
# How long the gate holds a recovery that never gets released (the failure case only).
GATE_TIMEOUT_S = 20.0


class GatedFileIO(FileIO):
    """The disk, except that the first open of a `.log` file waits for `release`."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.holding = False

    def open(self, path: str, flags: int, mode: int = 0o644) -> int:
        if path.endswith(".log") and not self.entered.is_set():
            self.holding = True
            self.entered.set()
            self.release.wait(GATE_TIMEOUT_S)
            self.holding = False
        return super().open(path, flags, mode)


def unclean_data_dir(data_dir: Path) -> int:
    """One partition of three records, stopped uncleanly with a torn write at its end;
    returns the torn bytes."""
    mgr = LogManager(str(data_dir))
    plog = mgr.get_or_create(TOPIC, 0, os.urandom(16))
    plog.append(build_batch([(b"k", f"v{i}".encode(), [], 1_000) for i in range(3)]))
    segment = plog.segments[-1].log_path
    mgr.close()
    (data_dir / CLEAN_SHUTDOWN_FILE).unlink()
    torn = b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x01\x00garbage"
    with open(segment, "ab") as f:
        f.write(torn)
    return len(torn)


def test_api_versions_is_answered_while_a_log_is_being_recovered(tmp_path: Path) -> None:
    torn = unclean_data_dir(tmp_path)
    io = GatedFileIO()

    async def go() -> None:
        broker = Broker(make_config(tmp_path, file_io=io))
        starting = asyncio.create_task(broker.start())
        try:
            assert await asyncio.to_thread(io.entered.wait, GATE_TIMEOUT_S)
            reader, writer = await asyncio.open_connection("127.0.0.1", broker.bound[0].port)
            asking = RawClient(reader, writer)
            versions = await asking.call(ApiVersionsRequest(
                client_software_name="test", client_software_version="1"), 3,
                ApiVersionsResponse)
            assert versions.error_code == 0
            # Answered while the recovery is still held inside the log's open.
            assert io.holding and not starting.done() and not broker.ready.is_set()
            reader, writer = await asyncio.open_connection("127.0.0.1", broker.bound[0].port)
            waiting = RawClient(reader, writer)
            metadata = asyncio.create_task(waiting.call(
                MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12,
                MetadataResponse))
            for _ in range(100):
                await asyncio.sleep(0)
            assert not metadata.done()  # no partition is served before its log is loaded
        finally:
            io.release.set()
        await starting
        answer = await metadata
        assert [(t.name, t.error_code, len(t.partitions)) for t in answer.topics] == \
            [(TOPIC, 0, 1)]
        # Recovered as before: the torn tail cut, the three records kept.
        plog = broker.logs.get(TOPIC, 0)
        assert plog is not None and plog.log_end_offset == 3
        assert plog.recovery_report.bytes_truncated == torn
        for client in (asking, waiting):
            await client.close()
        await broker.stop()

    run(go())


def test_the_collections_after_start_leave_the_loop_turns_between_them(tmp_path: Path) -> None:
    """`serve` settles the heap of a starting broker (everything start-up allocates with the
    collector paused) in steps, the loop turning between them: a callback that re-schedules
    itself on every turn runs between the full collections of the steps (before the bind,
    after the modules loaded after it, after the logs) and the young, the middle and the
    full collection once started, as ApiVersions is answered between them."""
    from groupcoord.cli.serve import serve
    from groupcoord.server.runtime import heap

    turns = 0
    collections: list[tuple[int, int]] = []  # (generation, loop turns before it)

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append((info["generation"], turns))

    async def go() -> None:
        nonlocal turns
        loop = asyncio.get_running_loop()

        def turn() -> None:
            nonlocal turns
            turns += 1
            loop.call_soon(turn)

        heap.pause_until_started()
        serving = asyncio.create_task(serve(make_config(tmp_path)))
        gc.callbacks.append(on_gc)
        loop.call_soon(turn)
        try:
            while not gc.isenabled():  # settled: collecting automatically again
                await asyncio.sleep(0)
        finally:
            gc.callbacks.remove(on_gc)
            heap.end_pause()
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)

    run(go())
    assert [generation for generation, _ in collections] == [2, 2, 2, 0, 1, 2]
    turns_before = [before for _, before in collections]
    assert turns_before == sorted(set(turns_before))


def test_serve_hands_the_gil_to_the_loop_sooner_while_it_serves(tmp_path: Path) -> None:
    """While `serve` runs, a thread waiting for the GIL (the loop, behind a recovery or
    import thread) gets it within `gil.SERVING_SWITCH_INTERVAL_S`, not CPython's 5 ms;
    the process's own interval is back once `serve` returns."""
    import sys

    from groupcoord.cli.serve import serve
    from groupcoord.server.runtime import gil

    before = sys.getswitchinterval()
    assert before > gil.SERVING_SWITCH_INTERVAL_S
    seen: list[float] = []

    async def go() -> None:
        serving = asyncio.create_task(serve(make_config(tmp_path)))
        try:
            for _ in range(3):  # serve's first steps: the broker starting
                await asyncio.sleep(0)
                seen.append(sys.getswitchinterval())
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)

    run(go())
    assert seen == [gil.SERVING_SWITCH_INTERVAL_S] * 3
    assert sys.getswitchinterval() == before
