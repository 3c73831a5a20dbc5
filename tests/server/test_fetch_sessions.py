"""Incremental fetch sessions (KIP-227) as Kafka's FetchManager.newContext defines them."""

from __future__ import annotations

from groupcoord.server.fetch_sessions import (
    FetchSessionCache,
)
from groupcoord.wire.errors import ErrorCode as E


def _full(cache: FetchSessionCache) -> int:
    ctx = cache.new_context(0, 0, [(("t", 0), 0, 100), (("t", 1), 0, 100)], [], False, 0)
    assert not ctx.error and not ctx.incremental
    results = [(cp, 10, 0, 0, 5) for cp in ctx.partitions]
    session_id, keep = ctx.finish(results, False, 0)
    assert keep == [0, 1]
    return session_id


def test_epoch_zero_creates_session() -> None:
    cache = FetchSessionCache()
    assert _full(cache) != 0 and len(cache) == 1


def test_sessionless_full_fetch() -> None:
    cache = FetchSessionCache()
    ctx = cache.new_context(0, -1, [(("t", 0), 0, 100)], [], False, 0)
    assert ctx.finish([(ctx.partitions[0], 1, 0, 0, 0)], False, 0) == (0, [0])
    assert len(cache) == 0


def test_incremental_returns_only_changed_partitions() -> None:
    cache = FetchSessionCache()
    sid = _full(cache)
    ctx = cache.new_context(sid, 1, [], [], False, 1)
    assert ctx.incremental and len(ctx.partitions) == 2
    p0, p1 = ctx.partitions
    # p0 unchanged and empty; p1's high watermark moved.
    session_id, keep = ctx.finish([(p0, 10, 0, 0, 0), (p1, 11, 0, 0, 0)], False, 1)
    assert session_id == sid and keep == [1]
    # Responded partitions move to the end of the session.
    ctx = cache.new_context(sid, 2, [], [], False, 2)
    assert [cp.key for cp in ctx.partitions] == [("t", 0), ("t", 1)]


def test_incremental_updates_offsets_and_forgets() -> None:
    cache = FetchSessionCache()
    sid = _full(cache)
    ctx = cache.new_context(sid, 1, [(("t", 0), 42, 100), (("u", 0), 0, 50)], [("t", 1)],
                            False, 1)
    keys = {cp.key: cp.fetch_offset for cp in ctx.partitions}
    assert keys == {("t", 0): 42, ("u", 0): 0}


def test_session_errors() -> None:
    cache = FetchSessionCache()
    sid = _full(cache)
    assert cache.new_context(sid + 1, 1, [], [], False, 0).error == E.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(sid, 5, [], [], False, 0).error == E.INVALID_FETCH_SESSION_EPOCH
    assert cache.new_context(sid, 1, [], [], True, 0).error == E.FETCH_SESSION_TOPIC_ID_ERROR


def test_full_fetch_closes_named_session() -> None:
    cache = FetchSessionCache()
    sid = _full(cache)
    cache.new_context(sid, -1, [], [], False, 0)
    assert cache.get(sid) is None


def test_forgetting_everything_drops_the_session() -> None:
    cache = FetchSessionCache()
    sid = _full(cache)
    ctx = cache.new_context(sid, 1, [], [("t", 0), ("t", 1)], False, 0)
    assert not ctx.incremental and cache.get(sid) is None


def test_lru_eviction() -> None:
    cache = FetchSessionCache(max_sessions=2)
    a, b = _full(cache), _full(cache)
    cache.new_context(a, 1, [], [], False, 5)  # touch a
    c = _full(cache)
    assert cache.get(b) is None and cache.get(a) is not None and cache.get(c) is not None
