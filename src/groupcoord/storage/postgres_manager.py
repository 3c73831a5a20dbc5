"""The partitions of a cluster kept in PostgreSQL, as one node serves them: the
``LogManager`` of a node started with ``--storage``.

Which partitions exist, and their topic ids, come from the cluster's catalog
(``storage.postgres_catalog``), not from the data dir: ``load_all`` opens every partition of
the catalog, removes the copies of topics deleted meanwhile, and each partition's log is a
``storage.leased_log.LeasedPartitionLog``, a copy in the data dir of the log PostgreSQL
holds. Opening a partition takes its leader lease unless another node's lease is live (or,
with a placement, the partition is another live node's share); the node then leads it (appends, truncations, DeleteRecords and retention go to PostgreSQL at
the lease's epoch) or follows (its copy answers reads as of the last catch-up; writes are
refused with ``NotPartitionLeader``).

Leases are kept by passes every ``broker.heartbeat.interval.ms`` (Kafka's broker heartbeat):
``lease_plan`` on the loop, ``run_lease_pass`` on a worker thread with its own session (one
transaction renewing every held lease, then an attempt at each lapsed one), ``apply`` on the
loop again (steps down where the lease was lost, catches up and leads where one was taken).
A lease runs ``broker.session.timeout.ms`` past its last renewal (Kafka's broker session),
so another node takes over that long after this one stopped renewing; only the epoch
fences, so a late renewal or a paused node can never append over the next leader.
A clean ``close`` releases the held leases, so another node may take them at once.

Several live nodes share the partitions (given a ``Placement``): each node registers in
the node registry (``storage.postgres_registry``) with its advertised endpoints once its
partitions are open, and its passes renew that liveness lease with the partition leases (one
expiry for both). A partition belongs to its preferred node among the live ones (the
``placement``): a node takes a lease only in its share (at opening, or in a pass once it is
free or lapsed: a dead node's), and releases a held one that is another live node's share
now, which takes it at its next pass. Each pass also reads the registry, the live leases and
the topic catalog, so the node knows who leads what (``leader``), which nodes live
(``live_nodes``) and the topics other nodes created (``catalog``). Without a placement a
node takes every lease it can.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.storage.config import LeaseHeld, LogConfig, RecoveryReport, StorageError
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.leased_log import LeasedPartitionLog
from groupcoord.storage.manager import LogManager, TopicPartition, parse_partition_dir
from groupcoord.storage.postgres_catalog import (
    CatalogTopic,
    PostgresDocuments,
    delete_topic,
    list_topics,
    register_partition,
)
from groupcoord.storage.postgres_registry import (
    ClusterView,
    LiveNode,
    NodeEndpoint,
    PartitionLeader,
    cluster_view,
    heartbeat_node,
    leave_cluster,
)
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import (
    PostgresPartitionStore,
    acquire_leadership,
    ensure_schema,
    fence_previous_process,
    lapsed_leases,
    release_leadership,
    renew_leases,
)
from groupcoord.storage.postgres_writers import PostgresWriters

log = logging.getLogger(__name__)

# Kafka's broker.session.timeout.ms and broker.heartbeat.interval.ms defaults.
DEFAULT_LEASE_MS = 9000
DEFAULT_LEASE_RENEW_INTERVAL_MS = 2000
# Where a partition's leadership belongs: (topic, partition, live node ids ascending) -> the
# preferred node among them.
Placement = Callable[[str, int, Sequence[int]], int]
# The epoch of a store that only reads: below every epoch a partition's row holds (0 before
# anyone led), so any write through it would be fenced.
READ_ONLY_EPOCH = -1


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class LeasePlan:
    """The leases a pass works on, taken on the loop: held ones (partition -> epoch) to
    renew, and the followed partitions to try to take."""

    held: dict[TopicPartition, int]
    followed: list[TopicPartition]


@dataclass
class LeasePass:
    """What a pass found: leases lost (another node took them), leases released (another
    live node's share now) and leases taken (epoch); with a placement, the cluster as the
    pass read it and the topic catalog."""

    lost: list[TopicPartition] = field(default_factory=list)
    taken: dict[TopicPartition, int] = field(default_factory=dict)
    released: list[TopicPartition] = field(default_factory=list)
    view: ClusterView | None = None
    catalog: dict[str, CatalogTopic] | None = None


class PostgresLogManager(LogManager):
    """A node's view of the cluster's partitions in PostgreSQL; their copies in
    ``data_dir``. Owns ``session`` (the loop's) and ``writers`` (the appends' threads, each
    with a session like it), closed with the manager."""

    def __init__(self, data_dir: str, session: PostgresSession, *, node_id: int,
                 lease_ms: int = DEFAULT_LEASE_MS, default_config: LogConfig | None = None,
                 topic_configs: dict[str, dict[str, Any]] | None = None,
                 io: FileIO = OS_FILE_IO, clock_ms: Callable[[], int] = wall_clock_ms,
                 placement: Placement | None = None) -> None:
        super().__init__(data_dir, default_config, topic_configs, io)
        self.session = session
        # Where the copies' appends commit, off the loop (``append_async``).
        self.writers = PostgresWriters(session.sibling)
        self.node_id = node_id
        self.lease_ms = lease_ms
        self._clock_ms = clock_ms
        self.placement = placement
        self.documents = PostgresDocuments(session)
        # The logs of `logs`, typed as the copies they are (each leading or following).
        self.leased: dict[TopicPartition, LeasedPartitionLog] = {}
        self._catalog_ids: dict[str, bytes] = {}
        # This node's advertised endpoints, registered with its liveness (`advertise`).
        self.endpoints: tuple[NodeEndpoint, ...] = ()
        # The cluster and the catalog as the last pass (or the start) read them.
        self.view = ClusterView((), {})
        self.catalog: dict[str, CatalogTopic] = {}

    # -- opening ---------------------------------------------------------------------------

    def load_all(self, now_ms: int | None = None) -> list[RecoveryReport]:
        """Open every partition of the catalog (its copy recovered, then caught up), first
        removing the copies of partitions the catalog no longer has."""
        ensure_schema(self.session)
        if self.placement is not None:
            self._fence_previous_process()
        catalog = self.catalog = list_topics(self.session)
        self._catalog_ids = {t.name: t.topic_id for t in catalog.values()}
        wanted = {(t.name, p) for t in catalog.values() for p in range(t.partitions)}
        for name in self.io.listdir(self.data_dir):
            tp = parse_partition_dir(name)
            full = os.path.join(self.data_dir, name)
            if tp is not None and tp not in wanted and self.io.isdir(full):
                log.info("removing the copy of %s-%d: the topic is gone", *tp)
                self.io.rmtree(full)
        for topic, partition in wanted:
            self.io.makedirs(self._dir(topic, partition))
        reports = super().load_all(now_ms)
        if self.placement is not None:
            self.join()
        return reports

    def get_or_create(self, topic: str, partition: int, topic_id: bytes | None = None,
                      config_overrides: dict[str, Any] | None = None) -> LeasedPartitionLog:
        """The partition's copy; a new partition is entered in the catalog first (under the
        id the catalog already has for its topic, if any)."""
        if (topic, partition) not in self.leased:
            proposed = topic_id or self.topic_ids.get(topic) or uuid.uuid4().bytes
            self._catalog_ids[topic] = register_partition(self.session, topic, partition,
                                                          proposed)
        super().get_or_create(topic, partition, self._catalog_ids.get(topic, topic_id),
                              config_overrides)
        return self.leased[(topic, partition)]

    def _fence_previous_process(self) -> None:
        """Before opening: fence what a previous process of this node id still leads (its
        leases freed with their epochs bumped, so that process can append nothing more and
        they go by the shares), and read the live nodes the shares are computed over."""
        fence_previous_process(self.session, self.node_id)
        self.view = cluster_view(self.session, self._clock_ms())

    def join(self) -> None:
        """Register as live (the partitions opened): from now on the other nodes count this
        one in the shares, and release to it what is its share. Renewed by every pass."""
        heartbeat_node(self.session, self.node_id, self.endpoints,
                       self._clock_ms() + self.lease_ms)

    def _order(self, view: ClusterView) -> list[int]:
        """The live node ids, ascending, this node among them."""
        return sorted({*view.live_ids, self.node_id})

    def _my_share(self, tp: TopicPartition, order: list[int]) -> bool:
        return self.placement is None or self.placement(*tp, order) == self.node_id

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        """The partition's leader and epoch: this node while its copy leads, else the holder
        of the live lease the last pass read; None while nobody leads."""
        copy = self.leased.get(tp)
        if copy is not None and copy.leader is not None:
            return PartitionLeader(self.node_id, copy.leader.leader_epoch)
        found = self.view.leaders.get(tp)
        return None if found is None or found.node_id == self.node_id else found

    def live_nodes(self) -> tuple[LiveNode, ...]:
        """The live nodes as the last pass read them, this one always among them."""
        others = tuple(node for node in self.view.live if node.node_id != self.node_id)
        return tuple(sorted((*others, LiveNode(self.node_id, self.endpoints)),
                            key=lambda node: node.node_id))

    def _open(self, path: str, topic: str, partition: int, *, topic_id: bytes | None = None,
              log_start_offset: int = 0, recovery_point: int | None = None,
              now_ms: int | None = None, clean_shutdown: bool = False) -> LeasedPartitionLog:
        """The partition's copy in ``path``, recovered, then led (the lease taken, the copy
        caught up) or followed (caught up) while another node's lease is live."""
        config = self.config_for(topic)
        copy = LeasedPartitionLog.open(
            path, config, log_start_offset=log_start_offset,
            recovery_point=recovery_point, now_ms=now_ms,
            topic_id=topic_id or self._catalog_ids.get(topic), io=self.io,
            clean_shutdown=clean_shutdown)
        try:
            copy.attach(PostgresPartitionStore(self.session, topic, partition,
                                               leader_epoch=READ_ONLY_EPOCH, config=config),
                        self.writers)
            epoch: int | None = None
            # Another live node's share is left to it (it takes it once free).
            if self._my_share((topic, partition), self._order(self.view)):
                try:
                    epoch = acquire_leadership(self.session, topic, partition, self.node_id,
                                               self.lease_ms, self._clock_ms())
                except LeaseHeld as held:
                    log.info("%s-%d: following node %d (epoch %d)", topic, partition,
                             held.holder_node_id, held.epoch)
            if epoch is None:
                copy.catch_up()
            else:
                copy.lead(self._leader_store(topic, partition, epoch, config))
        except BaseException:
            copy.close()
            raise
        self.leased[(topic, partition)] = copy
        return copy

    def _leader_store(self, topic: str, partition: int, epoch: int,
                      config: LogConfig) -> PostgresPartitionStore:
        return PostgresPartitionStore(self.session, topic, partition, leader_epoch=epoch,
                                      config=config)

    # -- changes ---------------------------------------------------------------------------

    def delete_topic(self, topic: str) -> int:
        """Remove the topic from the cluster (catalog and batches), then its copies here."""
        delete_topic(self.session, topic)
        for tp in [tp for tp in self.leased if tp[0] == topic]:
            del self.leased[tp]
        self._catalog_ids.pop(topic, None)
        return super().delete_topic(topic)

    def close(self) -> None:
        """Finish the appends under way, release every held lease (another node need not
        wait for it to lapse), close the copies and the sessions."""
        self.writers.close()
        for (topic, partition), copy in self.leased.items():
            if copy.leader is None:
                continue
            try:
                release_leadership(self.session, topic, partition, copy.leader.leader_epoch)
            except StorageError as exc:
                log.warning("%s-%d: the lease stays until it lapses: %s", topic, partition, exc)
        if self.placement is not None:
            try:
                leave_cluster(self.session, self.node_id)
            except StorageError as exc:
                log.warning("node %d stays live until its lease lapses: %s", self.node_id, exc)
        self.leased.clear()
        super().close()
        self.session.close()

    # -- lease passes ----------------------------------------------------------------------

    def lease_plan(self) -> LeasePlan:
        """On the loop: the held leases and followed partitions, as they are now."""
        held: dict[TopicPartition, int] = {}
        followed: list[TopicPartition] = []
        for tp, copy in self.leased.items():
            if copy.leader is not None:
                held[tp] = copy.leader.leader_epoch
            else:
                followed.append(tp)
        return LeasePlan(held, followed)

    def run_lease_pass(self, session: PostgresSession, plan: LeasePlan) -> LeasePass:
        """On a worker thread with its own ``session``: renew the held leases, try to take
        the lapsed ones among the followed partitions. PostgreSQL only; ``apply`` the result
        on the loop. ``StorageUnavailable`` if PostgreSQL cannot be reached."""
        now = self._clock_ms()
        if self.placement is not None:
            # One expiry for the node and its partitions: it stops being live when they lapse.
            heartbeat_node(session, self.node_id, self.endpoints, now + self.lease_ms)
        renewed = renew_leases(session, plan.held, self.lease_ms, now)
        result = LeasePass(lost=[tp for tp in plan.held if tp not in renewed])
        followed = plan.followed
        if self.placement is not None:
            result.view = cluster_view(session, now)
            result.catalog = list_topics(session)
            order = self._order(result.view)
            for tp in sorted(renewed):
                if not self._my_share(tp, order):
                    release_leadership(session, *tp, plan.held[tp])
                    result.released.append(tp)
            followed = [tp for tp in followed if self._my_share(tp, order)]
        for topic, partition in lapsed_leases(session, followed, self.node_id, now):
            try:
                result.taken[(topic, partition)] = acquire_leadership(
                    session, topic, partition, self.node_id, self.lease_ms, now)
            except LeaseHeld:
                continue  # another node was quicker
        return result

    def apply(self, result: LeasePass, plan: LeasePlan) -> None:
        """On the loop: step down where a lease was lost, lead (after a catch-up) where one
        was taken; partitions closed meanwhile are skipped (a deleted topic's epochs are
        bumped, so a lease taken on it fences nothing that matters). A taken partition whose
        catch-up fails is dropped from ``result.taken``, so ``result`` says what changed:
        a caller following it (the broker rebuilding producer state, loading shards) follows
        every partition led, even when PostgreSQL fails midway."""
        for tp in result.lost + result.released:
            copy = self.leased.get(tp)
            if copy is not None and copy.leader is not None and (
                    copy.leader.leader_epoch == plan.held[tp]):
                copy.step_down()
        for (topic, partition), epoch in list(result.taken.items()):
            copy = self.leased.get((topic, partition))
            if copy is None or copy.closed:
                continue
            try:
                copy.lead(self._leader_store(topic, partition, epoch, copy.config))
            except StorageError as exc:
                # Not led (its copy may lack what the last leader wrote), and not among the
                # taken ones the caller follows: the lease is this node's, so the next pass
                # takes it again; the other taken partitions are led meanwhile.
                del result.taken[(topic, partition)]
                log.warning("%s-%d: lease taken, not led yet: %s", topic, partition, exc)
                continue
            log.info("%s-%d: leading at epoch %d", topic, partition, epoch)
        if result.released:
            log.info("leases released to their live preferred nodes: %s", result.released)
        if result.view is not None:
            self.view = result.view
        if result.catalog is not None:
            self.catalog = result.catalog
            for name, found in result.catalog.items():
                self._catalog_ids.setdefault(name, found.topic_id)
