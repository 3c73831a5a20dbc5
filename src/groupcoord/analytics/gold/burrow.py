"""Burrow's consumer-lag evaluation rules as pure functions.

Mirrors linkedin/Burrow ``core/internal/storage/inmemory.go`` (the per-partition window of
the last ``intervals`` commits) and ``core/internal/evaluator/caching.go``
(``calculatePartitionStatus`` and the group fold), as summarised in analytics.md 4.1.

Partition rules, in Burrow's order, once ``current_lag > allowed_lag``: STOP (no commit for
longer than the window spans, unless a recent broker offset was at or below the last commit),
REWIND (the first backwards commit of the window, unless a later commit reached the offset
before it), then only if no commit of the window had lag within ``allowed_lag``: STALL (every
offset identical), WARN (the known lags never decrease); else OK. A commit's lag may be
unknown (None), as in Burrow's ring; the lag rules skip it. The group status is the worst
partition status with STOP/STALL/REWIND folded into ERR. Burrow's own table of cases is the
test (tests/analytics/burrow_cases.json).
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
    """One slot of the window: committed offset, commit time (ms), lag at that time (None
    when it is not known, as Burrow's ring allows)."""

    offset: int
    timestamp: int
    lag: int | None


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


# Burrow's rule functions (caching.go), one each, named as there. They are tested on
# Burrow's own table of cases (tests/analytics/burrow_cases.json).

def lag_always_not_zero(window: Sequence[Commit], allowed_lag: int) -> bool:
    """Rule 1 (``isLagAlwaysNotZero``): no commit of the window had lag within
    ``allowed_lag``; commits without a known lag do not count."""
    return not any(c.lag is not None and c.lag <= allowed_lag for c in window)


def rewind_index(window: Sequence[Commit]) -> int:
    """Rule 2 (``checkIfOffsetsRewind``): the index of the first commit lower than the one
    before it, -1 if none. Only the first rewind is looked at, as Burrow does."""
    for i in range(1, len(window)):
        if window[i].offset < window[i - 1].offset:
            return i
    return -1


def rewind_recovered(window: Sequence[Commit], index: int) -> bool:
    """Rule 2, part 2 (``checkIfRewindRecovered``): a commit from the rewind on reached the
    offset committed before it."""
    before = window[index - 1].offset
    return any(c.offset >= before for c in window[index:])


def offsets_stopped(window: Sequence[Commit], now_ms: int) -> bool:
    """Rule 3 (``checkIfOffsetsStopped``): the time since the last commit is longer than
    the window spans."""
    first, last = window[0].timestamp, window[-1].timestamp
    return now_ms - last > last - first


def offsets_stalled(window: Sequence[Commit]) -> bool:
    """Rule 4 (``checkIfOffsetsStalled``): every commit of the window has the same offset."""
    return all(window[i].offset == window[i - 1].offset for i in range(1, len(window)))


def lag_not_decreasing(window: Sequence[Commit]) -> bool:
    """Rule 5 (``checkIfLagNotDecreasing``): no known lag is below the known lag before it."""
    last: int | None = None
    for c in window:
        if c.lag is not None:
            if last is not None and c.lag < last:
                return False
            last = c.lag
    return True


def recent_lag_zero(window: Sequence[Commit], recent_end_offsets: Sequence[int]) -> bool:
    """``checkIfRecentLagZero``: one of the recent broker end offsets was at or below the
    last commit (the consumer was caught up a few minutes ago)."""
    return any(eo <= window[-1].offset for eo in recent_end_offsets)


def partition_status(window: Sequence[Commit], recent_end_offsets: Sequence[int],
                     current_lag: int, now_ms: int, allowed_lag: int) -> Status:
    """``calculatePartitionStatus``: the rules in Burrow's order over a non-empty window."""
    if current_lag <= allowed_lag:
        return Status.OK
    if offsets_stopped(window, now_ms) and not recent_lag_zero(window, recent_end_offsets):
        return Status.STOP
    index = rewind_index(window)
    if index > 0 and not rewind_recovered(window, index):
        return Status.REWIND
    if lag_always_not_zero(window, allowed_lag):
        if offsets_stalled(window):
            return Status.STALL
        if lag_not_decreasing(window):
            return Status.WARN
    return Status.OK


def lag_trend(window: Sequence[Commit]) -> float:
    """Slope of lag against time over the window (records/s); 0 with fewer than 2 slots."""
    known = [(c.timestamp / 1000.0, c.lag) for c in window if c.lag is not None]
    n = len(known)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in known) / n
    mean_l = sum(lag for _, lag in known) / n
    var = sum((t - mean_t) ** 2 for t, _ in known)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (lag - mean_l) for t, lag in known) / var


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
    """``evaluatePartitionStatus``: a window below ``minimum-complete`` is OK as it is."""
    if complete < cfg.minimum_complete:
        return Status.OK
    return partition_status(window, recent_end_offsets, current_lag, now_ms, cfg.allowed_lag)


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
