"""The coordinator runtime: every `__consumer_offsets` shard of the broker, and the entry
points API handlers reach through `ctx.groups` (a `GroupCaller`).

Mirrors Kafka's `CoordinatorRuntime` (coordinator-common): a request goes to its group's
shard (`partition_for`, as Kafka's `partitionFor`) and is answered by Kafka's
`activeContextOrThrow` rules (`shard_task`: LOAD_IN_PROGRESS while a shard replays,
NOT_COORDINATOR once it is unloaded or for no such partition). `unload` and `load` resign and
retake a shard (`scheduleUnloadOperation` / `scheduleLoadOperation`); shards are created on
first use, and at start-up those with a log load in the background while the listener
already serves. Which node may call a shard is the caller's concern (`GroupCaller`, with the
cluster's ownership map). `complete_transaction` writes a transaction's marker for the
transaction coordinator.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import Clock
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.shard import Shard
from groupcoord.server.coordinator_txn import EndTxnWrite
from groupcoord.server.shard_task import (
    OFFSETS_TOPIC,
    Operation,
    ShardState,
    ShardTask,
)
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker import Broker
    from groupcoord.server.group_caller import GroupCaller

__all__ = ["OFFSETS_TOPIC", "CoordinatorRuntime", "Operation", "ShardState"]

log = logging.getLogger("groupcoord.coordinator")
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}


class CoordinatorRuntime:
    """All shards; handlers reach it through `ctx.groups` (a `GroupCaller`)."""

    def __init__(self, broker: Broker, shard_factory: Callable[[int], Shard] | None = None
                 ) -> None:
        self.broker = broker
        self.clock: Clock = broker.clock
        cfg = broker.config
        self.num_partitions = cfg.offsets_partitions
        self.fsync_always = cfg.fsync == "always"
        self.cleanup_interval_ms = 600_000
        self.shard_factory = shard_factory or self._default_factory
        self.shards: dict[int, ShardTask] = {}
        # Partitions unloaded on request: not recreated by use until `load` (NOT_COORDINATOR).
        self.unloaded: set[int] = set()
        self.written: dict[int, bool] = {}
        self.loading = asyncio.Lock()
        self._tokens = itertools.count(1)
        self._op_context: Any = None
        self._image: Any = None
        self._image_version = 0

    def _default_factory(self, partition: int) -> Shard:
        from groupcoord.coordinator.config import GroupCoordinatorConfig
        from groupcoord.coordinator.ids import RandomIds
        from groupcoord.coordinator.shard import GroupCoordinatorShard

        cfg = self.broker.config
        # Group settings given as Kafka properties (`--group-config name=value`).
        config = GroupCoordinatorConfig.from_properties(
            cfg.extra, group_initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
            offsets_topic_num_partitions=cfg.offsets_partitions)
        return GroupCoordinatorShard(partition, config, RandomIds(os.urandom))

    def topics_image(self) -> Any:
        """The coordinator's view of the topics, rebuilt after every topic change."""
        if self._image is None:
            from groupcoord.coordinator.topics import TopicsImage

            # Versions stay monotonic across restarts (they are stored with resolved
            # regexes): wall-clock milliseconds, bumped past the previous version.
            self._image_version = max(self._image_version + 1, self.clock.now_ms())
            self._image = TopicsImage.of(
                [(t.name, t.topic_id, t.num_partitions) for t in self.broker.topics.all()
                 if not t.internal], self._image_version)
        return self._image

    def on_topics_changed(self) -> None:
        self._image = None
        image = self.topics_image()
        for task in self.shards.values():
            task.submit(lambda s, _c, n: s.on_topics_changed(image, n), None, None)

    def op_context(self, client_id: str, client_host: str, token: int) -> Any:
        if self._op_context is None:
            from groupcoord.coordinator.result import OpContext

            self._op_context = OpContext
        return self._op_context(client_id, client_host, token)

    async def start(self) -> None:
        """Register the internal topic; load the shards that already have a log."""
        topics = self.broker.topics
        topics.ensure_internal(OFFSETS_TOPIC, self.num_partitions, OFFSETS_TOPIC_CONFIGS)
        topics.listeners.append(self.on_topics_changed)
        for partition in range(self.num_partitions):
            if self.broker.logs.get(OFFSETS_TOPIC, partition) is not None:
                self.shard(partition)

    async def stop(self) -> None:
        tasks = [s.task for s in self.shards.values()]
        for shard in self.shards.values():
            shard._fail_all()
            shard.task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.shards.clear()

    def shard(self, partition: int) -> ShardTask:
        """The shard task, created (and its partition loaded) on first use."""
        task = self.shards.get(partition)
        if task is None:
            task = self.shards[partition] = ShardTask(self, partition)
        return task

    def active_shard(self, partition: int) -> ShardTask:
        """The shard a request may use; else the error Kafka's runtime answers
        (NOT_COORDINATOR when unloaded or not a partition, LOAD_IN_PROGRESS while loading)."""
        if not 0 <= partition < self.num_partitions or partition in self.unloaded:
            raise ApiError(ErrorCode.NOT_COORDINATOR)
        task = self.shard(partition)
        task.check_active()
        return task

    def unload(self, partition: int) -> None:
        """Resign the shard (Kafka's `scheduleUnloadOperation`): NOT_COORDINATOR from now on."""
        self.unloaded.add(partition)
        task = self.shards.pop(partition, None)
        if task is not None:
            task.unload()
            log.info("unloaded shard %d", partition)

    def load(self, partition: int) -> ShardTask:
        """Take the shard (Kafka's `scheduleLoadOperation`): replay its log in the
        background, COORDINATOR_LOAD_IN_PROGRESS until the replay ends."""
        self.unloaded.discard(partition)
        return self.shard(partition)

    def loading_partitions(self) -> list[int]:
        return [p for p, t in self.shards.items() if t.state is ShardState.LOADING]

    def flush_shard(self, partition: int) -> None:
        plog = self.broker.logs.get(OFFSETS_TOPIC, partition)
        if plog is not None:
            plog.flush()

    def log_end_offset(self, partition: int) -> int:
        plog = self.broker.logs.get(OFFSETS_TOPIC, partition)
        return 0 if plog is None else plog.log_end_offset

    def discard_from(self, partition: int, offset: int) -> None:
        """Remove the shard's records at and after `offset` (never acknowledged)."""
        plog = self.broker.logs.get(OFFSETS_TOPIC, partition)
        if plog is not None and plog.log_end_offset > offset:
            log.error("shard %d: removing unacknowledged records from offset %d to %d",
                      partition, offset, plog.log_end_offset)
            plog.truncate_to(offset)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    async def call_shard(self, partition: int, op: Operation, client_id: str = "",
                         client_host: str = "") -> Any:
        task = self.active_shard(partition)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ctx = self.op_context(client_id or "", client_host, next(self._tokens))
        task.submit(op, ctx, fut)
        return await fut

    async def call(self, group_id: str, op: Operation, client_id: str = "",
                   client_host: str = "") -> Any:
        return await self.call_shard(self.partition_for(group_id), op, client_id, client_host)

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
        NOT_COORDINATOR for a partition this broker does not host, COORDINATOR_NOT_AVAILABLE
        if the shard failed, INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED for
        a fenced writer, 0 once the marker is written."""
        end = EndTxnWrite(producer_id, producer_epoch, coordinator_epoch, commit)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self.active_shard(partition).submit(lambda _s, _c, _n: end, None, fut)
            return int(await fut)
        except ApiError as exc:
            return int(exc.code)

    def bind(self, client_id: str | None, client_host: str, node_id: int = 0) -> GroupCaller:
        from groupcoord.server.group_caller import GroupCaller

        return GroupCaller(self, client_id or "", client_host, node_id)
