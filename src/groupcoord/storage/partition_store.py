"""The one seam between a partition's users and where its batches are kept.

The coordinator runtime and the partition-log users reach a partition through
``PartitionStore``: append (with an optional precondition on the log end offset), read whole
batches, truncate, snapshot. ``storage.log.PartitionLog`` keeps them in segment files (on
disk or in a ``MemoryFileIO``), ``storage.memory_store.InMemoryPartitionStore`` in a list;
a store shared by several processes implements the same contract.

``expected_end_offset`` is the fencing primitive such a shared store needs: a writer names
the end it last saw (the end it replayed to), and an append that finds the log ending
elsewhere raises ``AppendPreconditionFailed`` and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from groupcoord.logformat.batch import BatchHeader, iter_batches
from groupcoord.storage.config import AppendInfo, AppendPreconditionFailed, LogConfig


@dataclass(frozen=True)
class LogSnapshot:
    """A partition at one moment: its offsets and its whole batches from the log start."""

    log_start_offset: int
    log_end_offset: int
    # Offsets below it are durable (the file log's last flush).
    recovery_point: int
    # The stored batches, whole and back to back, from the one holding log_start_offset.
    batches: bytes

    def iter_batches(self) -> Iterator[memoryview]:
        """Each stored batch, in offset order."""
        for _, view in iter_batches(self.batches):
            yield view


def require_end_offset(expected: int | None, actual: int) -> None:
    """The precondition of an append: ``AppendPreconditionFailed`` when the caller named an
    end offset and the log ends elsewhere."""
    if expected is not None and expected != actual:
        raise AppendPreconditionFailed(expected, actual)


class PartitionStore(Protocol):
    """One partition's batches, as the runtime and the log users call them."""

    @property
    def config(self) -> LogConfig: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def append(self, data: bytes | bytearray | memoryview, *,
               expected_end_offset: int | None = None, assign_offsets: bool = True,
               now_ms: int | None = None, leader_epoch: int | None = None,
               allow_control: bool = False, trusted: bool = False) -> AppendInfo:
        """Validate and append whole batches (see ``storage.appending``); all or nothing.

        A non-None ``expected_end_offset`` other than the log end offset raises
        ``AppendPreconditionFailed`` and appends nothing.
        """
        ...

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> memoryview:
        """Whole batches from the one holding ``offset``: at most ``max_bytes`` unless the
        first alone is larger, none whose base offset is >= ``max_offset``.
        ``OffsetOutOfRangeError`` outside [log_start_offset, log_end_offset]."""
        ...

    def iter_batches(self, from_offset: int | None = None) -> Iterator[memoryview]:
        """Every stored batch from the log start, or from the one holding ``from_offset``."""
        ...

    def iter_batch_headers(self, from_offset: int | None = None) -> Iterator[BatchHeader]:
        """The headers of ``iter_batches``."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (a batch boundary)."""
        ...

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset to ``offset`` (DeleteRecords); return the new start."""
        ...

    def flush(self) -> None:
        """Make everything appended so far durable (the recovery point moves to the end)."""
        ...

    def snapshot(self) -> LogSnapshot:
        """The offsets and whole batches of the partition now."""
        ...
