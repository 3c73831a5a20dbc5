"""The group coordinator runtime: every `__consumer_offsets` shard of the broker on the
generic `ShardRuntime`, and the entry points API handlers reach through `ctx.groups` (a
`GroupCaller`).

Mirrors Kafka's `GroupCoordinatorService` over its `CoordinatorRuntime`: a request goes to
its group's shard (`partition_for`, as Kafka's `partitionFor`); load, unload and the
errors of a shard that is not active are the generic runtime's. A new shard first sees the
broker's topics image. Which node may call a shard is the caller's concern (`GroupCaller`,
with the cluster's ownership map). `complete_transaction` writes a transaction's marker for
the transaction coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError, marker_error
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.stats import CoordinatorStats
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.server.group_caller import GroupCaller
from groupcoord.server.runtime.append_errors import (
    AppendFailed,
    coordinator_append_error,
)
from groupcoord.server.runtime.clock import sleep_ms
from groupcoord.server.runtime.coordinator_txn import EndTxnWrite
from groupcoord.server.runtime.shard_lifecycle import LOAD_SLICE_S, ShardState
from groupcoord.server.runtime.shard_loader import (
    SNAPSHOT_AFTER_RECORDS,
    SNAPSHOT_INTERVAL_S,
    take_snapshot,
)
from groupcoord.server.runtime.shard_runtime import ShardRuntime
from groupcoord.server.runtime.shard_task import Operation

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost


__all__ = ["OFFSETS_TOPIC", "CoordinatorRuntime", "Operation", "ShardState"]

log = logging.getLogger("groupcoord.coordinator")
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
# Group ids whose partition `partition_for` keeps.
PARTITION_CACHE_SIZE = 100_000
# (client id, host, node) triples whose `GroupCaller` `bind` keeps.
CALLER_CACHE_SIZE = 10_000


class CoordinatorRuntime(ShardRuntime):
    """All group shards; handlers reach it through `ctx.groups` (a `GroupCaller`)."""

    def __init__(self, broker: CoordinatorHost, shard_factory: Callable[[int], Shard] | None = None
                 ) -> None:
        super().__init__(broker, OFFSETS_TOPIC, broker.config.offsets_partitions,
                         OFFSETS_TOPIC_CONFIGS, shard_factory or self._default_factory)
        self.append_error = coordinator_append_error
        self._image: TopicsImage | None = None
        self._image_version = 0
        self._snapshot_task: asyncio.Task[None] | None = None
        self._partition_of: dict[str, int] = {}
        self._callers: dict[tuple[str, str, int], GroupCaller] = {}
        # Counts every shard adds to, kept across reloads (`/metrics`).
        self.stats = CoordinatorStats()

    def _default_factory(self, partition: int) -> Shard:
        from groupcoord.coordinator.config import GroupCoordinatorConfig
        from groupcoord.coordinator.ids import RandomIds
        from groupcoord.coordinator.shard import GroupCoordinatorShard

        cfg = self.broker.config
        # Group settings given as Kafka properties (`--group-config name=value`).
        config = GroupCoordinatorConfig.from_properties(
            cfg.extra, group_initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
            offsets_topic_num_partitions=cfg.offsets_partitions)
        return GroupCoordinatorShard(partition, config, RandomIds(os.urandom), self.stats)

    def new_shard(self, partition: int) -> Shard:
        shard = self.shard_factory(partition)
        shard.on_topics_changed(self.topics_image(), self.clock.now_ms())
        return shard

    def topics_image(self) -> TopicsImage:
        """The coordinator's view of the topics, rebuilt after every topic change; internal
        topics included, as in Kafka's metadata image (a subscription or regex naming
        `__consumer_offsets` is assigned its partitions)."""
        if self._image is None:
            # Versions stay monotonic across restarts (they are stored with resolved
            # regexes): wall-clock milliseconds, bumped past the previous version.
            self._image_version = max(self._image_version + 1, self.clock.now_ms())
            self._image = TopicsImage.of(
                [(t.name, t.topic_id, t.num_partitions) for t in self.broker.topics.all()],
                self._image_version)
        return self._image

    def on_topics_changed(self) -> None:
        self._image = None
        image = self.topics_image()
        for task in self.shards.values():
            task.submit(lambda s, _c, n: s.on_topics_changed(image, n), None, None)

    async def start(self) -> None:
        """Register the internal topic; load the shards that already have a log."""
        await super().start()
        self.broker.topics.listeners.append(self.on_topics_changed)
        self._snapshot_task = asyncio.get_running_loop().create_task(self._snapshot_loop())

    async def stop(self) -> None:
        if self._snapshot_task is not None:
            self._snapshot_task.cancel()
            await asyncio.gather(self._snapshot_task, return_exceptions=True)
        loaded = [p for p, t in self.shards.items() if t.state is ShardState.ACTIVE]
        await super().stop()
        # A clean shutdown leaves every loaded shard's snapshot at its log end.
        await self.snapshot_shards(1, None, loaded)

    async def _snapshot_loop(self) -> None:
        while True:
            await sleep_ms(self.clock, int(SNAPSHOT_INTERVAL_S * 1000))
            await self.snapshot_shards(SNAPSHOT_AFTER_RECORDS, LOAD_SLICE_S)

    async def snapshot_shards(self, min_records: int, slice_s: float | None,
                              partitions: list[int] | None = None) -> None:
        """Snapshot each loaded shard (or each of `partitions`) whose log grew by
        `min_records` since its snapshot (`shard_loader.take_snapshot`); one failing shard
        does not stop the others."""
        if partitions is None:
            partitions = [p for p, t in self.shards.items() if t.state is ShardState.ACTIVE]
        for partition in partitions:
            try:
                await take_snapshot(self.broker.logs.get(OFFSETS_TOPIC, partition), partition,
                                    min_records, slice_s)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("snapshot of shard %d failed", partition)

    def partition_for(self, group_id: str) -> int:
        # Java's String.hashCode in Python is a loop over the id's characters: computed
        # once per group id (the cache starts over when it has grown large).
        partitions = self._partition_of
        partition = partitions.get(group_id)
        if partition is None:
            if len(partitions) >= PARTITION_CACHE_SIZE:
                partitions.clear()
            partition = partitions[group_id] = partition_for(group_id, self.num_partitions)
        return partition

    async def call(self, group_id: str, op: Operation, client_id: str = "",
                   client_host: str = "") -> Any:
        return await self.call_shard(self.partition_for(group_id), op, client_id, client_host)

    def submit(self, group_id: str, op: Operation, client_id: str = "",
               client_host: str = "") -> asyncio.Future[Any]:
        """`call` without a coroutine: the future of the queued operation."""
        return self.submit_shard(self.partition_for(group_id), op, client_id, client_host)

    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Operation, client_id: str = "",
                                 client_host: str = "") -> Any:
        """Like `call`, but the records go in a transactional batch of the producer."""
        task = self.active_shard(self.partition_for(group_id))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ctx = self.op_context(client_id or "", client_host, next(self._tokens))
        task.submit(op, ctx, fut, (producer_id, producer_epoch))
        return await fut

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   coordinator_epoch: int, commit: bool) -> int:
        """Write the COMMIT (`commit`) or ABORT marker of `producer_id` to
        `__consumer_offsets-<partition>` and replay it (Kafka's
        `GroupCoordinatorService.completeTransaction`); returns a Kafka error code:
        NOT_COORDINATOR for a partition this broker does not host, the log's error if the
        marker's append failed (`apis.errors.marker_error`), INVALID_PRODUCER_EPOCH /
        TRANSACTION_COORDINATOR_FENCED for a fenced writer, 0 once the marker is written."""
        end = EndTxnWrite(producer_id, producer_epoch, coordinator_epoch, commit)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self.active_shard(partition).submit(lambda _s, _c, _n: end, None, fut)
            return int(await fut)
        except AppendFailed as exc:
            return marker_error(exc.log_code)
        except ApiError as exc:
            return int(exc.code)

    def bind(self, client_id: str | None, client_host: str, node_id: int = 0) -> GroupCaller:
        """The caller for a request's client (every group request asks): one per client id,
        host and node, kept (the cache starts over when it has grown large)."""
        key = (client_id or "", client_host, node_id)
        caller = self._callers.get(key)
        if caller is None:
            if len(self._callers) >= CALLER_CACHE_SIZE:
                self._callers.clear()
            caller = self._callers[key] = GroupCaller(self, *key)
        return caller
