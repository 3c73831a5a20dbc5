"""Kafka's `CoordinatorRuntimeMetrics` families of one coordinator runtime, read from its
shards and its `runtime_metrics.RuntimeMetrics`: the group coordinator's under
`kafka.server:type=group-coordinator-metrics`, the share coordinator's (the share-state
runtime) under `type=share-coordinator-metrics`, named as the JMX exporter names them."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from groupcoord.server.metrics.exposition import Family
from groupcoord.server.runtime.runtime_metrics import PERCENTILES
from groupcoord.server.runtime.shard_task import ShardState

if TYPE_CHECKING:
    from groupcoord.server.metrics.counters import GroupCounters
    from groupcoord.server.runtime.shard_runtime import ShardRuntime

GROUP_COORDINATOR = "kafka_server_group_coordinator_metrics_"
SHARE_COORDINATOR = "kafka_server_share_coordinator_metrics_"


def runtime_families(prefix: str, runtime: ShardRuntime, counters: GroupCounters,
                     now_ms: int) -> list[Family]:
    """Every runtime metric of `runtime`, each name prefixed with `prefix` (`counters`
    keeps the windowed rates)."""
    states: Counter[str] = Counter()
    queued = 0
    for task in runtime.shards.values():
        # Kafka's runtime states: a shard recovering from a failed write counts as loading.
        states["active" if task.state is ShardState.ACTIVE else "loading"] += 1
        queued += len(task.queue)
    partitions = Family(prefix + "num_partitions", "gauge",
                        "Coordinator shards in each state (num-partitions)")
    for state in ("loading", "active", "failed"):
        partitions.add(states[state], state=state)
    queue = Family(prefix + "event_queue_size", "gauge",
                   "Operations waiting in the shards' queues (event-queue-size)")
    queue.add(queued)
    out = [partitions, queue]
    metrics = runtime.metrics
    load_max, load_avg = metrics.partition_load_time(now_ms)
    for stat, value in (("max", load_max), ("avg", load_avg)):
        family = Family(prefix + f"partition_load_time_{stat}", "gauge",
                        f"The {stat} time a shard took to load over the last minute, ms "
                        f"(partition-load-time-{stat})")
        family.add(value)
        out.append(family)
    idle = Family(prefix + "thread_idle_ratio_avg", "gauge",
                  "Share of the last minute no operation of the shards ran "
                  "(thread-idle-ratio-avg)")
    idle.add(metrics.thread_idle_ratio())
    flushes = Family(prefix + "batch_flush_rate", "gauge",
                     "Drains that appended, per second over the last minute (batch-flush-rate)")
    flushes.add(counters.rate(prefix + "batch-flush", metrics.flushes, now_ms))
    out += [idle, flushes]
    for name, histogram in metrics.histograms().items():
        snap = histogram.snapshot(now_ms)
        base = prefix + name.replace("-", "_")
        family = Family(base + "_max", "gauge", f"The max {name} since the previous read "
                        f"({name}-max)")
        family.add(snap.max_ms())
        out.append(family)
        for suffix, percentile in PERCENTILES:
            family = Family(f"{base}_{suffix}", "gauge",
                            f"The {suffix} {name} since the previous read ({name}-{suffix})")
            family.add(snap.percentile_ms(percentile))
            out.append(family)
    return out
