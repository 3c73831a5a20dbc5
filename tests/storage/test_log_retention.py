"""Retention: whole inactive segments by time and by size, advancing the log start."""

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


def test_active_segment_never_deleted(open_log) -> None:
    log = open_log(retention_ms=1)
    log.append(make_batch(ts=1))
    assert log.delete_expired(now_ms=10**15) == 0 and log.log_end_offset == 1


def test_config_overrides_by_kafka_name() -> None:
    cfg = LogConfig().with_overrides({"retention.ms": 5, "segment.bytes": 100,
                                      "message.timestamp.type": "LogAppendTime"})
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.message_timestamp_type) == (5, 100, 1)
