"""The transaction coordinator runtime: `__transaction_state`, markers and timers.

Mirrors Kafka's `TransactionStateManager` (append to and load from `__transaction_state`,
50 compacted partitions, `partitionFor` = java hash of the transactional id), the
`TransactionMarkerChannelManager` (COMMIT/ABORT markers to every partition of a
transaction, then the Complete* record) and the coordinator's scheduled tasks
(`transaction-abort` every 10 s, `transactionalId-expiration` every hour) for a broker that
leads every partition at coordinator epoch 0.

Rules kept:
- the decisions are the pure `TransactionCoordinator`'s; here a transit's record is appended
  (one uncompressed batch, fsync per broker policy) and only then applied; a record over
  the partition's `max.message.bytes` (a transaction holding very many partitions) changes
  nothing and answers UNKNOWN_SERVER_ERROR, as Kafka maps MESSAGE_TOO_LARGE;
- markers go to data partitions through `txn_log.write_marker` and to `__consumer_offsets`
  through the group coordinator's `complete_transaction`; a partition leaves the
  transaction's to-do set when its marker is written (or the partition is gone, or it
  reports a newer producer/coordinator epoch), and the Complete* record follows the last;
- EndTxn and the fencing InitProducerId answer after the markers were tried once (Kafka
  answers after the Prepare* append; answering later only spares the client a retry);
  partitions that failed are retried by the periodic task;
- at start every partition is replayed; transactions found in PrepareCommit/PrepareAbort
  get their markers again, Ongoing ones are left to time out, as Kafka's loader does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from groupcoord.apis import features
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.transactions.coordinator import TransactionCoordinator, TxnOp
from groupcoord.coordinator.transactions.state import S, TopicPartition
from groupcoord.logformat.batch import build_batch
from groupcoord.logformat.transaction_records import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from groupcoord.server.clock import sleep_ms
from groupcoord.server.log_records import keyed_records
from groupcoord.server.txn_log import write_marker
from groupcoord.storage.config import RecordBatchTooLargeError, StorageError
from groupcoord.wire.errors import DecodeError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker import Broker

log = logging.getLogger("groupcoord.transactions")

TXN_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
TXN_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
COORDINATOR_EPOCH = 0
# Marker answers after which the partition needs no marker any more.
# NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retried: the shard is moving.
_MARKER_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          ErrorCode.INVALID_PRODUCER_EPOCH,
                          ErrorCode.TRANSACTION_COORDINATOR_FENCED})


def _int(extra: dict[str, str], name: str, default: int) -> int:
    return int(extra.get(name, default))


def txn_topic_partitions(extra: dict[str, str]) -> int:
    """`transaction.state.log.num.partitions` (Kafka's default 50)."""
    return _int(extra, "transaction.state.log.num.partitions", 50)


class TransactionRuntime:
    """`broker.transactions`: what the transaction API handlers call."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.clock = broker.clock
        extra = broker.config.extra
        self.num_partitions = txn_topic_partitions(extra)
        self.coordinator = TransactionCoordinator(
            broker.producers.ids.next_id, _int(extra, "transaction.max.timeout.ms", 900_000),
            features.finalized_level(features.TRANSACTION_VERSION))
        self.abort_interval_ms = _int(
            extra, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10_000)
        self.expiration_ms = _int(extra, "transactional.id.expiration.ms", 604_800_000)
        self.expiration_interval_ms = _int(
            extra, "transaction.remove.expired.transaction.cleanup.interval.ms", 3_600_000)
        self._completing: dict[str, asyncio.Task[None]] = {}
        self._todo: dict[str, set[TopicPartition]] = {}
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        self.broker.topics.ensure_internal(TXN_TOPIC, self.num_partitions, TXN_TOPIC_CONFIGS)
        loaded = sum(self._load(p) for p in range(self.num_partitions))
        if loaded:
            log.info("loaded %d transaction records", loaded)
        self._task = asyncio.get_running_loop().create_task(self._maintenance())
        for tid in self.coordinator.pending_markers():
            self._spawn(tid)

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._completing.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._completing.clear()

    def _load(self, partition: int) -> int:
        count = 0
        for rec in keyed_records(self.broker.logs.get(TXN_TOPIC, partition)):
            try:
                tid = decode_key(rec.key)
                value = decode_value(rec.value)[0]
            except DecodeError:
                log.warning("skipping an undecodable record in %s-%d", TXN_TOPIC, partition)
                continue
            if value is not None:
                self.broker.producers.ids.observe(value.producer_id)
            self.coordinator.replay(tid, value)
            count += 1
        return count

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    # -- writing ---------------------------------------------------------------------------

    def _write(self, op: TxnOp, now: int) -> int:
        """Append the op's record, then apply it; an error code if the append failed."""
        transit = op.transit
        assert transit is not None
        value = None if transit.state == S.DEAD else encode_value(transit.to_value())
        batch = build_batch([(encode_key(op.tid), value, (), now)], base_timestamp=now)
        try:
            self.broker.append(TXN_TOPIC, self.partition_for(op.tid), batch, now)
        except RecordBatchTooLargeError as exc:
            # TransactionStateManager.appendTransactionToLog: MESSAGE_TOO_LARGE becomes
            # UNKNOWN_SERVER_ERROR (not retriable: the same transition would fail again).
            log.warning("transition of %r refused by %s: %s", op.tid[:256], TXN_TOPIC, exc)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        except (OSError, StorageError, KeyError):
            log.exception("append to %s failed for %r", TXN_TOPIC, op.tid)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.coordinator.apply(op.tid, transit)
        return 0

    # -- the APIs --------------------------------------------------------------------------

    async def init_producer_id(self, tid: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> TxnOp:
        now = self.clock.now_ms()
        op = self.coordinator.init_producer_id(tid, timeout_ms, expected, now)
        if op.transit is None:
            return op
        error = self._write(op, now)
        if error:
            return TxnOp(error=error)
        if op.writes_markers:
            await self._complete(tid)
            return TxnOp(error=ErrorCode.CONCURRENT_TRANSACTIONS)
        return op

    def add_partitions(self, tid: str, pid: int, epoch: int,
                       partitions: list[TopicPartition], client_tv: int = 0) -> int:
        now = self.clock.now_ms()
        op = self.coordinator.add_partitions(tid, pid, epoch, partitions, now, client_tv)
        if op.error or op.transit is None:
            return op.error
        return self._write(op, now)

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self.coordinator.verify_partitions(tid, pid, epoch, partitions)

    async def end_txn(self, tid: str, pid: int, epoch: int, commit: bool,
                      client_tv: int = 0) -> TxnOp:
        now = self.clock.now_ms()
        op = self.coordinator.end_txn(tid, pid, epoch, commit, now, client_tv)
        if op.error or op.transit is None:
            return op
        error = self._write(op, now)
        if error:
            return TxnOp(error=error)
        await self._complete(tid)
        return op

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
        md = self.coordinator.txns.get(tid)
        if md is None or md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return
        commit = md.state == S.PREPARE_COMMIT
        pid, epoch = md.producer_id, md.producer_epoch
        todo = self._todo.setdefault(tid, set(md.partitions))
        for tp in sorted(todo):
            error = await self._marker(tp, pid, epoch, commit)
            if error in _MARKER_DONE:
                todo.discard(tp)
            else:
                log.info("marker for %r on %s-%d failed (%d); will retry", tid, tp[0], tp[1],
                         error)
        if todo:
            return
        del self._todo[tid]
        now = self.clock.now_ms()
        op = self.coordinator.complete(tid, now)
        if op.transit is not None:
            self._write(op, now)

    async def _marker(self, tp: TopicPartition, pid: int, epoch: int, commit: bool) -> int:
        topic, partition = tp
        try:
            if topic == OFFSETS_TOPIC:
                groups: Any = self.broker.groups
                if not 0 <= partition < groups.num_partitions:
                    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # no such offsets partition
                result: int = await groups.complete_transaction(partition, pid, epoch,
                                                                COORDINATOR_EPOCH, commit)
                return result
            return write_marker(self.broker, topic, partition, pid, epoch, COORDINATOR_EPOCH,
                                commit, self.clock.now_ms())
        except (OSError, StorageError):
            log.exception("marker write to %s-%d failed", topic, partition)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    # -- periodic work ---------------------------------------------------------------------

    async def _maintenance(self) -> None:
        last_expiration = self.clock.now_ms()
        while True:
            await sleep_ms(self.clock, self.abort_interval_ms)
            try:
                self.abort_timed_out(self.clock.now_ms())
                now = self.clock.now_ms()
                if now - last_expiration >= self.expiration_interval_ms:
                    last_expiration = now
                    self.remove_expired(now)
            except Exception:
                log.exception("transaction maintenance pass failed")

    def abort_timed_out(self, now: int) -> list[str]:
        """Fence and abort transactions past their timeout; retry unfinished markers."""
        aborted = []
        for tid in self.coordinator.timed_out(now):
            op = self.coordinator.abort_timed_out(tid, now)
            if op.transit is not None and not self._write(op, now):
                log.info("aborting transaction %r: it exceeded its timeout", tid)
                aborted.append(tid)
        for tid in self.coordinator.pending_markers():
            self._spawn(tid)
        return aborted

    def remove_expired(self, now: int) -> list[str]:
        """Tombstone transactional ids idle longer than transactional.id.expiration.ms."""
        removed = []
        for tid in self.coordinator.expired(now, self.expiration_ms):
            md = self.coordinator.txns[tid]
            if not self._write(TxnOp(tid=tid, transit=md.prepare_dead()), now):
                removed.append(tid)
        return removed
