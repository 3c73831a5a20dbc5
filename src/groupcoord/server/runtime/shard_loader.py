"""Loading a coordinator shard from its partition, and the snapshots that shorten it.

A group shard (`GroupCoordinatorShard`) loads through the fast loader (`fast_replay`): the
verified snapshot beside its log (`shard_snapshot`), if any, then the log after the offset it
covers. What the load replays is collected as the next snapshot; once the log part of a load
held `SNAPSHOT_AFTER_RECORDS` records, that snapshot is written. The same pass over snapshot
plus log tail, into a shard that keeps nothing (`NullShard`), makes the snapshot at a clean
shutdown and every `SNAPSHOT_INTERVAL_S` while the shard serves, when its log grew by
`SNAPSHOT_AFTER_RECORDS` since the last one. The pass runs on the event loop in steps (it
reads the log); encoding and writing the file (temp file, fsync, rename) run in one writer
thread, so writes land in the order they were started. A failed write is logged and leaves
the previous snapshot; the next load checks whatever file it finds.

Other shard kinds (share state, transactions) load with the plain loader
(`shard_log.replay_log_in_steps`) and have no snapshots.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import chain
from typing import Any

from groupcoord.coordinator.shard import Shard
from groupcoord.logformat.batch import parse_header
from groupcoord.server.runtime.fast_replay import FastReplay
from groupcoord.server.runtime.shard_log import ProducerEpochs, replay_log_in_steps
from groupcoord.server.runtime.shard_snapshot import (
    SnapshotBuilder,
    SnapshotPoint,
    checked_against_log,
    covered_offset,
    encode_snapshot,
    read_snapshot_file,
    snapshot_size,
    write_snapshot,
)

log = logging.getLogger("groupcoord.coordinator")

SNAPSHOT_AFTER_RECORDS = 100_000
SNAPSHOT_INTERVAL_S = 60.0
# A snapshot file larger than this is read on a worker thread: decoding it is quick (0.1 ms
# a MiB) but reading it from a cold disk may outlast a load slice. A smaller one is read on
# the loop, so a small shard loads in its first turn, with no wait for a thread.
SNAPSHOT_READ_ON_LOOP_BYTES = 1 << 20

_writer: ThreadPoolExecutor | None = None


def _snapshot_writer() -> ThreadPoolExecutor:
    global _writer
    if _writer is None:
        _writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shard-snapshot")
    return _writer


class NullShard(Shard):
    """A group shard that keeps nothing: the snapshot pass only wants what would be
    replayed (records decode as the group shard's; markers are the default no-op)."""

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        return None


class ShardLoader:
    """One load of a shard: `steps()` replays (yielding the running count), then
    `write_snapshot_if_due()` starts the snapshot write when the log part was long."""

    def __init__(self, plog: Any, shard: Any, producers: ProducerEpochs | None,
                 partition: int, until: int | None = None) -> None:
        self.plog = plog
        # The log end the replay stops at: a pass over a shard that keeps appending reads
        # what was there when it began, and never reaches the log's end-of-segment check
        # while appends move that end.
        self.until = until
        self.shard = shard
        self.producers = producers
        self.partition = partition
        self.fast = _is_group_shard(shard)
        self.builder = SnapshotBuilder()
        # The last log batch replayed, and how many records the log part held.
        self.point: SnapshotPoint | None = None
        self.snapshot_point: SnapshotPoint | None = None
        self.log_records = 0
        self._snapshot: tuple[SnapshotPoint, list[memoryview]] | None = None
        self._snapshot_read = False

    def snapshot_read_is_long(self) -> bool:
        """Whether the shard's snapshot file is too large to read within one load slice (a
        caller on the event loop then runs `read_snapshot_file` on a worker thread first)."""
        return (self.plog is not None and self.fast
                and snapshot_size(self.plog) > SNAPSHOT_READ_ON_LOOP_BYTES)

    def read_snapshot_file(self) -> None:
        """Read and decode the shard's snapshot file, if it has one (no read of the log)."""
        if self.plog is not None and self.fast and not self._snapshot_read:
            self._snapshot = read_snapshot_file(self.plog, self.partition)
            self._snapshot_read = True

    def steps(self) -> Iterator[int]:
        if self.plog is None or not self.fast:
            yield from replay_log_in_steps(self.plog, self.shard, self.producers, step_batches=1)
            return
        self.read_snapshot_file()
        found = checked_against_log(self.plog, self._snapshot)
        head: list[memoryview] = []
        start = None
        if found is not None:
            self.snapshot_point, head = found
            start = self.snapshot_point.covered + 1
            log.info("shard %d loads from its snapshot up to offset %d, then the log after it",
                     self.partition, self.snapshot_point.covered)
        replay = FastReplay(self.shard, self.producers, self.builder)
        yield from replay.steps(chain(head, self._tracked(self.plog.iter_batches(start))))

    def _tracked(self, batches: Iterable[memoryview]) -> Iterator[memoryview]:
        if self.until is not None and self.until <= self.plog.log_start_offset:
            return
        for view in batches:
            header = parse_header(view)
            self.point = SnapshotPoint(header.last_offset, header.base_offset, header.crc)
            self.log_records += header.records_count
            yield view
            if self.until is not None and header.last_offset >= self.until - 1:
                return

    def write_snapshot_if_due(self, threshold: int = SNAPSHOT_AFTER_RECORDS
                              ) -> Future[None] | None:
        if self.point is None or self.log_records < max(threshold, 1):
            return None
        return self.write_snapshot()

    def write_snapshot(self) -> Future[None] | None:
        """Start writing what this load replayed as the snapshot (in the writer thread)."""
        if self.point is None:
            return None
        items, point, plog, partition = self.builder.items, self.point, self.plog, self.partition

        def write() -> None:
            try:
                write_snapshot(plog.io, plog.path, encode_snapshot(partition, point, items))
            except OSError as exc:
                log.warning("could not write the snapshot of %s: %s", plog.path, exc)
            else:
                log.info("wrote the snapshot of %s up to offset %d", plog.path, point.covered)

        return _snapshot_writer().submit(write)


def _is_group_shard(shard: Any) -> bool:
    from groupcoord.coordinator.shard import GroupCoordinatorShard

    return isinstance(shard, GroupCoordinatorShard | NullShard)


def snapshot_pass(plog: Any, partition: int) -> ShardLoader:
    """A loader over snapshot plus log tail, up to the log end of now, that keeps nothing
    but the next snapshot."""
    return ShardLoader(plog, NullShard(), ProducerEpochs(), partition, plog.log_end_offset)


async def take_snapshot(plog: Any, partition: int, min_records: int,
                        slice_s: float | None) -> SnapshotPoint | None:
    """Write a new snapshot of `partition` if its log holds at least `min_records` past the
    current one. The pass gives the loop back every `slice_s` (None: runs straight, as at
    shutdown); the write is awaited. Returns the new snapshot's point, or None."""
    if plog is None or plog.log_end_offset - 1 - covered_offset(plog) < max(min_records, 1):
        return None
    loop = asyncio.get_running_loop()
    loader = snapshot_pass(plog, partition)
    slice_end = loop.time() + (slice_s or 0.0)
    for _ in loader.steps():
        if slice_s is not None and loop.time() >= slice_end:
            await asyncio.sleep(0)
            slice_end = loop.time() + slice_s
    written = loader.write_snapshot()
    if written is None:
        return None
    await asyncio.wrap_future(written)
    return loader.point
