"""Incremental fetch sessions (KIP-227).

Mirrors Kafka's `FetchSession.scala` (`FetchManager.newContext`, `FullFetchContext`,
`IncrementalFetchContext`, `SessionlessFetchContext`, `FetchSessionCache`): epoch 0 opens
a session and answers every partition; epoch -1 is sessionless (closing the given
session); a positive epoch must match the session's and updates its partitions, and the
response carries only partitions whose high watermark, log start offset, error or data
changed. Partitions that responded move to the end of the session for fairness.
Least-recently-used sessions are evicted when the cache is full.
"""

from __future__ import annotations

import itertools
import os
from collections import OrderedDict
from dataclasses import dataclass

from groupcoord.wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INVALID_SESSION_ID = 0
INT32_MAX = 2**31 - 1


# A partition key is (topic name or 16-byte topic id, partition index).
PartitionKey = tuple[str | bytes, int]


@dataclass(slots=True)
class CachedPartition:
    """One partition of a fetch (request fields plus what was last sent for it)."""

    key: PartitionKey
    fetch_offset: int
    max_bytes: int
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, hw: int, log_start: int, error: int, size: int) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: record what changed."""
        changed = size > 0 or error != 0
        if hw != self.high_watermark:
            self.high_watermark = hw
            changed = True
        if log_start != self.log_start_offset:
            self.log_start_offset = log_start
            changed = True
        return changed


class FetchSession:
    __slots__ = ("epoch", "last_used_ms", "partitions", "session_id", "uses_topic_ids")

    def __init__(self, session_id: int, uses_topic_ids: bool, now_ms: int) -> None:
        self.session_id = session_id
        self.epoch = 1
        self.partitions: OrderedDict[PartitionKey, CachedPartition] = OrderedDict()
        self.uses_topic_ids = uses_topic_ids
        self.last_used_ms = now_ms


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


class FetchContext:
    """What a Fetch request reads and how its response is filtered."""

    __slots__ = ("_cache", "_create", "error", "incremental", "partitions", "session")

    def __init__(self, cache: FetchSessionCache) -> None:
        self._cache = cache
        self.error = 0
        self.partitions: list[CachedPartition] = []
        self.session: FetchSession | None = None
        self.incremental = False
        self._create = False

    def finish(self, results: list[tuple[CachedPartition, int, int, int, int]], uses_ids: bool,
               now_ms: int) -> tuple[int, list[int]]:
        """Given (partition, hw, log_start, error, size) per read partition, return the
        response session id and the indexes of `results` to include."""
        if self.incremental:
            assert self.session is not None
            keep = []
            for i, (cp, hw, log_start, error, size) in enumerate(results):
                if cp.must_respond(hw, log_start, error, size):
                    keep.append(i)
                    self.session.partitions.move_to_end(cp.key)
            return self.session.session_id, keep
        if self._create:
            for cp, hw, log_start, _error, _size in results:
                cp.high_watermark = hw
                cp.log_start_offset = log_start
            session_id = self._cache.create(self.partitions, uses_ids, now_ms)
        else:
            session_id = INVALID_SESSION_ID
        return session_id, list(range(len(results)))


class FetchSessionCache:
    """Sessions by id, evicting the least recently used when full."""

    def __init__(self, max_sessions: int = 1000) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(1 + int.from_bytes(os.urandom(4)) % (1 << 30))

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def new_context(self, session_id: int, epoch: int,
                    requested: list[tuple[PartitionKey, int, int]],
                    forgotten: list[PartitionKey], uses_ids: bool, now_ms: int) -> FetchContext:
        """Kafka's FetchManager.newContext; `requested` is (key, fetch offset, max bytes)."""
        return self._new_context(session_id, epoch,
                                 [CachedPartition(k, o, m) for k, o, m in requested],
                                 forgotten, uses_ids, now_ms)

    def _new_context(self, session_id: int, epoch: int, requested: list[CachedPartition],
                     forgotten: list[PartitionKey], uses_ids: bool, now_ms: int) -> FetchContext:
        ctx = FetchContext(self)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._sessions.pop(session_id, None)
            ctx.partitions = requested
            ctx._create = epoch == INITIAL_EPOCH
            return ctx
        session = self._sessions.get(session_id)
        if session is None:
            ctx.error = ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        elif session.epoch != epoch:
            ctx.error = ErrorCode.INVALID_FETCH_SESSION_EPOCH
        elif session.uses_topic_ids != uses_ids:
            ctx.error = ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        else:
            self._update(session, requested, forgotten)
            if not session.partitions:
                del self._sessions[session_id]
                ctx.partitions = requested
                return ctx
            session.epoch = next_epoch(session.epoch)
            session.last_used_ms = now_ms
            self._sessions.move_to_end(session_id)
            ctx.session = session
            ctx.incremental = True
            ctx.partitions = list(session.partitions.values())
        return ctx

    @staticmethod
    def _update(session: FetchSession, requested: list[CachedPartition],
                forgotten: list[PartitionKey]) -> None:
        parts = session.partitions
        for cp in requested:
            cached = parts.get(cp.key)
            if cached is None:
                parts[cp.key] = cp
            else:
                cached.fetch_offset = cp.fetch_offset
                cached.max_bytes = cp.max_bytes
        for key in forgotten:
            parts.pop(key, None)

    def create(self, partitions: list[CachedPartition], uses_ids: bool, now_ms: int) -> int:
        if self.max_sessions <= 0:
            return INVALID_SESSION_ID
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        session_id = next(self._ids) & INT32_MAX or next(self._ids)
        while session_id in self._sessions:
            session_id = next(self._ids) & INT32_MAX
        session = FetchSession(session_id, uses_ids, now_ms)
        for cp in partitions:
            session.partitions[cp.key] = cp
        self._sessions[session_id] = session
        return session_id

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)
