"""Producer state: producer id allocation, per-partition sequence checks and open
transactions.

Mirrors Kafka's `ProducerStateManager` / `ProducerAppendInfo` / `ProducerStateEntry`
(sequence, epoch and transaction rules) and `ProducerIdManager` (ids never repeat, even
after a restart). Per (producer id, partition) the metadata of the last five batches is
kept so a retried batch is detected as a duplicate and answered with its original offsets.
Per partition the open transactions (producer id -> first offset) give the first unstable
offset, hence the last stable offset (LSO); an end-transaction marker closes the producer's
transaction and, for an abort, yields the `AbortedTxn` entry for the `.txnindex`
(its last stable offset is the first offset of the oldest other open transaction, else the
marker offset + 1, as `ProducerStateManager.lastStableOffset(completedTxn)`).
State is rebuilt from the batch headers of the log the first time a partition is appended
to or read with read_committed after start-up, instead of Kafka's snapshot files.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from groupcoord.storage.documents import MetadataDocuments
from groupcoord.wire.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: the client's max in-flight requests.
NUM_BATCHES_TO_RETAIN = 5
_ID_BLOCK = 1000
ID_BLOCK_DOCUMENT = "producer-id-block"

# Error codes (kept local so this module does not depend on the generated codec).
NO_TXN = -1


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
    coordinator_epoch: int = -1
    # First offset of the producer's open transaction on this partition, or NO_TXN.
    txn_first_offset: int = NO_TXN
    last_timestamp: int = -1

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


class AbortedEntry(NamedTuple):
    """An aborted transaction as the `.txnindex` stores it (Kafka's AbortedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class PartitionProducerState:
    """The producers seen on one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # Open transactions: producer id -> first offset.
        self.ongoing: dict[int, int] = {}

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def has_ongoing(self, pid: int, epoch: int) -> bool:
        entry = self.producers.get(pid)
        return entry is not None and entry.txn_first_offset != NO_TXN and entry.epoch == epoch

    def check_transactional(self, pid: int, transactional: bool) -> int:
        """A non-transactional batch while the producer's transaction is open is refused
        (`ProducerAppendInfo.appendDataBatch`: InvalidTxnStateException)."""
        entry = self.producers.get(pid)
        if entry is not None and entry.txn_first_offset != NO_TXN and not transactional:
            return ErrorCode.INVALID_TXN_STATE
        return 0

    def check_marker(self, pid: int, epoch: int, coordinator_epoch: int) -> int:
        """`appendEndTxnMarker` checks: producer epoch, then coordinator epoch."""
        entry = self.producers.get(pid)
        if entry is None:
            return 0
        if epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if entry.coordinator_epoch > coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return 0

    def open_txn(self, pid: int, epoch: int, base_offset: int) -> None:
        """A transactional data batch was appended: it may begin the transaction."""
        entry = self._entry(pid)
        if entry.txn_first_offset == NO_TXN:
            entry.txn_first_offset = base_offset
            self.ongoing[pid] = base_offset
        if epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()

    def end_txn(self, pid: int, epoch: int, coordinator_epoch: int, offset: int,
                commit: bool, timestamp: int = -1) -> AbortedEntry | None:
        """A marker was appended at `offset`; the index entry if it aborted a transaction."""
        entry = self._entry(pid)
        first = entry.txn_first_offset
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.txn_first_offset = NO_TXN
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        if first == NO_TXN:
            return None  # a marker without data changes neither the LSO nor the index
        del self.ongoing[pid]
        if commit:
            return None
        lso = min(self.ongoing.values()) if self.ongoing else offset + 1
        return AbortedEntry(pid, first, offset, lso)

    def _entry(self, pid: int) -> ProducerEntry:
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry()
        return entry

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
            return ErrorCode.INVALID_PRODUCER_EPOCH, None
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None
            return 0, None
        if entry.epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, first_seq):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return 0, None

    def record(self, pid: int, epoch: int, first_seq: int, last_seq: int, first_offset: int,
               last_offset: int, timestamp: int) -> None:
        """Remember an appended batch (what the produce handler calls)."""
        self.update(pid, epoch, BatchMetadata(first_seq, last_seq, first_offset, last_offset,
                                              timestamp))

    def update(self, pid: int, epoch: int, meta: BatchMetadata) -> None:
        entry = self._entry(pid)
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(meta)
        entry.last_timestamp = max(entry.last_timestamp, meta.timestamp)
        if len(entry.batches) > NUM_BATCHES_TO_RETAIN:
            entry.batches.popleft()


class ProducerIdManager:
    """Hands out producer ids in blocks claimed (and persisted) before use: from the data
    dir's `producer-id-block`, or on PostgreSQL from one cluster-wide counter, so no two
    nodes and no two runs of one hand out the same id."""

    def __init__(self, metadata: MetadataDocuments) -> None:
        self._metadata = metadata
        self._next = 0
        self._limit = 0

    def next_id(self) -> int:
        if self._next >= self._limit:
            self._next = self._metadata.claim_block(ID_BLOCK_DOCUMENT, self._next, _ID_BLOCK)
            self._limit = self._next + _ID_BLOCK
        pid = self._next
        self._next += 1
        return pid

    def observe(self, pid: int) -> None:
        """Ids seen in the log (a lost id file) must never be handed out again."""
        if pid >= self._next:
            self._next = pid + 1


class ProducerStateManager:
    """All partitions' producer state plus the producer id allocator."""

    def __init__(self, metadata: MetadataDocuments) -> None:
        self.ids = ProducerIdManager(metadata)
        self._partitions: dict[tuple[str, int], PartitionProducerState] = {}

    def partition(self, topic: str, partition: int) -> PartitionProducerState | None:
        return self._partitions.get((topic, partition))

    def load_partition(self, topic: str, partition: int,
                       batches: Iterable[Any]) -> tuple[PartitionProducerState,
                                                        list[AbortedEntry]]:
        """Rebuild from the log's producer batches (`storage.transactions.TxnBatch` or a
        tuple of its first seven fields); also return the aborted transactions found."""
        state = PartitionProducerState()
        aborted: list[AbortedEntry] = []
        for batch in batches:
            pid, epoch, first_seq, last_seq, base, last, ts = batch[:7]
            if pid < 0:
                continue
            self.ids.observe(pid)
            commit = batch[8] if len(batch) > 8 else None
            if commit is not None:
                entry = state.end_txn(pid, epoch, batch[9], base, commit, ts)
                if entry is not None:
                    aborted.append(entry)
                continue
            if len(batch) > 7 and batch[7]:
                state.open_txn(pid, epoch, base)
            if first_seq >= 0:
                state.update(pid, epoch, BatchMetadata(first_seq, last_seq, base, last, ts))
        self._partitions[(topic, partition)] = state
        return state, aborted

    def drop_partition(self, topic: str, partition: int) -> None:
        self._partitions.pop((topic, partition), None)

    def init_producer_id(self) -> tuple[int, int]:
        """(producer id, 0): an idempotent producer gets a fresh id, as Kafka's
        handleInitProducerId does without a transactional id."""
        return self.ids.next_id(), 0
