"""The transaction coordinator runtime: `__transaction_state`, markers and timers.

Mirrors Kafka's `TransactionStateManager` (append to and load from `__transaction_state`,
50 compacted partitions, `partitionFor` = java hash of the transactional id), the
`TransactionMarkerChannelManager` (COMMIT/ABORT markers to every partition of a
transaction, then the Complete* record) and the coordinator's scheduled tasks
(`transaction-abort` every 10 s, `transactionalId-expiration` every hour, keyed timers of
each shard: they run while it is loaded) for a broker that leads every partition at
coordinator epoch 0.

Rules kept:
- each `__transaction_state` partition is a `TransactionCoordinator` shard on the generic
  runtime (`ShardRuntime`): its handlers are queued operations like the groups' and return
  records, a reply and effects; the runtime replays the records, appends them (coalesced
  with the drain's others, fsync per broker policy), then runs the effects (`_run_effect`:
  marker writers, producer-id observation) and answers; a failed append
  fail-stops the shard, which reloads from its log before the caller hears Kafka's
  answer for the append's error (`append_errors.txn_append_error`: a disk error is
  NOT_COORDINATOR, a missing partition COORDINATOR_NOT_AVAILABLE); a shard that is loading
  answers COORDINATOR_LOAD_IN_PROGRESS
  and one that is unloaded NOT_COORDINATOR (`TransactionStateManager.getTransactionState`);
  a record over the partition's `max.message.bytes` (a transaction holding very many
  partitions) changes nothing and answers UNKNOWN_SERVER_ERROR, as Kafka maps
  MESSAGE_TOO_LARGE. A Produce or TxnOffsetCommit that adds its partition waits for the
  answer before it writes (Kafka's `AddPartitionsToTxnManager`); a marker written
  meanwhile bumped the producer's epoch, so the write is then refused as fenced;
- markers go to data partitions through `txn_log.write_marker` and to `__consumer_offsets`
  through the group coordinator's `complete_transaction` (`write_marker`, also what a
  WriteTxnMarkers from another node's coordinator runs); on a node of a cluster on
  PostgreSQL, markers for partitions another node leads go there as WriteTxnMarkers
  (`txn_peers`); a partition leaves the transaction's to-do set when its marker is
  written (or the partition is gone, or it reports a newer producer/coordinator epoch), and
  the Complete* record follows the last;
- EndTxn and the fencing InitProducerId answer after the markers were tried once (Kafka
  answers after the Prepare* append; answering later only spares the client a retry);
  partitions that failed are retried by the shard's abort pass, and on a node of a cluster
  every `MARKER_RETRY_BACKOFF_MS` as well, as Kafka's `TransactionMarkerChannelManager`
  re-queues them (a partition moving between nodes is written once its new leader has it);
- a shard unloaded (another node took its partition) drops its transactions' marker work:
  the new coordinator's load resumes it;
- at start every partition with a log is loaded before the broker serves; at every load
  (start, a load after an unload, a fail-stop reload) transactions found in
  PrepareCommit/PrepareAbort get their markers again, Ongoing ones are left to time out,
  as Kafka's loader does; ListTransactions answers COORDINATOR_LOAD_IN_PROGRESS while any
  shard loads (`listTransactionStates`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from groupcoord.apis import features
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.result import Effect, Result
from groupcoord.coordinator.transactions.coordinator import (
    ObserveProducerIds,
    TransactionCoordinator,
    TxnReply,
    TxnTimers,
    WriteMarkers,
)
from groupcoord.coordinator.transactions.state import (
    S,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnMarker,
)
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC, TXN_TOPIC
from groupcoord.server.runtime.append_errors import txn_append_error
from groupcoord.server.runtime.clock import sleep_ms
from groupcoord.server.runtime.shard_runtime import ShardRuntime
from groupcoord.server.runtime.shard_task import ShardState, ShardTask
from groupcoord.server.txn_log import write_marker
from groupcoord.server.txn_peers import TxnPeers
from groupcoord.storage.config import NotPartitionLeader, StorageError
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost
    from groupcoord.server.inter_broker import InterBrokerClient

log = logging.getLogger("groupcoord.transactions")

TXN_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
# The coordinator epoch of one node (and of the nodes of one process): the leader epoch of
# its single replica. On a cluster on PostgreSQL a shard's is its partition's lease epoch.
COORDINATOR_EPOCH = 0
# Marker answers after which the partition needs no marker any more (a leader too old for
# markers, UNSUPPORTED_*, as Kafka's `TransactionMarkerRequestCompletionHandler`).
# NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retried: the shard is moving.
_MARKER_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          ErrorCode.INVALID_PRODUCER_EPOCH,
                          ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                          ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                          ErrorCode.UNSUPPORTED_VERSION})
# Kafka's `retry.backoff.ms` default: how soon a node of a cluster retries failed markers.
MARKER_RETRY_BACKOFF_MS = 100


TXN_PARTITIONS = "transaction.state.log.num.partitions"
MAX_TIMEOUT = "transaction.max.timeout.ms"
ABORT_INTERVAL = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
EXPIRATION = "transactional.id.expiration.ms"
EXPIRATION_INTERVAL = "transaction.remove.expired.transaction.cleanup.interval.ms"
#: The broker settings read here (`serve --group-config NAME=VALUE`); each is an int of at
#: least 1, as Kafka's `TransactionStateManagerConfig` / `TransactionLogConfig` define them.
CONFIG_NAMES = (TXN_PARTITIONS, MAX_TIMEOUT, ABORT_INTERVAL, EXPIRATION, EXPIRATION_INTERVAL)


def _int(extra: dict[str, str], name: str, default: int) -> int:
    text = extra.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"Invalid value {text} for configuration {name}: "
                         "Not a number of type INT") from None
    if value < 1:
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         "Value must be at least 1")
    return value


def check_configs(extra: dict[str, str]) -> None:
    """ValueError, in Kafka's words, for a transaction setting that is not a positive int."""
    for name in CONFIG_NAMES:
        _int(extra, name, 1)


