"""Share session epochs (ShareSessionCache / ShareRequestMetadata rules)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.share.sessions import INT32_MAX, ShareSessionCache, ShareSessionError
from groupcoord.wire.errors import ErrorCode

TP = (bytes(16), 0)
TP2 = (bytes(16), 1)


def code_of(fn, *args) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(ShareSessionError) as info:
        fn(*args)
    return info.value.code


def test_open_then_increment() -> None:
    cache = ShareSessionCache()
    session = cache.fetch_context("g", "m", 0, False, [TP], [])
    assert session.epoch == 1 and list(session.partitions) == [TP]
    session = cache.fetch_context("g", "m", 1, True, [TP2], [TP])
    assert session.epoch == 2 and list(session.partitions) == [TP2]


def test_epoch_zero_with_acks_is_invalid_request() -> None:
    cache = ShareSessionCache()
    assert code_of(cache.fetch_context, "g", "m", 0, True, [TP], []) == ErrorCode.INVALID_REQUEST


def test_wrong_epoch_and_missing_session() -> None:
    cache = ShareSessionCache()
    assert code_of(cache.fetch_context, "g", "m", 1, False, [], []) == \
        ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.fetch_context("g", "m", 0, False, [TP], [])
    assert code_of(cache.fetch_context, "g", "m", 2, False, [], []) == \
        ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code_of(cache.acknowledge_context, "g", "m", 5) == \
        ErrorCode.INVALID_SHARE_SESSION_EPOCH


def test_acknowledge_never_opens_a_session() -> None:
    cache = ShareSessionCache()
    assert code_of(cache.acknowledge_context, "g", "m", 0) == \
        ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code_of(cache.acknowledge_context, "g", "m", 1) == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_acknowledge_bumps_and_final_epoch_closes() -> None:
    cache = ShareSessionCache()
    cache.fetch_context("g", "m", 0, False, [TP], [])
    assert cache.acknowledge_context("g", "m", 1).epoch == 2
    closed = cache.fetch_context("g", "m", -1, True, [], [])
    assert closed.partitions and cache.get("g", "m") is None
    assert code_of(cache.fetch_context, "g", "m", -1, False, [], []) == \
        ErrorCode.SHARE_SESSION_NOT_FOUND


def test_epoch_wraps_to_one() -> None:
    cache = ShareSessionCache()
    session = cache.fetch_context("g", "m", 0, False, [TP], [])
    session.epoch = INT32_MAX
    assert cache.fetch_context("g", "m", INT32_MAX, False, [], []).epoch == 1


def test_session_limit_and_reopen() -> None:
    cache = ShareSessionCache(max_sessions=1)
    cache.fetch_context("g", "m1", 0, False, [TP], [])
    assert code_of(cache.fetch_context, "g", "m2", 0, False, [TP], []) == \
        ErrorCode.SHARE_SESSION_LIMIT_REACHED
    # Re-opening an existing session replaces it and is not limited.
    assert cache.fetch_context("g", "m1", 0, False, [TP2], []).partitions == {TP2: None}


def test_remove_connection() -> None:
    cache = ShareSessionCache()
    cache.fetch_context("g", "m1", 0, False, [TP], [], connection_id="c1")
    cache.fetch_context("g", "m2", 0, False, [TP], [], connection_id="c2")
    assert [s.member_id for s in cache.remove_connection("c1")] == ["m1"]
    assert cache.get("g", "m1") is None and cache.get("g", "m2") is not None
