"""Retention: whole segments by time and by size, advancing the log start; the active
segment too once it breaches retention (Kafka rolls, then deletes it), unless it is empty."""

from __future__ import annotations

from storage_helpers import make_batch

from groupcoord.storage.config import LogConfig


def _fill(open_log, **cfg: object):  # type: ignore[no-untyped-def]
    log = open_log(segment_bytes=1000, **cfg)
    for i in range(40):
        log.append(make_batch(1, ts=10_000 + 1000 * i, value_size=150))
    return log


def test_retention_by_time(open_log) -> None:
    log = _fill(open_log, retention_ms=5000)
    bases = [s.base_offset for s in log.segments]
    newest_inactive = log.segments[-2].max_timestamp
    assert log.delete_expired(now_ms=0) == 0
    deleted = log.delete_expired(now_ms=newest_inactive + 5001)
    assert deleted == len(bases) - 1  # everything but the active segment
    assert log.log_start_offset == bases[-1] == log.segments[0].base_offset
    assert log.read(log.log_start_offset, 100)


def test_retention_by_time_keeps_recent_segments(open_log) -> None:
    log = _fill(open_log, retention_ms=10_000)
    now = 10_000 + 1000 * 39
    log.delete_expired(now_ms=now)
    assert all(now - s.max_timestamp <= 10_000 for s in log.segments[:-1])
    assert log.segments[0].max_timestamp >= now - 10_000 > 10_000


def test_retention_by_size(open_log) -> None:
    log = _fill(open_log, retention_ms=-1, retention_bytes=2500)
    seg_size = log.segments[0].size
    before = log.size
    deleted = log.delete_expired(now_ms=10**15)
    assert deleted >= 1 and log.size <= 2500 + seg_size
    assert before - log.size == deleted * seg_size
    assert log.log_start_offset == log.segments[0].base_offset


def test_unlimited_retention_never_deletes(open_log) -> None:
    log = _fill(open_log, retention_ms=-1, retention_bytes=-1)
    assert log.delete_expired(now_ms=10**15) == 0


def test_an_active_segment_past_retention_is_rolled_and_deleted(open_log) -> None:
    log = open_log(retention_ms=1000)
    log.append(make_batch(2, ts=5_000))
    assert log.delete_expired(now_ms=6_000) == 0  # not past retention yet
    assert log.delete_expired(now_ms=6_001) == 1
    # One empty segment at the old end: the log starts and ends there, and goes on from it.
    assert len(log.segments) == 1 and log.active.size == 0
    assert log.log_start_offset == log.log_end_offset == log.active.base_offset == 2
    assert log.append(make_batch(1, ts=7_000)).base_offset == 2


def test_every_segment_past_retention_goes_with_the_active_one(open_log) -> None:
    log = _fill(open_log, retention_ms=5000)
    segments = len(log.segments)
    end = log.log_end_offset
    assert log.delete_expired(now_ms=log.active.max_timestamp + 5001) == segments
    assert log.log_start_offset == log.log_end_offset == end


def test_the_active_segment_goes_when_the_size_asks_for_it(open_log) -> None:
    log = open_log(retention_ms=-1, retention_bytes=0)
    log.append(make_batch(1, ts=1))
    assert log.delete_expired(now_ms=10**15) == 1
    assert log.size == 0 and log.log_start_offset == log.log_end_offset == 1


def test_an_empty_active_segment_is_never_deleted(open_log) -> None:
    log = open_log(retention_ms=1, retention_bytes=0)
    assert log.delete_expired(now_ms=10**15) == 0
    log.append(make_batch(ts=1))
    assert log.delete_expired(now_ms=10**15) == 1
    assert log.delete_expired(now_ms=10**15) == 0 and len(log.segments) == 1


def test_config_overrides_by_kafka_name() -> None:
    cfg = LogConfig().with_overrides({"retention.ms": 5, "segment.bytes": 100,
                                      "message.timestamp.type": "LogAppendTime"})
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.message_timestamp_type) == (5, 100, 1)
