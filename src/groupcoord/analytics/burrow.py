"""Burrow's consumer-lag evaluation rules as pure functions.

Mirrors linkedin/Burrow ``core/internal/storage/inmemory.go`` (the per-partition window of
the last ``intervals`` commits) and ``core/internal/evaluator/caching.go``
(``calculatePartitionStatus`` and the group fold), as summarised in analytics.md 4.1.

Partition rules, in this order, once ``current_lag > allowed_lag``:
STOP (no commit for longer than the window spans, unless the consumer was caught up with a
recent broker offset), REWIND (an unrecovered backwards commit), OK if the lag was within
``allowed_lag`` at some commit, STALL (every offset identical), WARN (lag never decreased),
else OK. The group status is the worst partition status with STOP/STALL/REWIND folded into ERR.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum


class Status(IntEnum):
    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class Commit:
    """One slot of the window: committed offset, commit time (ms), lag at that time."""

    offset: int
    timestamp: int
    lag: int


@dataclass(frozen=True)
class BurrowConfig:
    intervals: int = 10
    min_distance_ms: int = 0
    allowed_lag: int = 0
    minimum_complete: float = 0.0


@dataclass(frozen=True)
class PartitionResult:
    status: Status
    current_lag: int
    complete: float
    window_start_offset: int | None
    window_end_offset: int | None
    lag_trend: float  # least-squares slope of lag over the window, records per second


@dataclass(frozen=True)
class GroupResult:
    status: Status
    total_lag: int
    max_lag_index: int | None  # index into the partition list with the highest current lag
    complete: float


def build_window(commits: Iterable[Commit], cfg: BurrowConfig = BurrowConfig()) -> list[Commit]:
    """Burrow's storage ring after seeing ``commits`` in arrival order (``add_commit`` folded
    over them from an empty ring)."""
    ring: list[Commit] = []
    for c in commits:
        add_commit(ring, c, cfg)
    return ring


def add_commit(ring: list[Commit], c: Commit, cfg: BurrowConfig = BurrowConfig()) -> None:
    """One commit arriving at Burrow's ring, in place.

    A commit arriving less than ``min_distance_ms`` after the newest slot replaces it and
    keeps the old timestamp; out-of-order commits are inserted by time; only the newest
    ``intervals`` slots are kept.
    """
    if ring and c.timestamp >= ring[-1].timestamp:
        last = ring[-1]
        if c.timestamp - last.timestamp < cfg.min_distance_ms:
            ring[-1] = Commit(c.offset, last.timestamp, c.lag)
            return
        ring.append(c)
    elif ring:
        times = [r.timestamp for r in ring]
        ring.insert(bisect.bisect_right(times, c.timestamp), c)
    else:
        ring.append(c)
    if len(ring) > cfg.intervals:
        del ring[: len(ring) - cfg.intervals]


def _stopped(window: Sequence[Commit], now_ms: int) -> bool:
    first, last = window[0].timestamp, window[-1].timestamp
    return now_ms - last > last - first


def _unrecovered_rewind(window: Sequence[Commit]) -> bool:
    offsets = [c.offset for c in window]
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            before = offsets[i - 1]
            if not any(o >= before for o in offsets[i + 1 :]):
                return True
    return False


def lag_trend(window: Sequence[Commit]) -> float:
    """Slope of lag against time over the window (records/s); 0 with fewer than 2 slots."""
    n = len(window)
    if n < 2:
        return 0.0
    ts = [c.timestamp / 1000.0 for c in window]
    mean_t = sum(ts) / n
    mean_l = sum(c.lag for c in window) / n
    var = sum((t - mean_t) ** 2 for t in ts)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (c.lag - mean_l) for t, c in zip(ts, window, strict=True)) / var


def evaluate_partition(
    window: Sequence[Commit],
    current_end_offset: int,
    recent_end_offsets: Sequence[int],
    now_ms: int,
    cfg: BurrowConfig = BurrowConfig(),
) -> PartitionResult:
    """``calculatePartitionStatus`` for one partition's window at ``now_ms``."""
    if not window:
        return PartitionResult(Status.NOTFOUND, 0, 0.0, None, None, 0.0)
    last = window[-1]
    current_lag = max(0, current_end_offset - last.offset)
    complete = min(1.0, len(window) / cfg.intervals)
    result = PartitionResult(Status.OK, current_lag, complete, window[0].offset, last.offset,
                             lag_trend(window))
    return _with_status(result, _status(window, current_lag, complete, recent_end_offsets,
                                        now_ms, cfg))


def _status(
    window: Sequence[Commit],
    current_lag: int,
    complete: float,
    recent_end_offsets: Sequence[int],
    now_ms: int,
    cfg: BurrowConfig,
) -> Status:
    if complete < cfg.minimum_complete or current_lag <= cfg.allowed_lag:
        return Status.OK
    caught_up_recently = any(eo <= window[-1].offset for eo in recent_end_offsets)
    if _stopped(window, now_ms) and not caught_up_recently:
        return Status.STOP
    if _unrecovered_rewind(window):
        return Status.REWIND
    if any(c.lag <= cfg.allowed_lag for c in window):
        return Status.OK
    if all(c.offset == window[0].offset for c in window):
        return Status.STALL
    if all(window[i].lag >= window[i - 1].lag for i in range(1, len(window))):
        return Status.WARN
    return Status.OK


def _with_status(r: PartitionResult, status: Status) -> PartitionResult:
    return PartitionResult(status, r.current_lag, r.complete, r.window_start_offset,
                           r.window_end_offset, r.lag_trend)


def fold_status(status: Status) -> Status:
    """Partition status as it counts towards the group: STOP/STALL/REWIND become ERR."""
    return Status.ERR if status in (Status.STOP, Status.STALL, Status.REWIND) else status


def evaluate_group(partitions: Sequence[PartitionResult]) -> GroupResult:
    """The group fold: worst folded status, total and max lag, share of full windows."""
    if not partitions:
        return GroupResult(Status.NOTFOUND, 0, None, 0.0)
    status = max(fold_status(p.status) for p in partitions)
    lags = [p.current_lag for p in partitions]
    max_index = max(range(len(lags)), key=lambda i: lags[i])
    complete = sum(1 for p in partitions if p.complete >= 1.0) / len(partitions)
    return GroupResult(Status(status), sum(lags), max_index, complete)
