"""A partition kept in PostgreSQL, served by this node from a copy in its data dir.

PostgreSQL holds the log of record (``storage.postgres_store``); the copy is a
``PartitionLog`` in the node's own directory, so everything the broker does with a partition
log (fetch reads, the time and transaction indexes, producer-state rebuilds, shard replays and
their snapshots, compaction) works on it as on a file log. The copy is a cache: losing it
loses nothing, it is made again from PostgreSQL.

Rules kept:
- this node appends only while it holds the partition's lease: ``leader`` is its store at
  the lease's epoch, None while another node leads (``NotPartitionLeader``, nothing written);
- every write reaches PostgreSQL first, fenced by the epoch and preconditioned on the copy's
  end, then the copy; so the copy never holds what PostgreSQL does not, and a deposed leader
  (``FencedLeaderEpoch``) steps down having changed nothing;
- ``catch_up`` makes the copy equal to PostgreSQL's log: on opening, on taking the lease, and
  before the next write after one whose outcome PostgreSQL did not tell (a lost connection,
  ``StorageUnavailable``) or that the copy failed to store after the commit. If that write
  had landed, the next one is refused once more with ``StorageUnavailable``, after the copy
  took the landed batches in: its writer sees them (the broker rebuilds producer state from
  the copy) before it retries, so a retried produce is found a duplicate, not stored twice;
- ``append_async`` (the broker's appends from the loop) runs PostgreSQL's transaction on a
  writer thread (``storage.postgres_writers``), prepared before and copied after on the
  loop, under the same rules; the partition's ``append_lock`` keeps its appends one at a
  time, so each is prepared at the end the previous one left. A fenced write steps down
  only while the lease it ran under is still the copy's (not one taken again meanwhile);
- retention runs on the leader's copy and moves PostgreSQL's log start after it (a follower's
  copy keeps everything, as PostgreSQL does until its leader deletes); compaction cleans the
  copy only (PostgreSQL keeps the batches it cleaned away, which a new copy cleans again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from groupcoord.storage.appending import PreparedAppend, prepare_copy
from groupcoord.storage.config import (
    AppendInfo,
    AppendPreconditionFailed,
    LogConfig,
    NotPartitionLeader,
    StorageUnavailable,
)
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.postgres_store import PostgresPartitionStore
from groupcoord.storage.postgres_writers import PostgresWriters
from groupcoord.storage.segment import LogSegment

log = logging.getLogger(__name__)
Result = TypeVar("Result")


class LeasedPartitionLog(PartitionLog):
    """The local copy of a partition whose log of record is ``source``, appended to through
    ``leader`` while this node leads. ``attach`` it to its source before use."""

    writes_off_loop = True

    def __init__(self, path: str, config: LogConfig, segments: list[LogSegment],
                 log_start_offset: int, io: FileIO = OS_FILE_IO) -> None:
        super().__init__(path, config, segments, log_start_offset, io)
        self._source: PostgresPartitionStore | None = None
        self._writers: PostgresWriters | None = None
        # One append at a time, from its producer-state checks to its copy
        # (``PartitionLog.append_lock``): each is prepared at the end the last one left.
        self.append_lock: asyncio.Lock = asyncio.Lock()
        # This node's store at its lease's epoch; None while another node leads.
        self.leader: PostgresPartitionStore | None = None
        # A write's outcome is unknown, or the copy missed a committed write: catch up first.
        self._unsettled = False

    def attach(self, source: PostgresPartitionStore, writers: PostgresWriters) -> None:
        """Name the partition's store in PostgreSQL (for reads: any epoch) and the threads
        ``append_async`` commits on."""
        self._source = source
        self._writers = writers

    @property
    def source(self) -> PostgresPartitionStore:
        assert self._source is not None, "attach the copy to its source first"
        return self._source

    @property
    def writers(self) -> PostgresWriters:
        assert self._writers is not None, "attach the copy to its source first"
        return self._writers

    # -- leadership ------------------------------------------------------------------------

    def lead(self, store: PostgresPartitionStore) -> None:
        """Take the partition at ``store``'s epoch (a lease just acquired): catch up first,
        as the last leader may have appended since this copy last looked."""
        self.leader = None
        self.catch_up()
        self.leader = store

    def step_down(self) -> None:
        """Another node leads now (the lease lost or fenced): append nothing more."""
        if self.leader is not None:
            log.warning("%s: no longer the leader (epoch %d)", self.path,
                        self.leader.leader_epoch)
        self.leader = None

    def _leading(self) -> PostgresPartitionStore:
        if self.leader is None:
            raise NotPartitionLeader(f"{self.path}: another node leads this partition")
        return self.leader

    # -- the copy --------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Make the copy PostgreSQL's log: drop it if it is no prefix of that log, copy the
        batches after its end, move its start; return how many batches were copied."""
        source = self.source
        offsets = source.offsets()
        if not self._is_prefix_of_source(offsets.log_end_offset):
            log.warning("%s: the local copy differs from PostgreSQL's log; copying it anew",
                        self.path)
            # Below every segment and PostgreSQL's start: an empty copy, its start there.
            PartitionLog.truncate_to(self, min(self.segments[0].base_offset,
                                               offsets.log_start_offset))
        copied = 0
        for view in source.iter_batches(max(self.log_end_offset, offsets.log_start_offset)):
            PartitionLog.append_prepared(self, prepare_copy(view))
            copied += 1
        if offsets.log_start_offset > self.log_start_offset:
            PartitionLog.delete_records_before(self, offsets.log_start_offset)
        self._unsettled = False
        return copied

    def _is_prefix_of_source(self, source_end: int) -> bool:
        """Whether the copy's batches are PostgreSQL's: its last batch the same there (their
        CRCs cover every record), and PostgreSQL's log no shorter."""
        if self.log_end_offset > source_end:
            return False
        if self.log_end_offset == self.log_start_offset:
            return True
        last = next(self.iter_batch_headers(self.log_end_offset - 1), None)
        if last is None:
            return True
        theirs = self.source.batch_header(last.base_offset)
        return theirs is not None and (theirs.base_offset, theirs.last_offset, theirs.crc) == (
            last.base_offset, last.last_offset, last.crc)

    def _settle(self) -> None:
        """Before a write after an unknown outcome: catch up; if the lost write had landed,
        refuse this one (retriable), so its writer sees the landed batches first."""
        if not self._unsettled:
            return
        if self.catch_up():
            raise StorageUnavailable(f"{self.path}: an earlier write had landed in PostgreSQL;"
                                     " retry")

    # -- writes: PostgreSQL first, then the copy -------------------------------------------

    def append_prepared(self, prepared: PreparedAppend) -> AppendInfo:
        """Every append on the calling thread (``PartitionLog.append`` prepares, then calls
        this): committed in PostgreSQL before the copy stores it. Settling an unknown outcome
        first leaves the copy's end where ``prepared`` expects it, or refuses."""
        leader, expected = self._write_start()
        with self._source_write(leader):
            leader.append_prepared(prepared, expected_end_offset=expected)
        return self._store_copy(prepared, expected)

    async def append_async(self, data: bytes | bytearray | memoryview, *,
                           expected_end_offset: int | None = None, now_ms: int | None = None,
                           leader_epoch: int | None = None, allow_control: bool = False,
                           trusted: bool = False) -> AppendInfo:
        """``append`` with PostgreSQL's transaction on a writer thread, the loop free while
        it runs; prepared before and copied after on the loop, as ``append_prepared`` does.
        The caller holds ``append_lock``: the next append is prepared at the end this one
        leaves."""
        assert self.append_lock.locked(), "hold the partition's append_lock"
        prepared = self.prepare(data, expected_end_offset=expected_end_offset, now_ms=now_ms,
                                leader_epoch=leader_epoch, allow_control=allow_control,
                                trusted=trusted)
        leader, expected = self._write_start()
        with self._source_write(leader):
            commit = self.writers.run(lambda session: leader.on(session).append_prepared(
                prepared, expected_end_offset=expected))
            try:
                await asyncio.shield(commit)
            except asyncio.CancelledError:
                # The caller went away; the transaction runs on, its outcome untold here.
                self._unsettled = True
                raise
        return self._store_copy(prepared, expected)

    def _write_start(self) -> tuple[PostgresPartitionStore, int]:
        """The leader's store and the end the write expects, an unknown outcome settled."""
        leader = self._leading()
        self._settle()
        return leader, self.log_end_offset

    @contextmanager
    def _source_write(self, leader: PostgresPartitionStore) -> Iterator[None]:
        """Around PostgreSQL's part of a write: fenced -> step down (unless the lease was
        taken again meanwhile, at a newer epoch); an untold outcome or a log moved without
        this node knowing -> catch up before any write."""
        try:
            yield
        except NotPartitionLeader:
            if self.leader is leader:
                self.step_down()
            raise
        except StorageUnavailable:
            self._unsettled = True
            raise
        except AppendPreconditionFailed as exc:
            self._unsettled = True
            raise StorageUnavailable(f"{self.path}: {exc}") from exc

    def _store_copy(self, prepared: PreparedAppend, expected_end_offset: int) -> AppendInfo:
        """After the commit: the copy stores the batches. A copy that moved while the commit
        was in flight (a catch-up on taking the lease again took the batches in) is left to
        the next write's catch-up."""
        if self.log_end_offset != expected_end_offset:
            self._unsettled = True
            return prepared.info(self.log_start_offset)
        try:
            return PartitionLog.append_prepared(self, prepared)
        except BaseException:
            self._unsettled = True  # committed, not in the copy: copied at the next write
            raise

    def truncate_to(self, offset: int) -> None:
        if offset >= self.log_end_offset:
            return
        leader = self._leading()
        self._settle()
        self._fenced(lambda: leader.truncate_to(offset))
        PartitionLog.truncate_to(self, offset)

    def delete_records_before(self, offset: int) -> int:
        leader = self._leading()
        self._settle()
        start = self._fenced(lambda: leader.delete_records_before(offset))
        PartitionLog.delete_records_before(self, start)
        return start

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Retention on the leader's copy, then PostgreSQL's start moved to the copy's (also
        when an earlier pass could not reach it); nothing on a follower's copy."""
        leader = self.leader
        if leader is None:
            return 0
        deleted = PartitionLog.delete_expired(self, now_ms)
        self._fenced(lambda: leader.delete_records_before(self.log_start_offset))
        return deleted

    def _fenced(self, write: Callable[[], Result]) -> Result:
        """Run a write of the leader's store; step down if it was fenced."""
        try:
            return write()
        except NotPartitionLeader:
            self.step_down()
            raise
