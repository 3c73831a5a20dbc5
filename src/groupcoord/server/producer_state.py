"""Idempotent-producer state: producer id allocation and per-partition sequence checks.

Mirrors Kafka's `ProducerStateManager` / `ProducerAppendInfo` (sequence and epoch rules)
and `ProducerIdManager` (ids never repeat, even after a restart). Per (producer id,
partition) the metadata of the last five batches is kept so a retried batch is detected
as a duplicate and answered with its original offsets. State is rebuilt from the batch
headers of the log the first time a partition sees an idempotent batch after start-up,
instead of Kafka's snapshot files.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the client's max in-flight requests.
NUM_BATCHES_TO_RETAIN = 5
_ID_BLOCK = 1000

# Error codes (kept local so this module does not depend on the generated codec).
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class PartitionProducerState:
    """The producers seen on one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, pid: int, epoch: int, first_seq: int, last_seq: int) -> tuple[int, BatchMetadata | None]:
        """Validate a batch: (error code or 0, original batch metadata if a duplicate)."""
        entry = self.producers.get(pid)
        if entry is None:
            # Unknown producer (never seen, or its state was removed): any sequence is
            # accepted, as Kafka does when there is no current epoch.
            return 0, None
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return 0, duplicate
        if epoch < entry.epoch:
            return INVALID_PRODUCER_EPOCH, None
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                return OUT_OF_ORDER_SEQUENCE_NUMBER, None
            return 0, None
        if entry.epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, first_seq):
            return OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return 0, None

    def record(self, pid: int, epoch: int, first_seq: int, last_seq: int, first_offset: int,
               last_offset: int, timestamp: int) -> None:
        """Remember an appended batch (what the produce handler calls)."""
        self.update(pid, epoch, BatchMetadata(first_seq, last_seq, first_offset, last_offset,
                                              timestamp))

    def update(self, pid: int, epoch: int, meta: BatchMetadata) -> None:
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry()
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(meta)
        if len(entry.batches) > NUM_BATCHES_TO_RETAIN:
            entry.batches.popleft()


class ProducerIdManager:
    """Hands out producer ids in blocks whose upper bound is persisted before use."""

    def __init__(self, data_dir: str) -> None:
        self._path = os.path.join(data_dir, "producer-id-block")
        start = 0
        try:
            with open(self._path, encoding="ascii") as fh:
                start = int(fh.read().strip() or 0)
        except FileNotFoundError:
            pass
        self._next = start
        self._limit = start
        self.max_seen = start - 1

    def next_id(self) -> int:
        if self._next >= self._limit:
            self._reserve(self._next + _ID_BLOCK)
        pid = self._next
        self._next += 1
        return pid

    def observe(self, pid: int) -> None:
        """Ids seen in the log (a lost id file) must never be handed out again."""
        if pid >= self._next:
            self._next = pid + 1

    def _reserve(self, limit: int) -> None:
        tmp = self._path + ".tmp"
        with open(tmp, "w", encoding="ascii") as fh:
            fh.write(str(limit))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path)
        self._limit = limit


class ProducerStateManager:
    """All partitions' producer state plus the id allocator and transactional-id epochs."""

    def __init__(self, data_dir: str) -> None:
        self.ids = ProducerIdManager(data_dir)
        self._partitions: dict[tuple[str, int], PartitionProducerState] = {}
        self._txn: dict[str, tuple[int, int]] = {}

    def partition(self, topic: str, partition: int) -> PartitionProducerState | None:
        return self._partitions.get((topic, partition))

    def load_partition(
        self, topic: str, partition: int, headers: Iterable[tuple[int, int, int, int, int, int, int]]
    ) -> PartitionProducerState:
        """Rebuild from (pid, epoch, first_seq, last_seq, base_offset, last_offset, ts)."""
        state = PartitionProducerState()
        for pid, epoch, first_seq, last_seq, base, last, ts in headers:
            if pid < 0:
                continue
            self.ids.observe(pid)
            state.update(pid, epoch, BatchMetadata(first_seq, last_seq, base, last, ts))
        self._partitions[(topic, partition)] = state
        return state

    def drop_partition(self, topic: str, partition: int) -> None:
        self._partitions.pop((topic, partition), None)

    def init_producer_id(self, transactional_id: str | None) -> tuple[int, int]:
        """(producer id, epoch). Idempotent producers get a fresh id with epoch 0, as
        Kafka's handleInitProducerId does without a transactional id; a transactional id
        keeps its id and bumps the epoch (kept in memory only)."""
        if transactional_id is None:
            return self.ids.next_id(), 0
        current = self._txn.get(transactional_id)
        if current is None or current[1] >= 32766:
            current = (self.ids.next_id(), 0)
        else:
            current = (current[0], current[1] + 1)
        self._txn[transactional_id] = current
        return current
