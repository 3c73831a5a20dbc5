"""A segment's aborted-transaction index: the `.txnindex` file beside its `.log`.

Mirrors `org.apache.kafka.storage.internals.log.TransactionIndex` and `AbortedTxn`: one
34-byte entry per aborted transaction whose ABORT marker is in the segment, written when the
marker is appended: int16 version (0), int64 producer id, int64 first offset, int64 last
offset (the marker), int64 last stable offset right after the abort.

Rules kept:
- the file is created only when the first entry is written (most segments have none);
- last offsets must increase (Kafka refuses an out-of-order append);
- a partial trailing entry (a torn write) is ignored on load and cut off by the next write;
- `collect(fetch_offset, upper_bound)` returns the entries overlapping the fetch range and
  whether the search is complete, i.e. an entry's last stable offset reached the upper
  bound (Kafka's `collectAbortedTxns`), so later segments need not be read.
Entries are few; they are kept in memory after the first load, and memory is what reads
use. A failed write of the file removes it instead of failing the append it belongs to: the
producer-state scan that runs before a partition's first transactional read or write
rebuilds a missing index from the log's markers (`storage.transactions.sync_aborted_txns`).
"""

from __future__ import annotations

import logging
import os
import struct
from typing import NamedTuple

from groupcoord.storage.fileio import OS_FILE_IO, FileIO

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0

logger = logging.getLogger(__name__)


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The `.txnindex` of one segment."""

    def __init__(self, path: str, start_offset: int, io: FileIO = OS_FILE_IO) -> None:
        self.path = path
        self.io = io
        self.start_offset = start_offset
        self._entries: list[AbortedTxn] | None = None
        self._fd = -1
        self.dirty = False

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> list[AbortedTxn]:
        try:
            data = self.io.read_bytes(self.path)
        except FileNotFoundError:
            return []
        out = []
        for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, *fields = _ENTRY.unpack_from(data, pos)
            if version > CURRENT_VERSION:
                raise ValueError(f"{self.path}: aborted transaction version {version}")
            out.append(AbortedTxn(*fields))
        return out

    def _open(self) -> int:
        if self._fd < 0:
            self._fd = self.io.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            # Cut a torn trailing entry so appends stay aligned.
            self.io.ftruncate(self._fd, len(self.entries) * ENTRY_SIZE)
        return self._fd

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(f"aborted transaction last offset {txn.last_offset} is not above "
                             f"{entries[-1].last_offset} in {self.path}")
        entries.append(txn)
        try:
            fd = self._open()
            self.io.pwrite(fd, _ENTRY.pack(CURRENT_VERSION, *txn), (len(entries) - 1) * ENTRY_SIZE)
        except OSError as exc:
            self._drop_file(exc)
            return
        self.dirty = True

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after `offset` (the log was cut there)."""
        keep = [t for t in self.entries if t.last_offset < offset]
        if len(keep) != len(self.entries):
            self.rewrite(keep)

    def rewrite(self, entries: list[AbortedTxn]) -> None:
        """Replace every entry (recovery found the index out of step with the log)."""
        if not entries and self._fd < 0 and not self.io.exists(self.path):
            self._entries = []
            return
        self._entries = list(entries)
        try:
            fd = self._open()
            self.io.ftruncate(fd, 0)
            self.io.pwrite(fd, b"".join(_ENTRY.pack(CURRENT_VERSION, *t) for t in entries), 0)
        except OSError as exc:
            self._drop_file(exc)
            return
        self.dirty = True

    def flush(self) -> None:
        if self.dirty and self._fd >= 0:
            try:
                self.io.fsync(self._fd)
            except OSError as exc:
                self._drop_file(exc)
        self.dirty = False

    def _drop_file(self, exc: OSError) -> None:
        """The file can no longer be trusted: remove it; memory stays right and a later
        producer-state scan writes it again."""
        logger.error("%s: write failed (%s); the index will be rebuilt from the log", self.path,
                     exc)
        self.close()
        self.io.unlink_quietly(self.path)

    def close(self) -> None:
        if self._fd >= 0:
            self.io.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        try:
            self.io.unlink(self.path)
        except FileNotFoundError:
            pass
