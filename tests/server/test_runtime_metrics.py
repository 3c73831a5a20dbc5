"""Kafka's coordinator runtime metrics (`runtime_metrics`): the fixed-bucket histogram, each
measurement of a real runtime driven by a manual nanosecond clock (operations and the
append move it, nothing sleeps), and the families a scrape serves for them."""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run
from helpers.prometheus_text import parse

from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.server.metrics.exposition import render
from groupcoord.server.metrics.families import BrokerMetrics
from groupcoord.server.metrics.http import MetricsOptions
from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime
from groupcoord.server.runtime.runtime_metrics import (
    BOUNDS_NS,
    LatencyHistogram,
    RuntimeMetrics,
)

MS = 1_000_000
GROUP = "g"


def near(reported: float, value: float) -> bool:
    """A reported figure is its sample's bucket bound: at most an eighth above it."""
    return value <= reported <= value * 1.125


class ManualNs:
    """A nanosecond counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_histogram_percentiles_are_bucket_bounds_within_an_eighth() -> None:
    assert all(a < b for a, b in itertools.pairwise(BOUNDS_NS))
    hist = LatencyHistogram()
    for value in range(1, 1001):  # 1 ms .. 1000 ms
        hist.record(value * MS)
    snap = hist.snapshot(now_ms=5_000)
    assert snap.count == 1000
    assert near(snap.max_ms(), 1000)
    for percentile, expected in ((50, 500), (95, 950), (99, 990), (99.9, 999)):
        assert near(snap.percentile_ms(percentile), expected), percentile
    # A bound reports itself exactly: 1.024 us (the first) and 4 ms = 2**22 ns.
    one = LatencyHistogram()
    one.record(1024)
    one.record(2**22)
    assert one.snapshot(0).percentile_ms(50) == 1024 / MS
    assert one.snapshot(0).max_ms() == 2**22 / MS
    # Longer than the last bound (68.7 s) goes into the last bucket, reported as it.
    one.record(100_000 * MS)
    assert one.snapshot(2_000).percentile_ms(99.9) == 2**36 / MS


def test_histogram_hands_out_the_interval_since_the_previous_read() -> None:
    hist = LatencyHistogram()
    hist.record(2 * MS)
    first = hist.snapshot(now_ms=10_000)
    hist.record(7 * MS)
    # Within a second of the last read: the same interval (Kafka's snapshot age).
    assert hist.snapshot(now_ms=10_900) is first
    later = hist.snapshot(now_ms=11_001)
    assert later.count == 1 and near(later.max_ms(), 7)
    empty = hist.snapshot(now_ms=12_002)
    assert (empty.count, empty.max_ms(), empty.percentile_ms(99)) == (0, 0.0, 0.0)


class CommitShard(Shard):
    """Commits whose run takes `run_ms` on the manual clock; on_loaded takes `load_ms`."""

    ns: ManualNs
    load_ms = 0
    clock: ManualClock | None = None

    def __init__(self, partition: int) -> None:
        self.partition = partition

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        pass

    def on_loaded(self, now_ms: int) -> Result:
        if self.clock is not None and self.load_ms:
            self.clock.advance(self.load_ms)
        return Result()

    def commit(self, offset: int, run_ms: int, now_ms: int) -> Result:
        self.ns.now += run_ms * MS
        record = offset_commit_record(GROUP, "t", 0, offset, -1, "", now_ms, -1, bytes(16))
        return Result(records=[record], response=offset)

    def read(self, run_ms: int) -> Result:
        self.ns.now += run_ms * MS
        return Result(response="read")


def _commit(offset: int, run_ms: int) -> Any:
    return lambda s, _c, n: s.commit(offset, run_ms, n)


async def _runtime(b: InProcBroker, ns: ManualNs, append_ms: int) -> CoordinatorRuntime:
    runtime = CoordinatorRuntime(b.broker, shard_factory=CommitShard)
    runtime.metrics = RuntimeMetrics(ns)
    append = runtime.append

    def slow_append(*args: Any, **kwargs: Any) -> Any:
        ns.now += append_ms * MS
        return append(*args, **kwargs)

    runtime.append = slow_append
    await runtime.start()
    return runtime


def test_queue_processing_purgatory_linger_flush_and_idle(tmp_path: Path) -> None:
    ns = ManualNs()
    CommitShard.ns = ns

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime = await _runtime(b, ns, append_ms=4)
            metrics = runtime.metrics
            # Both queued at 0 and drained together once the clock reads 3 ms: the first
            # runs 2 ms (staged at 5), the second 1 ms (6); the batch's append takes 4 ms.
            calls = [runtime.submit(GROUP, _commit(1, 2)), runtime.submit(GROUP, _commit(2, 1))]
            ns.now = 3 * MS
            assert await asyncio.gather(*calls) == [1, 2]
            snap = {name: h.snapshot(10_000) for name, h in metrics.histograms().items()}
            queue, processing = snap["event-queue-time-ms"], snap["event-processing-time-ms"]
            assert queue.count == 2 and near(queue.max_ms(), 5)
            assert near(queue.percentile_ms(50), 3)
            assert processing.count == 2 and near(processing.max_ms(), 2)
            assert near(processing.percentile_ms(50), 1)
            purgatory = snap["event-purgatory-time-ms"]  # released at 10
            assert purgatory.count == 2 and near(purgatory.max_ms(), 5)
            assert near(purgatory.percentile_ms(50), 4)
            linger, flush = snap["batch-linger-time-ms"], snap["batch-flush-time-ms"]
            assert linger.count == 1 and near(linger.max_ms(), 1)  # staged at 5, flushed at 6
            assert flush.count == 1 and near(flush.max_ms(), 4)
            assert metrics.flushes == 1
            # Busy from 3 to 10 ms of the 20 since the metrics began.
            ns.now = 20 * MS
            assert metrics.thread_idle_ratio() == 1 - 7 / 20
            # A read-only drain waits for no append: no purgatory, no flush.
            reply = await runtime.call(GROUP, lambda s, _c, _n: s.read(3))
            assert reply == "read"
            snap = {name: h.snapshot(20_000) for name, h in metrics.histograms().items()}
            assert near(snap["event-processing-time-ms"].max_ms(), 3)
            assert snap["event-purgatory-time-ms"].count == 0
            assert snap["batch-flush-time-ms"].count == 0 and metrics.flushes == 1
            ns.now = 40 * MS
            assert metrics.thread_idle_ratio() == 1 - 10 / 40
            await runtime.stop()
    run(go())


def test_partition_load_time_over_the_last_minute(tmp_path: Path) -> None:
    clock = ManualClock(1_000_000)
    CommitShard.ns = ManualNs()
    CommitShard.clock, CommitShard.load_ms = clock, 250

    async def go() -> None:
        async with InProcBroker(tmp_path, clock=clock) as b:
            runtime = await _runtime(b, CommitShard.ns, append_ms=0)
            now = clock.now_ms()
            assert math.isnan(runtime.metrics.partition_load_time(now)[0])
            await runtime.call(GROUP, _commit(1, 0))  # creates the shard: a 250 ms load
            CommitShard.load_ms = 50
            other = next(p for p in range(runtime.num_partitions)
                         if p != runtime.partition_for(GROUP))
            runtime.shard(other)
            await runtime.wait_loaded()
            assert runtime.metrics.partition_load_time(clock.now_ms()) == (250.0, 150.0)
            clock.advance(61_000)  # both loads leave the minute
            assert math.isnan(runtime.metrics.partition_load_time(clock.now_ms())[1])
            await runtime.stop()
    try:
        run(go())
    finally:
        CommitShard.clock, CommitShard.load_ms = None, 0


def test_a_scrape_serves_the_runtime_families_of_both_coordinators(tmp_path: Path) -> None:
    ns = ManualNs()

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            groups = b.broker.groups
            groups.metrics = RuntimeMetrics(ns)

            def commit(shard: Any, _ctx: Any, now: int) -> Result:
                ns.now += 2 * MS
                record = offset_commit_record(GROUP, "t", 0, 5, -1, "", now, -1, bytes(16))
                return Result(records=[record], response="committed")

            for _ in range(3):
                await groups.call(GROUP, commit)
            ns.now += 94 * MS  # busy 6 ms of 100
            scrape = BrokerMetrics(b.broker, MetricsOptions("local"))
            samples = parse((await scrape.scrape()).decode())
            await asyncio.to_thread(render, [])  # the worker thread is done

            def one(name: str) -> float:
                return next(iter(samples[name].values()))

            kafka = "kafka_server_group_coordinator_metrics_"
            assert near(one(kafka + "event_processing_time_ms_max"), 2)
            assert near(one(kafka + "event_processing_time_ms_p99"), 2)
            assert one(kafka + "event_queue_time_ms_max") == 0.0
            assert one(kafka + "batch_flush_time_ms_p50") == 0.0
            assert one(kafka + "thread_idle_ratio_avg") == pytest.approx(0.94)
            assert one(kafka + "partition_load_time_max") >= 0
            assert samples[kafka + "num_partitions"][frozenset({("state", "active")})] == 1
            assert one(kafka + "share_group_rebalance_count") == 0
            share = "kafka_server_share_coordinator_metrics_"
            for suffix in ("max", "p50", "p95", "p99", "p999"):
                for name in ("event_queue_time_ms", "event_processing_time_ms",
                             "event_purgatory_time_ms", "batch_linger_time_ms",
                             "batch_flush_time_ms"):
                    assert kafka + f"{name}_{suffix}" in samples
                    assert share + f"{name}_{suffix}" in samples
            assert share + "thread_idle_ratio_avg" in samples
            assert share + "batch_flush_rate" in samples
    run(go())


def test_a_broker_times_operations_only_when_it_serves_metrics(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path / "off") as b:
            groups = b.broker.groups
            assert not groups.metrics.enabled
            assert not b.broker.shares.state.runtime.metrics.enabled
            await groups.call(GROUP, lambda s, _c, _n: Result(response="read"))
            assert groups.metrics.event_processing_time.snapshot(0).count == 0
            assert groups.metrics.busy_ns == 0
        async with InProcBroker(tmp_path / "on", runtime_metrics=True) as b:
            groups = b.broker.groups
            await groups.call(GROUP, lambda s, _c, _n: Result(response="read"))
            assert groups.metrics.event_processing_time.snapshot(0).count == 1
            assert b.broker.shares.state.runtime.metrics.enabled
    run(go())


def test_an_untimed_runtime_reads_no_clock_per_operation(tmp_path: Path) -> None:
    """Off, a drain that writes (staged, appended) and one that only reads take no clock
    read at all: the cost of the timing is not paid without it."""
    ns = ManualNs()
    CommitShard.ns = ns
    reads = itertools.count()

    def counted() -> int:
        next(reads)
        return ns.now

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime = CoordinatorRuntime(b.broker, shard_factory=CommitShard)
            runtime.metrics = RuntimeMetrics(counted, enabled=False)
            await runtime.start()
            at_start = next(reads)  # the metrics' own reference read
            assert await runtime.call(GROUP, _commit(1, 0)) == 1
            assert await runtime.call(GROUP, lambda s, _c, _n: s.read(0)) == "read"
            assert next(reads) == at_start + 1
            await runtime.stop()
    run(go())
