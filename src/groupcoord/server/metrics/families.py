"""The metric families of one scrape (docs/metrics.md lists every one with its origin).

Three sets of names:
- Kafka's group coordinator (KIP-1301 `GroupCoordinatorMetrics` and the runtime's
  `CoordinatorRuntimeMetrics`, `kafka.server:type=group-coordinator-metrics`) under the
  names the Prometheus JMX exporter's default rules give them:
  `kafka_server_group_coordinator_metrics_<attribute>{<tags>}`;
- klag-exporter's lag families (`kafka_consumergroup_group_*`, `kafka_partition_*`), with
  its labels, so its dashboards and alerts work unchanged;
- groupcoord's own (`groupcoord_*`): rebalances by cause, the group state by name, share-
  and streams-group lag, and the scrape itself.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupcoord.server.config import METRICS_MAX_GROUPS_DEFAULT
from groupcoord.server.metrics.counters import CAUSES, GroupCounters
from groupcoord.server.metrics.exposition import Family, render
from groupcoord.server.metrics.groups import GroupView, ShardGroups, read_groups
from groupcoord.server.metrics.lag import PartitionLag, TimestampReader, partition_lag
from groupcoord.server.metrics.runtime import GROUP_COORDINATOR, SHARE_COORDINATOR, runtime_families

if TYPE_CHECKING:
    from groupcoord.server.broker import Broker

KAFKA = GROUP_COORDINATOR
# Every protocol and state Kafka 4.4 counts groups in (zeros are exported too, as Kafka's
# gauges exist from start-up).
GROUP_STATES: dict[str, tuple[str, ...]] = {
    "classic": ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"),
    "consumer": ("Empty", "Assigning", "Reconciling", "Stable", "Dead"),
    "streams": ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"),
    "share": ("Empty", "Stable", "Dead"),
}
# klag-exporter's `encode_group_state`.
KLAG_STATES = {"PreparingRebalance": 1, "CompletingRebalance": 2, "Stable": 3, "Dead": 4,
               "Empty": 5, "Assigning": 6, "Reconciling": 7}
# Timestamp reads per scrape, at most (`lag.TimestampReader`).
TIMESTAMP_READS_PER_SCRAPE = 2000
# Work done between two yields to the event loop: requests wait at most about this long.
SLICE_S = 0.005


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    cluster_name: str  # the `cluster_name` label of klag-exporter's families
    max_groups: int = METRICS_MAX_GROUPS_DEFAULT


class BrokerMetrics:
    """Everything `/metrics` shows of one broker."""

    def __init__(self, broker: Broker, options: MetricsOptions) -> None:
        self.broker = broker
        self.options = options
        self.counters: GroupCounters = broker.group_counters
        self.reader = TimestampReader(TIMESTAMP_READS_PER_SCRAPE)
        self.scrapes = 0

    async def scrape(self) -> bytes:
        started = time.perf_counter()
        broker = self.broker
        now_ms = broker.clock.now_ms()
        shards = await read_groups(broker.groups, self.options.max_groups)
        families = self._kafka(shards, now_ms)
        groups = sorted((g for s in shards for g in s.groups), key=lambda g: g.group_id)
        total = sum(sum(s.counts.values()) for s in shards)
        exported = groups[:self.options.max_groups]
        families += await self._lag(exported, now_ms)
        families += self._own(exported, total, now_ms)
        self.scrapes += 1
        took = Family("groupcoord_metrics_scrape_duration_seconds", "gauge",
                      "Time this scrape took to collect its figures (before the text is "
                      "written)")
        took.add(time.perf_counter() - started)
        families.append(took)
        # Plain data from here on: the text is built on a worker thread, off the loop.
        return await asyncio.to_thread(render, families)

    # -- Kafka (KIP-1301 and the coordinator runtime) ------------------------------------

    def _kafka(self, shards: list[ShardGroups], now_ms: int) -> list[Family]:
        counts: Counter[tuple[str, str]] = Counter()
        for s in shards:
            counts.update(s.counts)
        by_protocol = Family(KAFKA + "group_count", "gauge",
                             "Groups of each protocol (group-count)")
        out = [by_protocol]
        for protocol, states in GROUP_STATES.items():
            by_protocol.add(sum(n for (p, _), n in counts.items() if p == protocol),
                            protocol=protocol)
            name = "classic_group_count" if protocol == "classic" else f"{protocol}_group_count"
            family = Family(KAFKA + name, "gauge",
                            f"{protocol.capitalize()} groups in each state ({name.replace('_', '-')})")
            for state in states:
                family.add(counts[(protocol, state)], state=state)
            out.append(family)
        stats = self.broker.groups.stats
        counters = self.counters
        totals = {
            "offset-commit": (stats.offset_commits, "Offsets committed"),
            "offset-expiration": (counters.totals["offset-expiration"],
                                  "Offsets removed by retention"),
            "offset-deletion": (stats.offset_deletions, "Offsets removed by OffsetDelete"),
            "group-completed-rebalance": (counters.totals["group-completed-rebalance"],
                                          "Classic rebalances that formed a generation"),
            "consumer-group-rebalance": (counters.totals["consumer-group-rebalance"],
                                         "Consumer (KIP-848) group epoch bumps"),
            "streams-group-rebalance": (counters.totals["streams-group-rebalance"],
                                        "Streams group epoch bumps"),
            "share-group-rebalance": (counters.totals["share-group-rebalance"],
                                      "Share group epoch bumps"),
        }
        for sensor, (total, help_text) in totals.items():
            base = KAFKA + sensor.replace("-", "_")
            count = Family(base + "_count", "untyped", f"{help_text} ({sensor}-count)")
            count.add(total)
            rate = Family(base + "_rate", "gauge",
                          f"{help_text} per second over the last minute ({sensor}-rate)")
            rate.add(counters.rate(sensor, total, now_ms))
            out += [count, rate]
        offsets = Family(KAFKA + "offset_count", "gauge", "Committed offsets (offset-count)")
        offsets.add(sum(s.offset_count for s in shards))
        out.append(offsets)
        out += runtime_families(KAFKA, self.broker.groups, counters, now_ms)
        out += runtime_families(SHARE_COORDINATOR, self.broker.shares.state.runtime, counters,
                                now_ms)
        return out

    # -- klag-exporter -------------------------------------------------------------------

    async def _lag(self, groups: list[GroupView], now_ms: int) -> list[Family]:
        cluster = self.options.cluster_name
        fam = _KlagFamilies()
        reader = self.reader
        reader.begin_scrape()
        logs = self.broker.logs
        slice_start = time.perf_counter()
        for group in groups:
            if group.protocol == "share":
                continue
            lags: list[PartitionLag] = []
            for tp, committed in sorted(group.offsets.items()):
                lags.append(partition_lag(group.group_id, tp, committed, group.owners.get(tp),
                                          logs.get(*tp), reader, now_ms))
                if time.perf_counter() - slice_start > SLICE_S:
                    await asyncio.sleep(0)  # let requests in between
                    slice_start = time.perf_counter()
            fam.group(cluster, group, lags)
        reader.end_scrape()
        for topic in self.broker.topics.all():
            if topic.internal:
                continue
            for p in range(topic.num_partitions):
                plog = logs.get(topic.name, p)
                if plog is not None:
                    labels = {"cluster_name": cluster, "topic": topic.name, "partition": str(p)}
                    fam.latest.add(plog.log_end_offset, **labels)
                    fam.earliest.add(plog.log_start_offset, **labels)
        return fam.all()

    # -- groupcoord's own ----------------------------------------------------------------

    def _own(self, groups: list[GroupView], total: int, now_ms: int) -> list[Family]:
        state = Family("groupcoord_group_state", "gauge",
                       "1 for the group's current state, by Kafka's state name")
        for g in groups:
            state.add(1, group=g.group_id, protocol=g.protocol, state=g.state)
        counters = self.counters
        by_cause = Family("groupcoord_rebalances_total", "counter",
                          "Rebalances (classic) and group epoch bumps (consumer, streams, "
                          "share) by cause, every group")
        for protocol in ("classic", "consumer", "streams", "share"):
            for cause in CAUSES:
                by_cause.add(counters.rebalances[(protocol, cause)], protocol=protocol,
                             cause=cause)
        by_group = Family("groupcoord_group_rebalances_total", "counter",
                          "Rebalances by group and cause (groups past the limit as __other__)")
        for group_id, per_cause in sorted(counters.group_rebalances.items()):
            for (protocol, cause), n in sorted(per_cause.items()):
                by_group.add(n, group=group_id, protocol=protocol, cause=cause)
        exported = Family("groupcoord_metrics_groups", "gauge",
                          "Groups on this broker, and groups exported by name (the limit)")
        exported.add(total, kind="total")
        exported.add(len(groups), kind="exported")
        exported.add(self.options.max_groups, kind="limit")
        reads = Family("groupcoord_metrics_timestamp_reads_total", "counter",
                       "Log reads for the timestamp of a group's next record")
        reads.add(self.reader.reads_total)
        return [state, by_cause, by_group, exported, reads, self._unassigned(groups),
                *self._share(groups), *self._streams(groups)]

    def _unassigned(self, groups: list[GroupView]) -> Family:
        """Partitions of subscribed topics that no member holds: silent non-assignment (a
        classic leader that assigned from stale metadata, a consumer group still
        reconciling)."""
        family = Family("groupcoord_group_unassigned_partitions", "gauge",
                        "Partitions of a topic the group subscribes to that no member is "
                        "assigned (classic groups when Stable)")
        topics = self.broker.topics
        for g in groups:
            for name in sorted(g.subscribed):
                topic = topics.get(name)
                if topic is None:
                    continue
                held = sum(1 for (t, _p) in g.owners if t == name)
                family.add(max(0, topic.num_partitions - held), group=g.group_id,
                           protocol=g.protocol, topic=name)
        return family

    def _share(self, groups: list[GroupView]) -> list[Family]:
        lag = Family("groupcoord_share_group_lag", "gauge",
                     "Records of a share-partition not yet acknowledged or archived "
                     "(KIP-1226 lag)")
        start = Family("groupcoord_share_group_start_offset", "gauge",
                       "Start offset of a share-partition")
        shares, topics = self.broker.shares, self.broker.topics
        for g in groups:
            if g.protocol != "share":
                continue
            for topic_id, partitions in sorted(shares.state_partitions(g.group_id).items()):
                topic = topics.by_id(topic_id)
                if topic is None:
                    continue
                for p in sorted(partitions):
                    s = shares.summary(g.group_id, topic, p)
                    if s.start_offset < 0:
                        continue
                    labels = {"group": g.group_id, "topic": topic.name, "partition": str(p)}
                    lag.add(s.lag, **labels)
                    start.add(s.start_offset, **labels)
        return [lag, start]

    def _streams(self, groups: list[GroupView]) -> list[Family]:
        task_lag = Family("groupcoord_streams_group_task_lag", "gauge",
                          "Records behind, summed over an active task's source partitions")
        logs = self.broker.logs
        for g in groups:
            if g.protocol != "streams":
                continue
            for sid, topics in sorted(g.subtopologies.items()):
                partitions = sorted({p for (t, p) in g.offsets if t in topics})
                for p in partitions:
                    behind = 0
                    for t in topics:
                        committed = g.offsets.get((t, p))
                        plog = logs.get(t, p)
                        if committed is not None and plog is not None:
                            behind += max(0, plog.log_end_offset - committed)
                    task_lag.add(behind, group=g.group_id, subtopology=sid, partition=str(p))
        return [task_lag]


class _KlagFamilies:
    """klag-exporter's families (its `MetricsRegistry.update_with_options`, partition
    granularity)."""

    def __init__(self) -> None:
        def fam(name: str, help_text: str) -> Family:
            return Family(name, "gauge", help_text)

        self.offset = fam("kafka_consumergroup_group_offset",
                          "Last committed offset for a consumer group partition")
        self.lag = fam("kafka_consumergroup_group_lag",
                       "Offset lag (high_watermark - committed) for a consumer group partition")
        self.lag_seconds = fam("kafka_consumergroup_group_lag_seconds",
                               "Time lag in seconds for a consumer group partition")
        self.lost = fam("kafka_consumergroup_group_messages_lost",
                        "Number of messages deleted by retention before consumer processed them")
        self.margin = fam("kafka_consumergroup_group_retention_margin",
                          "Offset distance between consumer position and deletion boundary "
                          "(committed_offset - low_watermark, negative means data loss)")
        self.ratio = fam("kafka_consumergroup_group_lag_retention_ratio",
                         "Percentage of retention window occupied by consumer lag "
                         "(0=caught up, 100=at boundary, >100=data loss)")
        self.max_lag = fam("kafka_consumergroup_group_max_lag",
                           "Maximum offset lag across all partitions for a consumer group")
        self.max_lag_seconds = fam("kafka_consumergroup_group_max_lag_seconds",
                                   "Maximum time lag in seconds across all partitions for a "
                                   "consumer group")
        self.sum_lag = fam("kafka_consumergroup_group_sum_lag",
                           "Sum of offset lag across all partitions for a consumer group")
        self.topic_sum_lag = fam("kafka_consumergroup_group_topic_sum_lag",
                                 "Sum of offset lag per topic for a consumer group")
        self.state = fam("kafka_consumergroup_group_state",
                         "State of the consumer group as an integer (0=Unknown, "
                         "1=PreparingRebalance, 2=CompletingRebalance, 3=Stable, 4=Dead, "
                         "5=Empty, 6=Assigning, 7=Reconciling)")
        self.latest = fam("kafka_partition_latest_offset",
                          "Latest (high watermark) offset for a partition")
        self.earliest = fam("kafka_partition_earliest_offset",
                            "Earliest (low watermark) offset for a partition")

    def group(self, cluster: str, group: GroupView, lags: list[PartitionLag]) -> None:
        max_lag, max_seconds, sum_lag = 0, 0.0, 0
        topic_sums: dict[str, int] = {}
        for pl in lags:
            owner = pl.owner
            labels = {"cluster_name": cluster, "group": pl.group_id, "topic": pl.topic,
                      "partition": str(pl.partition),
                      "member_host": owner.client_host if owner else "",
                      "consumer_id": owner.member_id if owner else "",
                      "client_id": owner.client_id if owner else ""}
            self.offset.add(pl.committed, **labels)
            self.lag.add(pl.lag, **labels)
            if pl.lag_seconds is not None:
                self.lag_seconds.add(pl.lag_seconds, **labels,
                                     compaction_detected=_bool(pl.compacted),
                                     data_loss_detected=_bool(pl.data_loss))
                max_seconds = max(max_seconds, pl.lag_seconds)
            short = {"cluster_name": cluster, "group": pl.group_id, "topic": pl.topic,
                     "partition": str(pl.partition)}
            self.lost.add(pl.messages_lost, **short)
            self.margin.add(pl.retention_margin, **short)
            self.ratio.add(pl.lag_retention_ratio, **short)
            max_lag = max(max_lag, pl.lag)
            sum_lag += pl.lag
            topic_sums[pl.topic] = topic_sums.get(pl.topic, 0) + pl.lag
        labels = {"cluster_name": cluster, "group": group.group_id}
        self.max_lag.add(max_lag, **labels)
        self.max_lag_seconds.add(max_seconds, **labels)
        self.sum_lag.add(sum_lag, **labels)
        self.state.add(KLAG_STATES.get(group.state, 0), **labels)
        for topic, total in sorted(topic_sums.items()):
            self.topic_sum_lag.add(total, **labels, topic=topic)

    def all(self) -> list[Family]:
        return [self.offset, self.lag, self.lag_seconds, self.lost, self.margin, self.ratio,
                self.max_lag, self.max_lag_seconds, self.sum_lag, self.topic_sum_lag,
                self.state, self.latest, self.earliest]


def _bool(value: bool) -> str:
    return "true" if value else "false"
