"""The broker process: services, listeners, start-up loading and clean shutdown.

Mirrors Kafka's `BrokerServer` startup/shutdown for one node: open the data dir (log
recovery), load topic metadata, start the coordinator runtime (shards load lazily). Unlike
Kafka the listeners are bound first, with only the code that answers ApiVersions imported:
clients learn the API versions at once and every other request waits (`ready`) until the
rest has loaded, so start-up costs a client little and no answer comes from a half-loaded
broker. Log recovery runs on a worker thread, so a long one (after an unclean stop) never
holds up the ApiVersions answers; the data dir's lock (`storage.dir_lock`) is taken before
anything else. Appends go through `append` so the fsync policy and fetch wake-ups
are applied in one place (`ReplicaManager.appendRecords` for a single replica).

A disk that refuses a write is a `KafkaStorageError` for that append only: the partition log
has already cut off whatever the failed write left, and with `fsync=always` a batch whose
fsync failed is removed again before the error is raised, so nothing unacknowledged stays
behind an acknowledged offset and nothing acknowledged is ever handed out again. Kafka takes
the whole log dir offline instead and needs a restart; here every later append simply tries
again, so the broker serves again as soon as the disk does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Protocol

from groupcoord.server.acceptor import Acceptor, bind_listener
from groupcoord.server.config import BrokerConfig, Listener
from groupcoord.server.connection import KafkaConnection
from groupcoord.server.connection_limits import ConnectionLimits, build_connection_limits
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.fault_injection import FaultInjector
from groupcoord.server.framing import API_VERSIONS_KEY
from groupcoord.server.import_ahead import CLIENT_HANDLERS, LOADED_AFTER_BIND, import_ahead
from groupcoord.server.listener_setup import ListenerSetup
from groupcoord.server.request_context import BrokerRequestContext
from groupcoord.server.runtime import heap
from groupcoord.server.runtime.clock import SystemClock
from groupcoord.server.waiters import FetchWaiters

if TYPE_CHECKING:
    from groupcoord.apis.registry import ApiSpec
    from groupcoord.coordinator.clock import Clock
    from groupcoord.security.acl_store import DurableAuthorizer
    from groupcoord.security.scram_store import ScramCredentialStore
    from groupcoord.server.cluster_map import ClusterMap
    from groupcoord.server.fetch_sessions import FetchSessionCache
    from groupcoord.server.listener_security import ListenerSecurity
    from groupcoord.server.log_cleaner import LogCleaner
    from groupcoord.server.metrics.counters import GroupCounters
    from groupcoord.server.postgres_node import PostgresNode
    from groupcoord.server.producer_state import PartitionProducerState, ProducerStateManager
    from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime
    from groupcoord.server.share_runtime import ShareRuntime
    from groupcoord.server.topics import TopicStore
    from groupcoord.server.transactions import TransactionRuntime
    from groupcoord.storage import AppendInfo, LogManager, PartitionLog
    from groupcoord.storage.dir_lock import DataDirLock

log = logging.getLogger("groupcoord.server")

# Every stored batch carries leader epoch 0, the only epoch of this single replica, as Kafka
# stamps the leader's epoch (clients use it for KIP-320 validation).
LEADER_EPOCH = 0
MAINTENANCE_INTERVAL_S = 30.0
class _Service(Protocol):
    """A runtime `start` loaded, stopped in the reverse order by `stop`."""

    async def stop(self) -> None: ...


class Broker:
    """All shared state of a running broker.

    The services below `_load` creates are declared without a value: nothing reads them
    before `ready` is set (requests other than ApiVersions wait for it), and `stop` closes
    only what `_services` / `_opened_logs` say was opened.
    """

    logs: LogManager
    topics: TopicStore
    producers: ProducerStateManager
    groups: CoordinatorRuntime
    shares: ShareRuntime
    transactions: TransactionRuntime
    fetch_sessions: FetchSessionCache
    dispatcher: Dispatcher
    # What group events count (rebalances by cause; `server.metrics`).
    group_counters: GroupCounters

    def __init__(self, config: BrokerConfig, handlers: Mapping[int, ApiSpec] | None = None,
                 clock: Clock | None = None) -> None:
        self.config = config
        # The one time source of every runtime and request (a ManualClock in tests).
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._handlers = handlers
        self.handlers: Mapping[int, ApiSpec] = {}
        self.connections: set[KafkaConnection] = set()
        self.broker_configs: dict[str, str] = {}
        self.waiters = FetchWaiters()
        self.advertised = config.advertised()
        self.bound: list[Listener] = []
        self._servers: list[Acceptor] = []
        # Each node's acceptors (one node unless `config.nodes` > 1).
        self.node_servers: dict[int, list[Acceptor]] = {}
        # Each node's bound ports, kept while it is stopped so it starts where it was.
        self.node_ports: dict[int, list[int]] = {}
        # Who serves what with several nodes (`server.cluster_map`; on PostgreSQL the lease
        # table's, `server.lease_cluster_map`); None with one node on a data dir.
        self.cluster: ClusterMap | None = None
        self.connection_limits: ConnectionLimits | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # Logs appended to since the last flush (`fsync=interval`).
        self._dirty: set[PartitionLog] = set()
        self._compacted: dict[tuple[str, int], tuple[int, int]] = {}
        self._opened_logs: LogManager | None = None
        # The node's partitions in PostgreSQL and their leases (`config.storage`), else None.
        self._postgres: PostgresNode | None = None
        # The data dir's lock while this broker owns the dir (None in memory).
        self._dir_lock: DataDirLock | None = None
        self._services: list[_Service] = []
        self.cleaner: LogCleaner | None = None
        # One cleaning pass at a time (one cleaner thread): two would share `cleaner-tmp`.
        self._cleaning = asyncio.Lock()
        # Set once `start` has loaded everything; requests other than ApiVersions wait for it.
        self.ready = asyncio.Event()
        # Set once `start` has bound every listener (before it loads).
        self.listening = asyncio.Event()
        # The ACL authorizer, or None when none is configured (everything allowed).
        self.authorizer: DurableAuthorizer | None = None
        self.scram_credentials: ScramCredentialStore | None = None
        self.listener_security: list[ListenerSecurity] = []
        # Test faults on the request path (`fault_injection`); empty in production.
        self.faults = FaultInjector()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Take the data dir's lock, bind the listeners (ApiVersions is answered from then
        on), then load the logs and runtimes; returns once every request can be served.
        Raises `storage.dir_lock.DataDirLocked` if another broker holds the data dir."""
        cfg = self.config
        if self._handlers is None:
            from groupcoord.apis.registry import handlers

            self._handlers = handlers()
        self.handlers = self._handlers
        if cfg.file_io.shared_across_processes:
            # Before anything reads or writes the dir, and before the bind: a second broker
            # on a held dir fails at once and leaves it as it was (`storage.dir_lock`).
            from groupcoord.storage.dir_lock import lock_data_dir

            self._dir_lock = lock_data_dir(cfg.data_dir)
        try:
            await self._bind_and_load()
        except BaseException:
            self._release_dir()
            raise
        self.ready.set()

    async def _bind_and_load(self) -> None:
        cfg = self.config
        # The first request of every client: its module loads now, uncontended by the
        # worker thread that preloads the rest after the bind.
        self.handlers.get(API_VERSIONS_KEY)
        self.dispatcher = Dispatcher(self, self.handlers,
                                     functools.partial(BrokerRequestContext, self))
        self._listener_setup = ListenerSetup(cfg, self.handlers, self.dispatcher.dispatch,
                                             self.scram_store)
        self.connection_limits = build_connection_limits(cfg)
        if cfg.nodes > 1:
            self.cluster = _cluster_map(cfg)
        for index in range(cfg.nodes):
            ports = [0 if lst.port == 0 else lst.port + index for lst in cfg.listeners]
            await self.bind_node(cfg.node_id + index, ports)
        self.advertised = cfg.advertised(self.bound[0].port)
        self.listening.set()
        try:
            await asyncio.to_thread(_after_bind, cfg)
            heap.settle_step()
            await asyncio.sleep(0)  # the step and the start of `_load` in turns of their own
            self._tasks.append(asyncio.create_task(asyncio.to_thread(import_ahead, CLIENT_HANDLERS)))
            await self._load()
        except BaseException:
            # As if never bound: the caller sees start-up fail (a bad data dir, say).
            for server in self._servers:
                server.close()
            for conn in list(self.connections):
                conn.close()
            raise

    async def _load(self) -> None:
        """Kafka's start-up before it serves: log recovery, topic metadata, ACLs, producer
        state and the coordinator runtimes (their shards load lazily)."""
        from groupcoord.server.authorization import build_authorizer
        from groupcoord.server.fetch_sessions import FetchSessionCache
        from groupcoord.server.log_cleaner import LogCleaner
        from groupcoord.server.metrics.counters import GroupCounters
        from groupcoord.server.producer_state import ProducerStateManager
        from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime
        from groupcoord.server.share_runtime import ShareRuntime
        from groupcoord.server.topics import TopicStore
        from groupcoord.server.transactions import TransactionRuntime
        from groupcoord.storage import LogManager

        cfg = self.config
        self.scram_store()
        self.fetch_sessions = FetchSessionCache(cfg.fetch_max_sessions)
        self.cleaner = LogCleaner(cfg.file_io)
        if cfg.storage is None:
            self.logs = self._opened_logs = LogManager(cfg.data_dir, io=cfg.file_io)
        else:
            from groupcoord.server.postgres_node import PostgresNode

            advertised = {listener.name: security.advertised
                          for listener, security in zip(cfg.listeners, self.listener_security,
                                                        strict=True)}
            self._postgres = PostgresNode(cfg, _coordinator_partitions(cfg), advertised,
                                          self.clock)
            self.cluster = self._postgres.cluster_map
            self.logs = self._opened_logs = self._postgres.partitions
        # Log recovery (CRC scans after an unclean stop, index rebuilds and their fsyncs) on a
        # worker thread: the loop keeps answering ApiVersions, and nothing else reads the
        # logs before `ready`, as Kafka serves no partition before its log is loaded.
        await asyncio.to_thread(self.logs.load_all)
        heap.settle_step()
        await asyncio.sleep(0)  # the runtimes are built in a loop turn of their own
        self.authorizer = build_authorizer(cfg)
        self.topics = TopicStore(self.logs)
        self.broker_configs = self.topics.broker_configs
        self.producers = ProducerStateManager(self.logs.documents)
        self.group_counters = GroupCounters(cfg.metrics_max_groups)
        self.groups = CoordinatorRuntime(self)
        self.shares = ShareRuntime(self)
        loop = asyncio.get_running_loop()
        if cfg.fsync == "interval":
            self._tasks.append(loop.create_task(self._flush_loop()))
        self._tasks.append(loop.create_task(self._retention_loop()))
        await self.groups.start()
        self._services.append(self.groups)
        await self.shares.start()
        self._services.append(self.shares)
        self.transactions = TransactionRuntime(
            self, self.groups, None if self._postgres is None else self._postgres.peers)
        await self.transactions.start()
        self._services.append(self.transactions)
        if self._postgres is not None:
            from groupcoord.logformat.internal_topics import (
                OFFSETS_TOPIC,
                SHARE_STATE_TOPIC,
                TXN_TOPIC,
            )

            # Stopped last: the leases stay while the runtimes write their last records.
            self._postgres.start(self.topics, {OFFSETS_TOPIC: self.groups,
                                               TXN_TOPIC: self.transactions,
                                               SHARE_STATE_TOPIC: self.shares.state.runtime},
                                 self.producers, self.shares.group_configs)
            self._services.insert(0, self._postgres)

    def scram_store(self) -> ScramCredentialStore:
        """The SCRAM credentials of the data dir, read on first use (a SASL listener's first
        handshake, else the end of `start`)."""
        if self.scram_credentials is None:
            from groupcoord.security.scram_store import ScramCredentialStore

            self.scram_credentials = ScramCredentialStore(self.config.data_dir,
                                                          self.config.file_io)
        return self.scram_credentials

    async def bind_node(self, node_id: int, ports: list[int]) -> None:
        """Open the node's listeners (one per configured listener, on `ports`)."""
        cfg = self.config
        limits = self.connection_limits
        assert limits is not None  # built by `start` before the first bind
        servers: list[Acceptor] = []
        try:
            for index, listener in enumerate(cfg.listeners):
                sockets = await bind_listener(listener.host, ports[index])
                port = int(sockets[0].getsockname()[1])
                try:
                    # key material, users file, rules
                    security = self._listener_setup.listener(index, port)
                except BaseException:
                    for sock in sockets:
                        sock.close()
                    raise
                if node_id != cfg.node_id:
                    # Advertised listeners name node 0's endpoints; the others advertise
                    # their own port on the same host.
                    security = security.replace(advertised=Listener(
                        security.advertised.host, port, listener.name))
                server = Acceptor(
                    sockets, limits, self._connection_factory(security, node_id),
                    security.ssl_context, cfg.security.ssl_handshake_timeout_ms / 1000.0)
                server.start()
                servers.append(server)
                if node_id == cfg.node_id:
                    self.listener_security.append(security)
                    self.bound.append(Listener(listener.host, port, listener.name))
                if self.cluster is not None:
                    self.cluster.nodes[node_id].endpoints[listener.name] = security.advertised
        except BaseException:
            for server in servers:
                server.close()
            raise
        self._servers.extend(servers)
        self.node_servers[node_id] = servers
        self.node_ports[node_id] = [server.port for server in servers]

    def _connection_factory(self, security: ListenerSecurity,
                            node_id: int) -> Callable[[str], KafkaConnection]:
        def connection(address: str) -> KafkaConnection:
            return KafkaConnection(self.dispatcher, self.config.max_request_size,
                                   self.connection_limits, address, security, node_id)
        return connection

    async def close_node(self, node_id: int) -> None:
        """Close the node's listeners and the connections they accepted."""
        servers = self.node_servers.pop(node_id, [])
        for server in servers:
            server.close()
            self._servers.remove(server)
        for conn in list(self.connections):
            if conn.node_id == node_id:
                conn.close()
        for server in servers:
            await server.wait_closed()

    async def stop(self) -> None:
        """Stop accepting, drop connections, stop shards, flush and close every log."""
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.close()
        if self.cleaner is not None:
            self.cleaner.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        # The reverse of the start order: transactions (they write to group shards) first.
        for service in reversed(self._services):
            await service.stop()
        for server in self._servers:
            await server.wait_closed()
        if self.connection_limits is not None:
            self.connection_limits.stop()
        if self._opened_logs is not None:
            self._opened_logs.close()
        self._release_dir()

    def _release_dir(self) -> None:
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None

    async def _flush_loop(self) -> None:
        interval = self.config.fsync_interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval)
            self.flush_dirty()

    async def _retention_loop(self) -> None:
        """Kafka's log retention and cleaner threads: retention as a periodic pass on the
        loop (it only unlinks files), compaction in the cleaner's worker process."""
        passes = 0
        while True:
            await asyncio.sleep(MAINTENANCE_INTERVAL_S)
            passes += 1
            try:
                await self.compact_logs_in_background()
                if passes % 10 == 0:
                    self.logs.delete_expired()
            except Exception:
                log.exception("log maintenance pass failed")

    def _cleaning_due(
            self) -> list[tuple[tuple[str, int], PartitionLog, tuple[int, int], int | None]]:
        """Logs with `cleanup.policy=compact` whose closed segments changed since their last
        cleaning: (partition, log, marker, first unstable offset)."""
        due = []
        for tp, plog in list(self.logs.logs.items()):
            inactive = len(plog.segments) - 1
            if "compact" not in plog.config.cleanup_policy or inactive < 1:
                continue
            marker = (inactive, plog.segments[-1].base_offset)
            if self._compacted.get(tp) != marker:
                # Open transactions are not cleaned (Kafka's first uncleanable offset).
                due.append((tp, plog, marker, self.producer_state(*tp).first_unstable_offset()))
        return due

    def compact_logs(self) -> None:
        """Compact every due log in this thread (tests and tools; the broker cleans in the
        background)."""
        from groupcoord.storage.compaction import compact

        for tp, plog, marker, first_unstable in self._cleaning_due():
            compact(plog, first_unstable_offset=first_unstable)
            self._compacted[tp] = marker

    async def compact_logs_in_background(self) -> None:
        """Compact every due log, the heavy part in the cleaner process (`log_cleaner`)."""
        from groupcoord.storage.compaction import apply_cleaned, plan_cleaning

        async with self._cleaning:
            for tp, plog, marker, first_unstable in self._cleaning_due():
                job = plan_cleaning(plog, first_unstable_offset=first_unstable)
                assert self.cleaner is not None  # created by `start` before this loop runs
                outcome = await self.cleaner.clean(job)
                if plog.closed or self.logs.get(*tp) is not plog:
                    continue  # the topic was deleted meanwhile
                result = apply_cleaned(plog, job, outcome)
                self._compacted[tp] = marker
                await self.cleaner.remove_replaced(result.replaced_files)
                if result.records_removed:
                    log.info("cleaned %s-%d: %d records removed, %d -> %d bytes", tp[0],
                             tp[1], result.records_removed, result.bytes_before,
                             result.bytes_after)

    def flush_dirty(self) -> None:
        from groupcoord.storage.config import KafkaStorageError

        dirty, self._dirty = self._dirty, set()
        for plog in dirty:
            if plog.closed:
                continue
            try:
                plog.flush()
            except KafkaStorageError as exc:
                # Acknowledged under fsync=interval, so not undone; retried next interval.
                log.error("%s", exc)
                self._dirty.add(plog)

    # -- the append path -------------------------------------------------------------------

    def append(self, topic: str, partition: int, data: bytes | memoryview,
               now_ms: int | None = None, *, allow_control: bool = False,
               trusted: bool = False, expected_end_offset: int | None = None) -> AppendInfo:
        """Append batches to a partition, apply the fsync policy and wake fetchers.

        Raises the storage errors (`InvalidRecordError`, `RecordBatchTooLargeError`,
        `KafkaStorageError` with nothing of the batch left in the log) and `KeyError` for an
        unknown partition. `trusted` skips the CRC pass for batches the broker encoded
        itself (the coordinator runtimes; never Produce). A writer that names
        `expected_end_offset` gets `AppendPreconditionFailed`, nothing written, if the log
        ends elsewhere. On a leased log (PostgreSQL) the write blocks the loop: writers on
        the loop await `append_async` instead.
        """
        plog, state = self._append_target(topic, partition)
        with self._outcome_told(topic, partition):
            info = plog.append(data, expected_end_offset=expected_end_offset, now_ms=now_ms,
                               leader_epoch=LEADER_EPOCH, allow_control=allow_control,
                               trusted=trusted)
        return self._appended(topic, partition, plog, state, data, info)

    async def append_async(self, topic: str, partition: int, data: bytes | memoryview,
                           now_ms: int | None = None, *, allow_control: bool = False,
                           trusted: bool = False, expected_end_offset: int | None = None
                           ) -> AppendInfo:
        """`append`, for a caller holding the partition's `append_lock`: a file log's
        append runs at once, never yielding; a leased log's PostgreSQL transaction runs off
        the loop, which serves other requests meanwhile (`storage.leased_log`)."""
        plog, state = self._append_target(topic, partition)
        with self._outcome_told(topic, partition):
            info = await plog.append_async(data, expected_end_offset=expected_end_offset,
                                           now_ms=now_ms, leader_epoch=LEADER_EPOCH,
                                           allow_control=allow_control, trusted=trusted)
        return self._appended(topic, partition, plog, state, data, info)

    def append_lock(self, topic: str, partition: int) -> AbstractAsyncContextManager[None]:
        """What a writer holds from its checks of the partition's producer state to the end
        of `append_async`, so no other append comes between (`PartitionLog.append_lock`);
        a no-op for an unknown partition, whose append raises `KeyError`."""
        plog = self.topics.log(topic, partition)
        return nullcontext() if plog is None else plog.append_lock

    def _append_target(self, topic: str, partition: int
                       ) -> tuple[PartitionLog, PartitionProducerState]:
        """The partition's log and its producer state, loaded before the append: the
        rebuild must not see the appended batch as well."""
        plog = self.topics.log(topic, partition)
        if plog is None:
            raise KeyError((topic, partition))
        return plog, self.producer_state(topic, partition)

    @contextmanager
    def _outcome_told(self, topic: str, partition: int) -> Iterator[None]:
        """Around a log's append. A shared store that lost its connection may have landed
        the append: the partition refuses until its copy has it; then the state is rebuilt
        with it, so a retry is a duplicate rather than stored twice (`storage.leased_log`)."""
        from groupcoord.storage.config import StorageUnavailable

        try:
            yield
        except StorageUnavailable:
            self.producers.drop_partition(topic, partition)
            raise

    def _appended(self, topic: str, partition: int, plog: PartitionLog,
                  state: PartitionProducerState, data: bytes | memoryview,
                  info: AppendInfo) -> AppendInfo:
        """After a log took an append: the fsync policy, the producer state, the fetchers."""
        from groupcoord.server.txn_log import track_append
        from groupcoord.storage.config import KafkaStorageError

        policy = self.config.fsync
        if policy == "always":
            try:
                plog.flush()
            except KafkaStorageError:
                plog.truncate_to(info.base_offset)
                raise
        elif policy == "interval":
            self._dirty.add(plog)
        track_append(state, plog, data, info.headers)
        self.waiters.notify((topic, partition))
        return info

    def producer_state(self, topic: str, partition: int) -> PartitionProducerState:
        """The partition's producer state, rebuilt from its batch headers on first use."""
        from groupcoord.server.txn_log import load_producer_state

        state = self.producers.partition(topic, partition)
        if state is not None:
            return state
        return load_producer_state(self, topic, partition)

    def forget_partitions(self, topic: str, count: int) -> None:
        """Drop per-partition soft state of a deleted topic."""
        for partition in range(count):
            self.producers.drop_partition(topic, partition)
            self.waiters.notify((topic, partition))


