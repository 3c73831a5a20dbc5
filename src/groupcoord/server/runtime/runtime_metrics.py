"""What a coordinator runtime measures of itself: Kafka's `CoordinatorRuntimeMetrics`
(coordinator-common's `CoordinatorRuntimeMetricsImpl`), fed by `shard_task` on every
operation and read by a `/metrics` scrape.

- `event-queue-time-ms`: an operation's wait in its shard's queue (submit -> start);
- `event-processing-time-ms`: its run (the shard's code, replay, staging its records);
- `event-purgatory-time-ms`: the wait of a finished operation's reply for its drain's
  append (and fsync) before it is released; only drains that wrote record it, as Kafka
  records it only for events deferred until their records are committed;
- `batch-linger-time-ms`: a coalesced batch's first staged record -> the start of its append;
- `batch-flush-time-ms`: a drain's appends plus its fsync (`--fsync always`), one sample per
  drain that wrote; `batch-flush-rate` counts them;
- `partition-load-time-max/avg`: a shard's load, creation (or reload) -> ACTIVE;
- `thread-idle-ratio-avg`: the share of time no operation of the runtime's shards ran.

The histograms cost one clock read per edge and one `bisect` per sample (the queue and
processing samples are counted inline by `shard_task`, into `counts`, which keeps its
identity); their buckets are fixed, eight per doubling, and a percentile or the max is the
upper bound of its sample's bucket, at most 12.5% above it (Kafka's HdrHistogram reports
the highest value equivalent to its sample too, at three significant digits). A read takes
the samples since the previous read, as Kafka's `HdrHistogram` hands out an interval
histogram at most once a second. Durations are kept in nanoseconds from
`read_ns` (injectable: tests drive a manual counter) and reported in milliseconds.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

# Bucket upper bounds (ns): 0 (nothing measurable: the clock did not move), up to 1.024 us,
# then eight equal buckets per doubling up to 2**36 ns (68.7 s, above Kafka's highest
# trackable latency, one minute); the last bucket takes anything longer.
FIRST_BOUND_EXP = 10
LAST_BOUND_EXP = 36
SUB_BUCKETS = 8
BOUNDS_NS: tuple[int, ...] = (0, 1 << FIRST_BOUND_EXP) + tuple(
    (1 << exp) + (k + 1) * (1 << (exp - 3))
    for exp in range(FIRST_BOUND_EXP, LAST_BOUND_EXP) for k in range(SUB_BUCKETS))
# Kafka's `KafkaMetricHistogram` percentiles, by metric suffix.
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p999", 99.9))
# `HdrHistogram.DEFAULT_MAX_SNAPSHOT_AGE_MS`: reads within it see the same interval.
SNAPSHOT_AGE_MS = 1000
# Kafka's sensors keep two 30-second samples: partition loads and the idle ratio are
# taken over the last minute.
WINDOW_MS = 60_000
NS_PER_MS = 1_000_000


# The bucket (an index of `LatencyHistogram.counts`) of a duration in ns.
bucket_of = bisect_left
# The value reported for each bucket: its upper bound; the last, past every bound, as it.
_BUCKET_NS = (*BOUNDS_NS, BOUNDS_NS[-1])
_EMPTY = (0,) * len(_BUCKET_NS)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """The samples of one interval."""

    counts: tuple[int, ...]

    @property
    def count(self) -> int:
        return sum(self.counts)

    def max_ms(self) -> float:
        """The upper bound of the highest bucket with a sample; 0 without samples."""
        for index in range(len(self.counts) - 1, -1, -1):
            if self.counts[index]:
                return _BUCKET_NS[index] / NS_PER_MS
        return 0.0

    def percentile_ms(self, percentile: float) -> float:
        """HdrHistogram's `getValueAtPercentile`: the upper bound of the bucket holding the
        sample at that rank; 0 without samples."""
        rank = max(1, math.ceil(percentile / 100.0 * self.count))
        seen = 0
        for index, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                return _BUCKET_NS[index] / NS_PER_MS
        return 0.0


class LatencyHistogram:
    """Durations in fixed buckets; `snapshot` hands out the interval since the last one."""

    __slots__ = ("_snapshot", "_snapshot_ms", "counts")

    def __init__(self) -> None:
        self.counts = list(_EMPTY)
        self._snapshot: HistogramSnapshot | None = None
        self._snapshot_ms = 0

    def record(self, duration_ns: int) -> None:
        self.counts[bucket_of(BOUNDS_NS, duration_ns)] += 1

    def snapshot(self, now_ms: int) -> HistogramSnapshot:
        snap = self._snapshot
        if snap is None or now_ms - self._snapshot_ms > SNAPSHOT_AGE_MS:
            snap = self._snapshot = HistogramSnapshot(tuple(self.counts))
            self._snapshot_ms = now_ms
            self.counts[:] = _EMPTY
        return snap


class RuntimeMetrics:
    """The measurements of one coordinator runtime (all its shards)."""

    def __init__(self, read_ns: Callable[[], int] = time.perf_counter_ns, *,
                 enabled: bool = True) -> None:
        self.read_ns = read_ns
        # Off: operations are not timed (queue, processing, purgatory, linger, flush,
        # idle, flush count); partition loads are recorded all the same.
        self.enabled = enabled
        self.event_queue_time = LatencyHistogram()
        self.event_processing_time = LatencyHistogram()
        self.event_purgatory_time = LatencyHistogram()
        self.batch_linger_time = LatencyHistogram()
        self.batch_flush_time = LatencyHistogram()
        self.flushes = 0
        # Time operations, appends and fsyncs held the loop, in total.
        self.busy_ns = 0
        # (end ms, duration ms) of the loads of the last minute.
        self.loads: deque[tuple[int, int]] = deque()
        # (read_ns, busy_ns) at the idle-ratio reads of the last minute.
        self._busy_seen: deque[tuple[int, int]] = deque([(read_ns(), 0)])

    def histograms(self) -> dict[str, LatencyHistogram]:
        """Kafka's metric name (before the `-p50` ... `-max` suffix) -> its histogram."""
        return {
            "event-queue-time-ms": self.event_queue_time,
            "event-processing-time-ms": self.event_processing_time,
            "event-purgatory-time-ms": self.event_purgatory_time,
            "batch-linger-time-ms": self.batch_linger_time,
            "batch-flush-time-ms": self.batch_flush_time,
        }

    def drain_released(self, drain_start_ns: int, op_ends_ns: list[int], flush_ns: int,
                       released_ns: int) -> None:
        """A drain that wrote released its replies at `released_ns`: each operation's reply
        waited from its end until then; the appends and fsync took `flush_ns`."""
        purgatory = self.event_purgatory_time.counts
        for end in op_ends_ns:
            purgatory[bucket_of(BOUNDS_NS, released_ns - end)] += 1
        self.batch_flush_time.counts[bucket_of(BOUNDS_NS, flush_ns)] += 1
        self.flushes += 1
        self.busy_ns += released_ns - drain_start_ns

    def partition_loaded(self, started_ms: int, ended_ms: int) -> None:
        self.loads.append((ended_ms, ended_ms - started_ms))
        self.partition_load_time(ended_ms)  # drops the loads past the minute

    def partition_load_time(self, now_ms: int) -> tuple[float, float]:
        """(max, avg) of the loads of the last minute in ms; NaN without one, as Kafka's
        `Max` and `Avg` of no sample."""
        loads = self.loads
        while loads and now_ms - loads[0][0] > WINDOW_MS:
            loads.popleft()
        if not loads:
            return math.nan, math.nan
        durations = [d for _, d in loads]
        return float(max(durations)), sum(durations) / len(durations)

    def thread_idle_ratio(self) -> float:
        """The share of the last minute (since the oldest read within it) in which no
        operation ran: Kafka's idle time per elapsed time of its event threads."""
        now = self.read_ns()
        seen = self._busy_seen
        while len(seen) > 1 and now - seen[0][0] > WINDOW_MS * NS_PER_MS:
            seen.popleft()
        first_ns, first_busy = seen[0]
        if seen[-1][0] < now:
            seen.append((now, self.busy_ns))
        elapsed = now - first_ns
        if elapsed <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - (self.busy_ns - first_busy) / elapsed))
