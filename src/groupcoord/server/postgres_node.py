"""A broker node whose partitions are kept in PostgreSQL (`groupcoord serve --storage URL`).

The node's partition directory is a `storage.postgres_manager.PostgresLogManager`: the
broker opens, appends to and reads its partitions as it does on a data dir, its metadata
documents and producer ids are PostgreSQL's too, and the data dir keeps this node's copies of
the logs and its caches (shard snapshots), its ACLs and SCRAM credentials, and a copy of the
cluster id. This service keeps the node's partition leases: a pass
every `broker.heartbeat.interval.ms` renews them (PostgreSQL's work on a worker thread, with a
session of its own) and takes the lapsed leases of partitions it follows; the broker then
follows each change, as Kafka's brokers do on a leadership change:

- a `__consumer_offsets`, `__transaction_state` or `__share_group_state` partition this
  node leads is loaded (its shard replayed from the caught-up copy,
  COORDINATOR_LOAD_IN_PROGRESS meanwhile); one it does not lead is unloaded, so its groups,
  transactional ids and share-partition states are answered NOT_COORDINATOR here rather than
  from a stale shard, and a write could not land anyway;
- a data partition newly led forgets its producer state, rebuilt from the caught-up copy
  on first use.

Without a live lease a node writes nothing: only the lease's epoch fences, so a late pass
(a paused process, a slow PostgreSQL) can never append over another node.

The live nodes share the partitions (the manager's placement is `server.cluster_map`'s
spread, over the live nodes of the registry: each node leads its preferred partitions). After each pass the node's
`server.lease_cluster_map` follows the registry, so Metadata, FindCoordinator and
DescribeCluster send clients to the leaders; the topics other nodes created (the catalog the
pass read) become known here, and every partition of every known topic is opened, so each
node has a copy of each, following or leading it. What one node asks of another (a
transaction's markers on the partitions another leads) goes over `peers`, this node's
inter-broker connections to the live nodes the map names. The pass also re-reads the group
configs document (`server.share_configs`): one set through another node reaches this
node's coordinators.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from groupcoord.server.cluster_map import preferred_node
from groupcoord.server.inter_broker import InterBrokerClient
from groupcoord.server.lease_cluster_map import LeaseClusterMap
from groupcoord.server.share_configs import FILE_NAME as GROUP_CONFIGS_DOCUMENT
from groupcoord.storage.config import StorageError
from groupcoord.storage.postgres_catalog import read_document
from groupcoord.storage.postgres_manager import LeasePass, LeasePlan, PostgresLogManager
from groupcoord.storage.postgres_session import PostgresSession

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import Clock
    from groupcoord.server.config import BrokerConfig, Listener
    from groupcoord.server.producer_state import ProducerStateManager
    from groupcoord.server.share_configs import GroupConfigStore
    from groupcoord.server.topics import TopicStore

log = logging.getLogger("groupcoord.cluster")


class PostgresNode:
    """The node's partitions in PostgreSQL and the passes that keep their leases."""

    def __init__(self, cfg: BrokerConfig, coordinator_partitions: dict[str, int],
                 advertised: dict[str, Listener], clock: Clock) -> None:
        """Once the listeners are bound: `advertised` are their endpoints by listener name,
        what this node registers with and other nodes tell clients."""
        assert cfg.storage is not None
        self._conninfo = cfg.storage
        self.partitions = PostgresLogManager(
            cfg.data_dir, PostgresSession.for_conninfo(cfg.storage), node_id=cfg.node_id,
            lease_ms=cfg.broker_session_timeout_ms, io=cfg.file_io, placement=preferred_node)
        self.cluster_map = LeaseClusterMap(self.partitions, coordinator_partitions, advertised)
        self.partitions.endpoints = self.cluster_map.own_endpoints()
        # To the other nodes on the first listener's name (Kafka's inter.broker.listener.name
        # defaults to the first listener).
        self.peers = InterBrokerClient(cfg.node_id, self.cluster_map, cfg.listeners[0].name,
                                       clock)
        self._interval_s = cfg.broker_heartbeat_interval_ms / 1000.0
        self._task: asyncio.Task[None] | None = None

    def start(self, topics: TopicStore, coordinators: dict[str, CoordinatorShards],
              producers: ProducerStateManager, group_configs: GroupConfigStore) -> None:
        """Once the runtimes run: unload the coordinator shards this node follows (by
        internal topic), then keep the leases."""
        broker_side = _LeadershipFollower(coordinators, producers, group_configs)
        self.cluster_map.follow_registry()
        _follow_catalog(self.partitions, topics)
        followed = [tp for tp, copy in self.partitions.leased.items() if copy.leader is None]
        broker_side.follow(LeasePass(lost=followed))
        self._task = asyncio.get_running_loop().create_task(
            self._keep_leases(topics, broker_side))

    async def stop(self) -> None:
        """Stop the passes and close the connections to the other nodes; the leases are
        released when the partitions close."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.peers.close()

    async def _keep_leases(self, topics: TopicStore, broker_side: _LeadershipFollower) -> None:
        """A pass at once (the node has just joined), then one every heartbeat interval."""
        session = PostgresSession.for_conninfo(self._conninfo)
        try:
            while True:
                await self._lease_pass(session, topics, broker_side)
                await asyncio.sleep(self._interval_s)
        finally:
            session.close()

    async def _lease_pass(self, session: PostgresSession, topics: TopicStore,
                          broker_side: _LeadershipFollower) -> None:
        plan = self.partitions.lease_plan()
        config_writes = broker_side.group_configs.writes
        try:
            result, group_configs = await asyncio.to_thread(self._run_pass, session, plan)
            self.partitions.apply(result, plan)
        except StorageError as exc:
            # The leases run on; past them another node may take over, and this node's
            # writes are fenced.
            log.warning("lease pass failed: %s", exc)
            return
        if result.lost or result.taken:
            log.info("leases lost: %s; taken: %s", result.lost, sorted(result.taken))
        # A copy that stepped down between passes (its write fenced) is among the followed
        # ones: the broker follows it as a lost lease too.
        stepped_down = [tp for tp in plan.followed if tp not in result.taken]
        broker_side.follow(LeasePass(result.lost + result.released + stepped_down,
                                     result.taken))
        self.cluster_map.follow_registry()
        _follow_catalog(self.partitions, topics)
        broker_side.group_configs.follow(group_configs, config_writes)

    def _run_pass(self, session: PostgresSession, plan: LeasePlan
                  ) -> tuple[LeasePass, bytes | None]:
        """On the worker thread: the lease pass, then the group configs as stored."""
        return (self.partitions.run_lease_pass(session, plan),
                read_document(session, GROUP_CONFIGS_DOCUMENT))


def _follow_catalog(partitions: PostgresLogManager, topics: TopicStore) -> None:
    """Know the topics of the catalog (created on other nodes too) and open every partition
    of every known topic not open yet (lazily created internal ones included): each is led
    here if it is this node's share and free, else followed."""
    for name, found in partitions.catalog.items():
        if topics.adopt(name, found.topic_id, found.partitions):
            log.info("topic %s (%d partitions) known from the catalog", name, found.partitions)
    for topic in topics.all():
        for partition in range(topic.num_partitions):
            if partitions.get(topic.name, partition) is not None:
                continue
            try:
                topics.log(topic.name, partition)
            except StorageError as exc:
                log.warning("%s-%d: not opened yet: %s", topic.name, partition, exc)
                return


class CoordinatorShards(Protocol):
    """The shards of one internal topic (`ShardRuntime`, `TransactionRuntime`)."""

    def unload(self, partition: int) -> None: ...
    def load(self, partition: int) -> object: ...


class _LeadershipFollower:
    """The broker's part of a pass: a leadership change (see the module docstring), and
    the group configs as stored."""

    def __init__(self, coordinators: dict[str, CoordinatorShards],
                 producers: ProducerStateManager, group_configs: GroupConfigStore) -> None:
        self._coordinators = coordinators
        self._producers = producers
        self.group_configs = group_configs

    def follow(self, changes: LeasePass) -> None:
        for topic, partition in changes.lost:
            shards = self._coordinators.get(topic)
            if shards is not None:
                shards.unload(partition)
        for topic, partition in sorted(changes.taken):
            shards = self._coordinators.get(topic)
            if shards is not None:
                shards.unload(partition)
                shards.load(partition)
            else:
                self._producers.drop_partition(topic, partition)