def _after_bind(cfg: BrokerConfig) -> None:
    """The work of `start` between the bind and `_load`, on a worker thread while the loop
    answers ApiVersions: import `LOADED_AFTER_BIND`, then store the cluster id (an fsync;
    only ApiVersions, which does not show the id, is answered before `ready`)."""
    from groupcoord.server.cluster_id import store_cluster_id

    import_ahead(LOADED_AFTER_BIND)
    store_cluster_id(cfg.data_dir, cfg.cluster_id, cfg.file_io)


def _coordinator_partitions(cfg: BrokerConfig) -> dict[str, int]:
    """The partition counts of the coordinators' topics (FindCoordinator's key -> partition)."""
    from groupcoord.logformat.internal_topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC
    from groupcoord.server.share_state import STATE_TOPIC_PARTITIONS
    from groupcoord.server.transactions import txn_topic_partitions

    return {OFFSETS_TOPIC: cfg.offsets_partitions, SHARE_STATE_TOPIC: STATE_TOPIC_PARTITIONS,
            TXN_TOPIC: txn_topic_partitions(cfg.extra)}


def _cluster_map(cfg: BrokerConfig) -> ClusterMap:
    from groupcoord.server.cluster_map import ClusterMap

    return ClusterMap([cfg.node_id + i for i in range(cfg.nodes)], _coordinator_partitions(cfg))
