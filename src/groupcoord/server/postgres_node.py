"""A broker node whose partitions are kept in PostgreSQL (`groupcoord serve --storage URL`).

The node's partition directory is a `storage.postgres_manager.PostgresLogManager`: the
broker opens, appends to and reads its partitions as it does on a data dir, its metadata
documents and producer ids are PostgreSQL's too, and the data dir keeps this node's copies of
the logs and its caches (shard snapshots), its ACLs and SCRAM credentials, and a copy of the
cluster id. This service keeps the node's partition leases: a pass
every `broker.heartbeat.interval.ms` renews them (PostgreSQL's work on a worker thread, with a
session of its own) and takes the lapsed leases of partitions it follows; the broker then
follows each change, as Kafka's brokers do on a leadership change:

- a `__consumer_offsets` partition this node leads is loaded (its shard replayed from the
  caught-up copy); one it does not lead is unloaded, so its groups are answered
  NOT_COORDINATOR here rather than from a stale shard, and a write could not land anyway;
- a data partition newly led forgets its producer state, rebuilt from the caught-up copy
  on first use.

Without a live lease a node writes nothing: only the lease's epoch fences, so a late pass
(a paused process, a slow PostgreSQL) can never append over another node.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.storage.config import StorageError
from groupcoord.storage.postgres_manager import LeasePass, PostgresLogManager
from groupcoord.storage.postgres_session import PostgresSession

if TYPE_CHECKING:
    from groupcoord.server.config import BrokerConfig
    from groupcoord.server.producer_state import ProducerStateManager
    from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime

log = logging.getLogger("groupcoord.cluster")


class PostgresNode:
    """The node's partitions in PostgreSQL and the passes that keep their leases."""

    def __init__(self, cfg: BrokerConfig) -> None:
        assert cfg.storage is not None
        self._conninfo = cfg.storage
        self.partitions = PostgresLogManager(
            cfg.data_dir, PostgresSession.for_conninfo(cfg.storage), node_id=cfg.node_id,
            lease_ms=cfg.broker_session_timeout_ms, io=cfg.file_io)
        self._interval_s = cfg.broker_heartbeat_interval_ms / 1000.0
        self._task: asyncio.Task[None] | None = None

    def start(self, groups: CoordinatorRuntime, producers: ProducerStateManager) -> None:
        """Once the runtimes run: unload the offsets shards this node follows, then keep
        the leases."""
        broker_side = _LeadershipFollower(groups, producers)
        followed = [tp for tp, copy in self.partitions.leased.items() if copy.leader is None]
        broker_side.follow(LeasePass(lost=followed))
        self._task = asyncio.get_running_loop().create_task(self._keep_leases(broker_side))

    async def stop(self) -> None:
        """Stop the passes; the leases are released when the partitions close."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _keep_leases(self, broker_side: _LeadershipFollower) -> None:
        session = PostgresSession.for_conninfo(self._conninfo)
        try:
            while True:
                await asyncio.sleep(self._interval_s)
                plan = self.partitions.lease_plan()
                try:
                    result = await asyncio.to_thread(self.partitions.run_lease_pass, session,
                                                     plan)
                    self.partitions.apply(result, plan)
                except StorageError as exc:
                    # The leases run on; past them another node may take over, and this
                    # node's writes are fenced.
                    log.warning("lease pass failed: %s", exc)
                    continue
                if result.lost or result.taken:
                    log.info("leases lost: %s; taken: %s", result.lost, sorted(result.taken))
                # A copy that stepped down between passes (its write fenced) is among the
                # followed ones: the broker follows it as a lost lease too.
                stepped_down = [tp for tp in plan.followed if tp not in result.taken]
                broker_side.follow(LeasePass(result.lost + stepped_down, result.taken))
        finally:
            session.close()


class _LeadershipFollower:
    """The broker's part of a leadership change (see the module docstring)."""

    def __init__(self, groups: CoordinatorRuntime, producers: ProducerStateManager) -> None:
        self._groups = groups
        self._producers = producers

    def follow(self, changes: LeasePass) -> None:
        for topic, partition in changes.lost:
            if topic == OFFSETS_TOPIC:
                self._groups.unload(partition)
        for topic, partition in sorted(changes.taken):
            if topic == OFFSETS_TOPIC:
                self._groups.unload(partition)
                self._groups.load(partition)
            else:
                self._producers.drop_partition(topic, partition)