def txn_topic_partitions(extra: dict[str, str]) -> int:
    """`transaction.state.log.num.partitions` (Kafka's default 50)."""
    return _int(extra, TXN_PARTITIONS, 50)


class OffsetsMarkers(Protocol):
    """Where the markers for `__consumer_offsets` go: the group coordinator runtime, which
    writes each on its shard's queue (`coordinator_runtime`)."""

    @property
    def num_partitions(self) -> int: ...

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   coordinator_epoch: int, commit: bool) -> int: ...


class TransactionRuntime:
    """`broker.transactions`: what the transaction API handlers call."""

    def __init__(self, broker: CoordinatorHost, groups: OffsetsMarkers,
                 peers: InterBrokerClient | None = None) -> None:
        """`peers`: on a node of a cluster on PostgreSQL, its connections to the others, to
        which the markers of the partitions they lead go."""
        self.broker = broker
        self.groups = groups
        self.clock = broker.clock
        extra = broker.config.extra
        self.num_partitions = txn_topic_partitions(extra)
        self.max_timeout_ms = _int(extra, MAX_TIMEOUT, 900_000)
        defaults = TxnTimers()
        self.timers = TxnTimers(
            abort_interval_ms=_int(extra, ABORT_INTERVAL, defaults.abort_interval_ms),
            expiration_ms=_int(extra, EXPIRATION, defaults.expiration_ms),
            expiration_interval_ms=_int(extra, EXPIRATION_INTERVAL,
                                        defaults.expiration_interval_ms))
        self.runtime = ShardRuntime(broker, TXN_TOPIC, self.num_partitions, TXN_TOPIC_CONFIGS,
                                    self._new_shard, self._run_effect)
        self.runtime.append_error = txn_append_error
        self._completing: dict[str, asyncio.Task[None]] = {}
        # Per transactional id: the marker being written and the partitions still without it.
        self._todo: dict[str, tuple[TxnMarker, set[TopicPartition]]] = {}
        self._retrying: dict[str, asyncio.Task[None]] = {}
        # The coordinator epoch of each loaded shard, as of its load.
        self._epochs: dict[int, int] = {}
        self._channel: TxnPeers | None = None
        if peers is not None:
            assert broker.cluster is not None, "a node with peers has a cluster map"
            self._channel = TxnPeers(
                broker.config.node_id, broker.cluster, peers,
                lambda topic: broker.topics.get(topic) is not None, self.write_marker,
                self.verify_here)

    def _new_shard(self, _partition: int) -> TransactionCoordinator:
        return TransactionCoordinator(
            self.broker.producers.ids.next_id, self.max_timeout_ms,
            features.finalized_level(features.TRANSACTION_VERSION), self.timers)

    def _run_effect(self, effect: Effect) -> None:
        """What a shard asked for, once its records are appended."""
        if isinstance(effect, WriteMarkers):
            for tid in effect.tids:
                self._spawn(tid)
        elif isinstance(effect, ObserveProducerIds):
            self.broker.producers.ids.observe(effect.highest)
        else:
            raise TypeError(f"not a transaction effect: {effect!r}")

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        await self.runtime.start()
        await self.runtime.wait_loaded()

    async def stop(self) -> None:
        tasks = list(self._completing.values()) + list(self._retrying.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._completing.clear()
        self._retrying.clear()
        await self.runtime.stop()

    def unload(self, partition: int) -> None:
        """Resign the shard (another node took its partition): NOT_COORDINATOR from now on,
        and its transactions' marker work is dropped (the new coordinator resumes it)."""
        self.runtime.unload(partition)
        self._epochs.pop(partition, None)
        for tid in [tid for tid in self._todo if self.partition_for(tid) == partition]:
            del self._todo[tid]
        for tid in [tid for tid in self._retrying if self.partition_for(tid) == partition]:
            self._retrying.pop(tid).cancel()

    def load(self, partition: int) -> None:
        """Take the shard (this node took its partition): replayed from the log,
        COORDINATOR_LOAD_IN_PROGRESS meanwhile; its prepared transactions' markers are
        written once it is loaded."""
        self._epochs.pop(partition, None)
        self.runtime.load(partition)

    def coordinator_epoch(self, partition: int) -> int:
        """The epoch the shard's markers carry (Kafka's coordinator epoch, the
        `__transaction_state` partition's leader epoch): on a cluster on PostgreSQL the lease
        epoch this node held when it loaded the shard, so the leaders refuse a deposed
        coordinator's late markers (TRANSACTION_COORDINATOR_FENCED) once its successor's
        were written; COORDINATOR_EPOCH otherwise."""
        epoch = self._epochs.get(partition)
        if epoch is None:
            cluster = self.broker.cluster
            epoch = COORDINATOR_EPOCH
            if self._channel is not None and cluster is not None:
                epoch = max(COORDINATOR_EPOCH, cluster.leader_epoch(TXN_TOPIC, partition))
            self._epochs[partition] = epoch
        return epoch

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    # -- the shards --------------------------------------------------------------------------

    def _loaded(self) -> list[TransactionCoordinator]:
        return [_coordinator(task) for task in list(self.runtime.shards.values())
                if task.state is ShardState.ACTIVE]

    def coordinator_of(self, tid: str) -> TransactionCoordinator:
        """The shard of `tid`, to read; ApiError COORDINATOR_LOAD_IN_PROGRESS while it
        loads, or reloads after a failed append (a read never meets a half-replayed shard),
        NOT_COORDINATOR once unloaded (Kafka's `TransactionStateManager.getTransactionState`)."""
        task = self.runtime.active_shard(self.partition_for(tid))
        if task.state is ShardState.RECOVERING:
            raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return _coordinator(task)

    def metadata(self, tid: str) -> TransactionMetadata | None:
        return self.coordinator_of(tid).txns.get(tid)

    def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int,
                          pattern: str | None, now_ms: int
                          ) -> tuple[list[TransactionMetadata], list[str]]:
        """ListTransactions over every shard: (matching metadata, unknown states). While a
        shard loads the whole answer is COORDINATOR_LOAD_IN_PROGRESS (ApiError), as Kafka's
        `listTransactionStates`; a bad `pattern` raises re.error even with no shard."""
        if pattern:
            re.compile(pattern)
        if self.runtime.loading_partitions():
            raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        found: list[TransactionMetadata] = []
        unknown = [name for name in states if TransactionState.from_name(name) is None]
        for coordinator in self._loaded():
            found.extend(coordinator.list_transactions(states, producer_ids, duration_ms,
                                                       pattern, now_ms)[0])
        return found, unknown

    async def _run(self, tid: str, handler: Callable[[TransactionCoordinator, int], Result]
                   ) -> TxnReply:
        """Run a handler on `tid`'s shard's queue; its reply once its records are appended
        (or the error of a shard that takes no requests, or of the failed append)."""
        try:
            reply: TxnReply = await self.runtime.call_shard(
                self.partition_for(tid), lambda shard, _ctx, now: handler(shard, now))
        except ApiError as exc:
            return TxnReply(error=int(exc.code))
        return reply

    # -- the APIs --------------------------------------------------------------------------

    async def init_producer_id(self, tid: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> TxnReply:
        reply = await self._run(tid, lambda c, now: c.init_producer_id(tid, timeout_ms,
                                                                        expected, now))
        if reply.writes_markers:
            # An ongoing transaction was fenced and aborted: its markers first.
            await self._complete(tid)
        return reply

    async def add_partitions(self, tid: str, pid: int, epoch: int,
                             partitions: list[TopicPartition], client_tv: int = 0) -> int:
        reply = await self._run(tid, lambda c, now: c.add_partitions(tid, pid, epoch,
                                                                      partitions, now,
                                                                      client_tv))
        return reply.error

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        try:
            coordinator = self.coordinator_of(tid)
        except ApiError as exc:
            return dict.fromkeys(partitions, int(exc.code))
        return coordinator.verify_partitions(tid, pid, epoch, partitions)

    async def end_txn(self, tid: str, pid: int, epoch: int, commit: bool,
                      client_tv: int = 0) -> TxnReply:
        reply = await self._run(tid, lambda c, now: c.end_txn(tid, pid, epoch, commit, now,
                                                               client_tv))
        if reply.writes_markers:
            await self._complete(tid)
        return reply

    async def verify_at_coordinator(self, tid: str, pid: int, epoch: int, tp: TopicPartition,
                                    add: bool) -> int:
        """KIP-890, for a partition leader about to write `tid`'s first batch to `tp`: the
        coordinator's answer, verified (`add` False, part 1) or added (part 2). On a node of
        a cluster, asked of the coordinator's node when another node coordinates `tid`."""
        if self._channel is not None:
            return await self._channel.verify(tid, pid, epoch, tp, add)
        return await self.verify_here(tid, pid, epoch, tp, add)

    async def verify_here(self, tid: str, pid: int, epoch: int, tp: TopicPartition,
                          add: bool) -> int:
        """`verify_at_coordinator` on this node's shard of `tid`."""
        if add:
            return await self.add_partitions(tid, pid, epoch, [tp],
                                             features.TRANSACTION_VERSION_2)
        return self.verify_partitions(tid, pid, epoch, [tp]).get(tp, 0)

    # -- markers ---------------------------------------------------------------------------

    def _spawn(self, tid: str) -> asyncio.Task[None]:
        task = self._completing.get(tid)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._write_markers(tid))
            self._completing[tid] = task
            task.add_done_callback(lambda _t: self._forget(tid, task))
        return task

    def _forget(self, tid: str, task: asyncio.Task[None]) -> None:
        if self._completing.get(tid) is task:
            del self._completing[tid]

    async def _complete(self, tid: str) -> None:
        """Write the markers now (shared with a completion already running for `tid`)."""
        await asyncio.shield(self._spawn(tid))

    async def _write_markers(self, tid: str) -> None:
        try:
            md = self.metadata(tid)
        except ApiError:
            return  # the shard is loading (its on_loaded resumes the markers) or gone
        if md is None or md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return
        marker = TxnMarker(md.producer_id, md.producer_epoch,
                           self.coordinator_epoch(self.partition_for(tid)),
                           md.state == S.PREPARE_COMMIT, md.client_tv)
        pending = self._todo.get(tid)
        if pending is None or pending[0] != marker:
            pending = self._todo[tid] = (marker, set(md.partitions))
        todo = pending[1]
        for tp, error in (await self._send_markers(sorted(todo), marker)).items():
            if error in _MARKER_DONE:
                todo.discard(tp)
            else:
                log.info("marker for %r on %s-%d failed (%d); will retry", tid, tp[0], tp[1],
                         error)
        if todo:
            if self._channel is not None:
                self._retry_later(tid)
            return
        del self._todo[tid]
        await self._run(tid, lambda c, now: c.complete(tid, now))

    async def _send_markers(self, partitions: list[TopicPartition], marker: TxnMarker
                            ) -> dict[TopicPartition, int]:
        if self._channel is not None:
            return await self._channel.write_markers(partitions, marker)
        return {tp: await self.write_marker(tp, marker) for tp in partitions}

    def _retry_later(self, tid: str) -> None:
        if tid in self._retrying:
            return

        async def retry() -> None:
            await sleep_ms(self.clock, MARKER_RETRY_BACKOFF_MS)
            del self._retrying[tid]
            self._spawn(tid)
        self._retrying[tid] = asyncio.get_running_loop().create_task(retry())

    async def write_marker(self, tp: TopicPartition, marker: TxnMarker) -> int:
        """Append the marker to a partition of this node (a data partition, or the
        transaction's offsets on `__consumer_offsets`); 0 or Kafka's error, as
        `KafkaApis.handleWriteTxnMarkersRequest` answers it: NOT_LEADER_OR_FOLLOWER where
        another node leads, KAFKA_STORAGE_ERROR for a log that failed."""
        topic, partition = tp
        pid, epoch, commit = marker.producer_id, marker.producer_epoch, marker.commit
        try:
            if topic == OFFSETS_TOPIC:
                groups = self.groups
                if not 0 <= partition < groups.num_partitions:
                    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # no such offsets partition
                return await groups.complete_transaction(partition, pid, epoch,
                                                         marker.coordinator_epoch, commit)
            return await write_marker(self.broker, topic, partition, pid, epoch,
                                      marker.coordinator_epoch, commit, self.clock.now_ms())
        except NotPartitionLeader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        except (OSError, StorageError):
            log.exception("marker write to %s-%d failed", topic, partition)
            return ErrorCode.KAFKA_STORAGE_ERROR

    # -- the periodic passes, on demand (they also run as each shard's timers) ---------

    async def _each_shard(self, handler: Callable[[TransactionCoordinator, int], Result]
                          ) -> list[str]:
        """Run `handler` on every loaded shard's queue; the ids its responses list."""
        done: list[str] = []
        for partition, task in list(self.runtime.shards.items()):
            if task.state is not ShardState.ACTIVE:
                continue
            try:
                done.extend(await self.runtime.call_shard(
                    partition, lambda shard, _ctx, now: handler(shard, now)))
            except ApiError as exc:
                log.warning("%s-%d: periodic transaction work failed (%d)", TXN_TOPIC,
                            partition, exc.code)
        return done

    async def abort_timed_out(self, now: int) -> list[str]:
        """Fence and abort transactions past their timeout; retry unfinished markers."""
        return await self._each_shard(lambda c, _now: c.abort_pass(now))

    async def remove_expired(self, now: int) -> list[str]:
        """Tombstone transactional ids idle longer than transactional.id.expiration.ms."""
        return await self._each_shard(
            lambda c, _now: c.remove_expired(now, self.timers.expiration_ms))


def _coordinator(task: ShardTask) -> TransactionCoordinator:
    shard = task.shard
    assert isinstance(shard, TransactionCoordinator)
    return shard
