"""One shard of a coordinator runtime: its task, queue, timers and parked replies
(`shard_runtime` holds every shard of a topic: `__consumer_offsets` for groups,
`__share_group_state` for share state). This module serves a loaded shard's operations;
loading, the reload after a failure and unloading are `shard_lifecycle`'s.

Mirrors a `CoordinatorRuntime.CoordinatorContext` of Kafka (coordinator-common). The task
replays the shard's partition (in slices of a few milliseconds, so other APIs are served
while a large partition loads), then runs queued operations one at a time. Write coalescing
as Kafka's `CoordinatorBatch`: the records of the operations drained from the queue are
replayed at once, at the offsets they will get, and appended together as one uncompressed
batch when the drain ends (Kafka 4.4's default `group.coordinator.append.linger.ms` is -1,
adaptive: the batch is written when the event queue is empty), or earlier before a
transactional write, when the batch would pass the partition's `max.message.bytes`, or at
`MAX_BATCH_RECORDS`. No response or deferred reply of the drain is released before that
append (with `--fsync always`, before one fsync covering the drain: a group commit).
Timers are keyed soft state armed on the broker's `Clock` (`shard_timers`); a fired timer is
an ordinary queued operation. Effects of a drain's operations (`Result.effects`) run once
its records are appended, through the runtime's `run_effect`. An append failure fail-stops
the shard: it reloads from its log, so what the failed batch replayed is gone, and then
every pending caller of the drain gets the runtime's `append_error` for it (Kafka's
`failCurrentBatch`, then the service's mapping: for groups a disk error is NOT_COORDINATOR),
so a retry meets the state the log holds; requests queued before the reload, and parked
ones, get COORDINATOR_NOT_AVAILABLE (RECOVERING). An append refused because another node
now leads the partition (cluster mode: `NotPartitionLeader`) unloads the shard instead, as a
leadership move does in Kafka: NOT_COORDINATOR to everyone. Records the log cannot take (a batch over the partition's
`max.message.bytes`, a value its record version cannot hold) fail only their operation,
before anything is appended: Kafka's runtime refuses such an atomic write with
`RecordTooLargeException`, which `GroupCoordinatorService.handleOperationException` answers
as UNKNOWN_SERVER_ERROR. Group events go to `__group_events` (see `group_events`).

States (`shard_lifecycle.ShardState`; Kafka's `activeContextOrThrow` is `check_active`): a
request for a LOADING shard is answered at once with COORDINATOR_LOAD_IN_PROGRESS (it does
not wait), for an unloaded one with NOT_COORDINATOR. A
shard with nothing to replay is ACTIVE on creation, so the first request of a new group
never sees LOAD_IN_PROGRESS.

Transactional writes to a group shard (Kafka's `scheduleTransactionalWriteOperation` /
`scheduleTransactionCompletion`): a transactional operation (TxnOffsetCommit) writes its
records in a transactional batch of the request's producer, so replay keeps them pending; an
`EndTxnWrite` operation appends the COMMIT/ABORT control batch on the same queue and replays
it. Both pass the log layer's producer-epoch checks (`ProducerEpochs`). (The transaction
coordinator's own shards write plain records through the queue like groups.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.result import Effect, Result, ScheduleTimer
from groupcoord.logformat.batch import HEADER_SIZE, build_batch
from groupcoord.server import group_events
from groupcoord.server.runtime.append_errors import AppendFailed, log_error
from groupcoord.server.runtime.coordinator_txn import EndTxnWrite
from groupcoord.server.runtime.op_queue import OpQueue
from groupcoord.server.runtime.runtime_metrics import BOUNDS_NS, bucket_of
from groupcoord.server.runtime.shard_host import Operation
from groupcoord.server.runtime.shard_lifecycle import ShardLifecycle, ShardState
from groupcoord.server.runtime.shard_log import (
    NO_PRODUCER_ID,
    WriteRefused,
    build_checked,
    encode_checked,
    refuse_if_too_large,
)
from groupcoord.server.runtime.shard_offload import Offloads
from groupcoord.server.runtime.shard_timers import ShardTimers
from groupcoord.storage.config import AppendPreconditionFailed, NotPartitionLeader
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.runtime.shard_host import ShardHost

log = logging.getLogger("groupcoord.coordinator")

# Most records one coalesced batch takes (bounds the batch a failed append fails).
MAX_BATCH_RECORDS = 4096
# Bytes one encoded record takes at most beyond its key and value: length prefix,
# attributes, timestamp and offset deltas, key and value lengths, header count.
RECORD_OVERHEAD_BOUND = 32

# (producer id, producer epoch) of a transactional operation; None for the others.
Txn = tuple[int, int] | None
# (operation, op context, caller's future, txn, `RuntimeMetrics.read_ns` when queued: 0 on a
# task that is not timed)
QueueItem = tuple[Operation, Any, "asyncio.Future[Any] | None", Txn, int]
# One record as `build_batch` takes it: (key, value, headers, timestamp).
Row = tuple[bytes, "bytes | None", tuple[()], int]


class ShardTask(ShardLifecycle):
    """One shard: its state object, queue, timers and parked replies."""

    def __init__(self, runtime: ShardHost, partition: int) -> None:
        super().__init__(runtime, partition)
        # The loop the task runs on, kept: asyncio.get_running_loop() costs a getpid()
        # system call on every call.
        self.loop = asyncio.get_running_loop()
        self.queue = OpQueue[QueueItem](self.loop)
        self.metrics = runtime.metrics
        self.read_ns = runtime.metrics.read_ns
        # Chosen once: an untimed task reads no clock and takes no branch per operation
        # beyond one per drain and per append (`runtime_metrics`).
        self.timed = runtime.metrics.enabled
        self.timers = ShardTimers(runtime, lambda op: self.submit(op, None, None))
        self.parked: dict[int, asyncio.Future[Any]] = {}
        self.offloads = Offloads(partition)
        # The pending write (Kafka's current `CoordinatorBatch`): rows of records already
        # replayed at offsets from `_batch_base` on, the bound of their encoded size, and
        # the group events to write once they are appended (see `_flush`).
        self._rows: list[Row] = []
        self._rows_bound = 0
        self._batch_base = 0
        self._batch_limit = 0
        self._batch_events: list[Any] = []
        self._batch_effects: list[Effect] = []
        # For `runtime_metrics`: when the batch's first row was staged; the drain's appends.
        self._batch_started_ns = 0
        self._append_ns = 0
        self._start()

    def _on_loaded(self) -> None:
        self._release([], self._apply(self._call(lambda s, _c, n: s.on_loaded(n))))
        self.timers.schedule_cleanup(self.shard)

    # -- the operation loop ----------------------------------------------------------------

    async def _main(self) -> None:
        while True:
            try:
                if self.state is not ShardState.ACTIVE:
                    try:
                        await self._load()
                    finally:
                        self._answer_failed_drain()
                await self._serve()
            except asyncio.CancelledError:
                raise
            except NotPartitionLeader:
                # Another node leads the partition now (it took the lease; this node's
                # write was fenced): resign, as Kafka's coordinator does when its
                # partition's leadership moves, rather than reload a shard that may no
                # longer write and would answer from what it last read meanwhile.
                log.warning("shard %s-%d: another node leads its partition; unloading",
                            self.topic, self.partition)
                self._answer_failed_drain()
                self.runtime.unload(self.partition)
                return
            except Exception:
                log.exception("shard %s-%d failed; reloading from its log", self.topic,
                              self.partition)
                await self._fail_stop()

    def check_active(self) -> None:
        """Kafka's `activeContextOrThrow`: a request is taken only by an ACTIVE shard."""
        state = self.state
        if state is ShardState.ACTIVE or state is ShardState.RECOVERING:
            return
        if state is ShardState.LOADING:
            raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        raise ApiError(ErrorCode.NOT_COORDINATOR)

    async def _serve(self) -> None:
        queue, read_ns, bucket, timed = self.queue, self.read_ns, bucket_of, self.timed
        # Counted inline: a call per sample costs more than the sample (`runtime_metrics`).
        queue_time = self.metrics.event_queue_time.counts
        processing_time = self.metrics.event_processing_time.counts
        while True:
            item = await queue.get()
            done: list[tuple[asyncio.Future[Any] | None, Any]] = []
            drain_start = self.runtime.log_end_offset(self.partition)
            try:
                if not timed:
                    self._run_one(item, done)
                    while not queue.empty():
                        item = queue.get_nowait()
                        self._run_one(item, done)
                    await self._flush_drain(done)
                    if self.runtime.fsync_always and self.runtime.written.pop(self.partition,
                                                                              False):
                        self.runtime.flush_shard(self.partition)
                else:
                    op_ends: list[int] = []
                    started = now = read_ns()
                    while True:
                        self._run_one(item, done)
                        end = read_ns()
                        queue_time[bucket(BOUNDS_NS, now - item[4])] += 1
                        processing_time[bucket(BOUNDS_NS, end - now)] += 1
                        op_ends.append(end)
                        now = end
                        if queue.empty():
                            break
                        item = queue.get_nowait()
                    await self._flush_drain(done)
                    self._sync_and_measure(started, end, op_ends)
            except Exception as exc:
                # The append (or its fsync) failed. Nothing drained so far was answered, so
                # its records are cut off again: every caller gets the kind's answer for the
                # append's error and the reload rebuilds exactly the state of what was
                # acknowledged before. A log another writer moved is not cut: what follows
                # `drain_start` is that writer's, and the refused batch wrote nothing.
                self._drop_batch()
                self.runtime.written.pop(self.partition, None)
                if not isinstance(exc, AppendPreconditionFailed):
                    self.runtime.discard_from(self.partition, drain_start)
                done.append((item[2], None))
                code, log_code = self.runtime.append_error(exc), log_error(exc)
                self._unanswered = [(fut, AppendFailed(code, log_code)) for fut, _ in done
                                    if fut is not None and not fut.done()]
                raise
            for fut, response in done:
                if fut is not None and not fut.done():
                    if isinstance(response, BaseException):
                        fut.set_exception(response)
                    else:
                        fut.set_result(response)

    def _run_one(self, item: QueueItem,
                 done: list[tuple[asyncio.Future[Any] | None, Any]]) -> None:
        op, op_ctx, fut, txn, _queued_ns = item
        if fut is not None and fut.done():
            return
        error = 0 if txn is None else self.producers.check(*txn)
        if error:
            # Kafka's log refuses the batch of a fenced producer before anything is written.
            done.append((fut, ApiError(error)))
            return
        try:
            result = self._call(op, op_ctx)
        except ApiError as exc:
            done.append((fut, exc))
            return
        except Exception:
            log.exception("coordinator operation failed on shard %d", self.partition)
            done.append((fut, ApiError(ErrorCode.UNKNOWN_SERVER_ERROR)))
            return
        try:
            applied = self._apply(result, txn, linger=True)
        except WriteRefused as exc:
            log.warning("write refused on shard %d: %s", self.partition, exc)
            done.append((fut, ApiError(ErrorCode.UNKNOWN_SERVER_ERROR)))
            return
        self._release(done, applied, fut, op_ctx)

    def _call(self, op: Operation, op_ctx: Any = None) -> Any:
        if op_ctx is None:
            op_ctx = self.runtime.op_context("", "", 0)
        return op(self.shard, op_ctx, self.clock.now_ms())

    def _apply(self, result: Result | EndTxnWrite | None, txn: Txn = None, *,
               linger: bool = False) -> Result | None:
        """Write + replay the records, then apply timers, write events and run effects.
        With `linger` (a drained operation) plain records join the pending batch, replayed
        at once, that `_serve` appends at the end of the drain (events and effects wait for
        that append); otherwise they are appended in a batch of their own before they are
        replayed. Replay changes only the shard's state, which a reload after a failed
        append rebuilds."""
        if result is None:
            return None
        if isinstance(result, EndTxnWrite):
            # A failed append propagates to _main, as for records: fail-stop and reload.
            self._flush()
            return result.write(self, self.clock.now_ms())
        records = result.records
        if records:
            if txn is None and linger:
                self._stage(records)
            else:
                # Transactional records are never coalesced (Kafka flushes such a batch at
                # once): they go in their own batch of the producer, after the pending one.
                self._flush()
                pid, epoch = txn if txn is not None else (NO_PRODUCER_ID, -1)
                runtime, timed = self.runtime, self.timed
                flush_start = self.read_ns() if timed else 0
                batch = encode_checked(records, self.clock.now_ms(), pid, epoch,
                                       self._max_message_bytes(), self.topic, self.partition)
                # A failure here propagates to _main: fail-stop and reload. Appended inline,
                # as in `_flush`: a call per write would cost an untimed task too.
                info = runtime.append(self.topic, self.partition, batch,
                                      self.clock.now_ms())
                runtime.written[self.partition] = True
                if timed:
                    self._append_ns += self.read_ns() - flush_start
                if txn is not None:
                    self.producers.observe(pid, epoch)
                # Replay learns each record's log offset: a COMMIT marker keeps the later of
                # a pending and a committed offset by comparing them.
                for index, record in enumerate(records):
                    self.shard.replay(record, info.base_offset + index, pid, epoch)
        for timer in result.timers:
            if isinstance(timer, ScheduleTimer):
                self.timers.schedule(timer.key, timer.deadline_ms)
            else:
                self.timers.cancel(timer.key)
        events = result.events
        if events:
            if self._rows:
                self._batch_events.extend(events)  # written once their records are
            else:
                group_events.write(self.runtime.broker, events)
        effects = result.effects
        if effects:
            if self._rows:
                self._batch_effects.extend(effects)  # run once their records are appended
            else:
                self._run_effects(effects)
        for task in getattr(result, "offloads", ()):
            self.offloads.start(task, self.runtime.offload_executor(),
                                lambda op: self.submit(op, None, None))
        if not linger:
            self._flush()
        return result

    def _stage(self, records: list[Any]) -> None:
        """Add an operation's records to the pending batch and replay them at the offsets
        they will get; WriteRefused (nothing staged or replayed) when the log would refuse
        them even alone. The pending batch is appended first if they would not fit in it."""
        now = self.clock.now_ms()
        try:
            rows: list[Row] = [(r.key_bytes(), r.value_bytes(), (), now) for r in records]
        except ValueError as exc:
            raise WriteRefused(str(exc)) from exc
        bound = RECORD_OVERHEAD_BOUND * len(rows)
        for key, value, _headers, _ts in rows:
            bound += len(key) + (0 if value is None else len(value))
        # Read once per batch: no config change can come between a drain's operations.
        limit = self._batch_limit if self._rows else self._max_message_bytes()
        if HEADER_SIZE + bound > limit:
            # Maybe too large even alone: its exact size decides.
            refuse_if_too_large(len(build_checked(rows)), limit, self.topic, self.partition)
        if self._rows and (len(self._rows) + len(rows) > MAX_BATCH_RECORDS
                           or HEADER_SIZE + self._rows_bound + bound > limit):
            self._flush()
        if not self._rows:
            self._batch_base = self.runtime.log_end_offset(self.partition)
            self._batch_limit = limit
            if self.timed:
                self._batch_started_ns = self.read_ns()
        base = self._batch_base + len(self._rows)
        self._rows.extend(rows)
        self._rows_bound += bound
        replay = self.shard.replay
        for index, record in enumerate(records):
            replay(record, base + index, NO_PRODUCER_ID, -1)

    def _flush(self) -> None:
        """Append the pending batch, whose records are replayed already, then write its
        group events. A failed append propagates (fail-stop: the reload drops what the
        batch replayed), and so does a log that no longer ends where the batch's replay
        began: the append names that end, and the log refuses the batch, writing nothing,
        if another writer moved it."""
        if self._rows:
            flush_start = self._flush_started()
            # Every row was encodable when staged: a failure here is a fail-stop too. The
            # append's time from `flush_start` (before encoding) counts in the drain's flush.
            batch, base = self._take_batch()
            self.runtime.append(self.topic, self.partition, batch, self.clock.now_ms(),
                                expected_end_offset=base)
            self._flushed(flush_start)
        self._after_flush()

    async def _flush_drain(self, done: list[tuple[asyncio.Future[Any] | None, Any]]) -> None:
        """`_flush` at the end of a drain. Where the partition's log writes off the loop
        (PostgreSQL), the append is awaited: the loop serves other work, and the queue
        fills on, so the next drain commits more records at once (a group commit). The
        drain's callers are answered only after it, as after `_flush`; if the shard is
        unloaded meanwhile they are answered NOT_COORDINATOR."""
        runtime = self.runtime
        if self._rows and runtime.writes_off_loop(self.partition):
            flush_start = self._flush_started()
            batch, base = self._take_batch()
            try:
                await runtime.append_off_loop(self.partition, batch, self.clock.now_ms(), base)
            except asyncio.CancelledError:
                self._drop_batch()
                error = ApiError(ErrorCode.NOT_COORDINATOR)
                for fut, _response in done:
                    if fut is not None and not fut.done():
                        fut.set_exception(error)
                raise
            self._flushed(flush_start)
        self._flush()

    def _flush_started(self) -> int:
        """The start of a pending batch's append (for `runtime_metrics`; 0 untimed)."""
        if not self.timed:
            return 0
        flush_start = self.read_ns()
        self.metrics.batch_linger_time.record(flush_start - self._batch_started_ns)
        return flush_start

    def _take_batch(self) -> tuple[bytes, int]:
        """The pending rows as one batch, and the log end their replay began at; none left
        pending."""
        rows = self._rows
        self._rows = []
        self._rows_bound = 0
        return build_batch(rows), self._batch_base

    def _flushed(self, flush_start: int) -> None:
        self.runtime.written[self.partition] = True
        if self.timed:
            self._append_ns += self.read_ns() - flush_start

    def _after_flush(self) -> None:
        """The pending batch appended: write its group events, run its effects."""
        events = self._batch_events
        if events:
            self._batch_events = []
            group_events.write(self.runtime.broker, events)
        effects = self._batch_effects
        if effects:
            self._batch_effects = []
            self._run_effects(effects)

    def _run_effects(self, effects: list[Effect]) -> None:
        """Hand the effects of appended records to the kind's runner. They are past the
        append: a runner that raises is logged, never taken for a failed append."""
        run = self.runtime.run_effect
        for effect in effects:
            try:
                run(effect)
            except Exception:
                log.exception("effect %r of shard %s-%d failed", effect, self.topic,
                              self.partition)

    def _sync_and_measure(self, started_ns: int, last_end_ns: int,
                          op_ends_ns: list[int]) -> None:
        """End of a timed drain: fsync what it appended (`--fsync always`,
        one fsync for the drain: a group commit), then record its flush, the time its
        replies waited for it and the time it held the loop."""
        runtime = self.runtime
        if runtime.written.pop(self.partition, False):
            released = synced = self.read_ns()
            if runtime.fsync_always:
                runtime.flush_shard(self.partition)
                released = self.read_ns()
            self.metrics.drain_released(started_ns, op_ends_ns,
                                        self._append_ns + released - synced, released)
            self._append_ns = 0
        else:
            self.metrics.busy_ns += last_end_ns - started_ns

    def _drop_batch(self) -> None:
        """Forget the pending batch (its append failed, or the shard reloads)."""
        self._rows = []
        self._rows_bound = 0
        self._batch_events = []
        self._batch_effects = []
        self._append_ns = 0

    def _max_message_bytes(self) -> int:
        # A missing partition is left to the append, which fail-stops the shard.
        plog = self.runtime.broker.topics.log(self.topic, self.partition)
        return plog.config.max_message_bytes if plog is not None else 1 << 62

    def _release(self, done: list[tuple[asyncio.Future[Any] | None, Any]],
                 result: Result | None, fut: asyncio.Future[Any] | None = None,
                 op_ctx: Any = None) -> None:
        if result is None:
            done.append((fut, None))
            return
        response = result.response
        if fut is not None:
            if response is None and op_ctx is not None and op_ctx.reply_token:
                self.parked[op_ctx.reply_token] = fut
                fut.add_done_callback(self._parked_done(op_ctx.reply_token))
            else:
                done.append((fut, response))
        for reply in result.deferred:
            waiter = self.parked.pop(reply.token, None)
            if waiter is not None:
                done.append((waiter, reply.response))

    def _parked_done(self, token: int) -> Callable[[asyncio.Future[Any]], None]:
        def on_done(fut: asyncio.Future[Any]) -> None:
            parked = fut.cancelled() and self.parked.pop(token, None) is not None
            if parked:
                self.submit(lambda s, _c, _n: s.on_client_disconnect([token]), None, None)
        return on_done

    def _fail_all(self, code: int = ErrorCode.COORDINATOR_NOT_AVAILABLE) -> None:
        err = ApiError(code)
        for parked in self.parked.values():
            if not parked.done():
                parked.set_exception(err)
        self.parked.clear()
        while not self.queue.empty():
            _op, _ctx, fut, _txn, _queued_ns = self.queue.get_nowait()
            if fut is not None and not fut.done():
                fut.set_exception(err)
        self.timers.cancel_all()
        self.offloads.clear()

    # -- submission ------------------------------------------------------------------------

    def submit(self, op: Operation, op_ctx: Any, fut: asyncio.Future[Any] | None,
               txn: Txn = None) -> None:
        # An untimed task reads no clock: 0 where a timed one stamps when it queued (a
        # branch costs less here than a method bound per task at creation).
        self.queue.put_nowait((op, op_ctx, fut, txn, self.read_ns() if self.timed else 0))
