"""The share-partition manager: in-flight record state of every share-partition of the
broker, acquisition-lock timers and share sessions, over `share_state.ShareStateLog`.

Mirrors Kafka's `SharePartitionManager` (broker side) with the default state persister:

- A share-partition is created on first fetch and initialized from the persisted state
  (rebuilt at start-up by replaying `__share_group_state-*`). A new one starts at the log
  end (`share.auto.offset.reset=latest`) or the log start (`earliest`); its ShareSnapshot
  is written before the share-partition exists, so that a restart keeps the same start.
- A ShareFetch / ShareAcknowledge / release / lock expiry plans its change on the
  `SharePartition` without changing it (`plan_*`), the durable part is written as a
  ShareUpdate (a ShareSnapshot every 500) through the state shard's queue and replayed,
  and only then are the acquisition locks taken and the reply sent. A failed write leaves
  the share-partition as it was (and fail-stops the state partition, see `share_state`);
  the caller gets COORDINATOR_NOT_AVAILABLE. Acquisitions are not persisted, so after a
  crash acquired records come back.
- One asyncio lock per share-partition key (`locked`, Kafka's `SharePartition` lock) is
  held from planning a change to applying it, across the await of its write: two fetches
  never plan the same records, and an acknowledge is never undone by a change planned
  before it was applied. Initialization, the admin writes and the DLQ writer take it too;
  a lock-expiry timer, which plans and applies within one drain, skips a held key
  (`busy`) and the holder re-arms it on release. A change applies only to the live
  share-partition it was planned on (a reset, delete or unload meanwhile replaced it:
  COORDINATOR_NOT_AVAILABLE, retriable).
- One keyed timer per share-partition, of the share-state shard that owns it
  (`state_shard.lock_timer_key`), fires at its earliest lock deadline (soft state, never
  persisted: an unload drops it and a load re-derives it), and a release wakes parked
  ShareFetches of that partition.
- A change that moved records to ARCHIVING (KIP-1191) hands the share-partition to the
  DLQ writer (`share_dlq`), which writes their DLQ records and then ARCHIVED; at start-up
  it resumes every persisted ARCHIVING record.

Single-threaded on the event loop: the key locks order only what awaits a write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import Clock
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.share.configs import broker_defaults, by_duration_ms, share_config
from groupcoord.coordinator.share.partition import (
    Acquired,
    ShareChange,
    ShareConfig,
    SharePartition,
)
from groupcoord.coordinator.share.sessions import ShareSession, ShareSessionCache
from groupcoord.coordinator.share.state_store import SharePartitionKey
from groupcoord.server import share_admin
from groupcoord.server.share_configs import GroupConfigStore
from groupcoord.server.share_dlq import ShareDlq, share_version_supports_dlq
from groupcoord.server.share_state import STATE_TOPIC, ShareStateLog
from groupcoord.storage.config import CorruptBatchError
from groupcoord.storage.transactions import collect_aborted_txns
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost

log = logging.getLogger("groupcoord.share")

__all__ = ["STATE_TOPIC", "ShareRuntime"]


class ShareRuntime:
    """All share-partitions and share sessions of the broker."""

    def __init__(self, broker: CoordinatorHost) -> None:
        # `group.share.*` broker settings (`serve --group-config`): the share-session limit
        # and the defaults of group configs.
        settings = GroupCoordinatorConfig.from_properties(broker.config.extra)
        self.broker = broker
        self.clock: Clock = broker.clock
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self.state = ShareStateLog(broker, self)
        self.store = self.state.store
        self.sessions = ShareSessionCache(settings.group_share_max_share_sessions)
        self.group_configs = GroupConfigStore(broker.logs.documents)
        self.defaults = broker_defaults(settings)
        self.dlq = ShareDlq(self)
        # Share-state initializations running after their heartbeat's reply, releases of
        # closed connections' sessions and DLQ flushes.
        self._after_reply: set[asyncio.Task[None]] = set()
        # The lock of each share-partition key someone holds or waits for, and how many.
        self._locks: dict[SharePartitionKey, tuple[asyncio.Lock, int]] = {}

    # -- start-up ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.group_configs.load()
        await self.state.start()
        resumed = await self.dlq.resume()
        if resumed:
            log.info("resuming the DLQ writes of %d share-partitions", resumed)

    async def stop(self) -> None:
        self.dlq.stop()
        pending = list(self._after_reply)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self.state.stop()

    def run_after_reply(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (a heartbeat's share-state initialization, `apis/share_state_init`; a
        closed connection's release; a DLQ flush) as a task of its own, as Kafka's
        `GroupCoordinatorService` puts `persisterInitialize` on a timer: the heartbeat is
        answered without waiting for it."""
        task = asyncio.get_running_loop().create_task(work)
        self._after_reply.add(task)
        task.add_done_callback(self._after_reply.discard)

    async def quiesce(self) -> None:
        """Until the work `run_after_reply` started, and the work that started, has ended
        (for tests on a manual clock: a fired DLQ flush writes on the loop)."""
        while self._after_reply:
            await asyncio.gather(*self._after_reply, return_exceptions=True)

    # -- share-partitions -------------------------------------------------------------------

    @asynccontextmanager
    async def locked(self, key: SharePartitionKey) -> AsyncIterator[None]:
        """Hold the share-partition's lock from planning a change to applying it; on
        release, arm its lock timer at the earliest lock deadline (a timer that fired
        meanwhile did nothing, see `busy`)."""
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                try:
                    yield
                finally:
                    sp = self.partitions.get(key)
                    self.state.arm_lock_timer(key, None if sp is None else sp.next_deadline())
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def busy(self, key: SharePartitionKey) -> bool:
        return key in self._locks

    async def partition(self, group_id: str, topic: Any, index: int) -> SharePartition:
        """The live share-partition, initialized on first use (ApiError
        COORDINATOR_NOT_AVAILABLE when its first snapshot cannot be written)."""
        key = (group_id, bytes(topic.topic_id), index)
        sp = self.partitions.get(key)
        if sp is None:
            async with self.locked(key):
                sp = self.partitions.get(key)
                if sp is None:  # not initialized by the holder this waited for
                    sp = await self._initialize(key, topic.name)
        return sp

    async def _initialize(self, key: SharePartitionKey, topic_name: str) -> SharePartition:
        config = self.config_of(key[0])
        persisted = self.store.get(key)
        if persisted is None or persisted.start_offset < 0:
            start = self._reset_offset(topic_name, key[2], config.auto_offset_reset)
            await self.state.initialize(key, start)
            persisted = self.store.get(key)
            assert persisted is not None
        sp = SharePartition(*key, config)
        sp.initialize(persisted.start_offset, persisted.batches(), persisted.state_epoch)
        self.partitions[key] = sp
        if sp.archiving(1):  # a DLQ write a crash interrupted (`maybeResumeDlqArchiving`)
            self.dlq.resume_loaded(sp, topic_name)
        return sp

    def _reset_offset(self, topic_name: str, index: int, policy: str) -> int:
        """`share.auto.offset.reset`: earliest, latest, or by_duration:<ISO-8601> (the first
        offset with a timestamp at or after now minus the duration, else the log end)."""
        plog = self.broker.topics.log(topic_name, index)
        if plog is None:
            return 0
        if policy == "earliest":
            return int(plog.log_start_offset)
        duration = by_duration_ms(policy)
        if duration is not None:
            found = plog.offset_for_timestamp(self.clock.now_ms() - duration)
            if found is not None:
                return int(found[0])
        return int(plog.log_end_offset)

    def live(self, key: SharePartitionKey) -> SharePartition | None:
        return self.partitions.get(key)

    def live_keys(self) -> list[SharePartitionKey]:
        return list(self.partitions)

    def drop(self, key: SharePartitionKey) -> None:
        """Forget a live share-partition (its state was reset or deleted)."""
        self.partitions.pop(key, None)
        self.dlq.forget(key)
        self.state.arm_lock_timer(key, None)

    def is_live(self, sp: SharePartition) -> bool:
        """`sp` is still the key's share-partition: not dropped (its state was reset or
        deleted, its state shard unloaded) since it was looked up."""
        return self.partitions.get(sp.key) is sp

    async def commit(self, sp: SharePartition, change: ShareChange, topic_name: str) -> int:
        """Write the change's durable part, replay it, then take its locks and wake
        waiting fetches; a Kafka error code (nothing applied on error). The caller holds
        `locked(sp.key)` since it planned `change`, and re-arms the lock timer by releasing it."""
        if change.durable:
            try:
                await self.state.write_state(sp.key, change.start_offset, change.changed,
                                             change.durable_batches, sp.state_epoch)
            except ApiError as exc:
                return int(exc.code)
        if not self.is_live(sp):
            # Dropped meanwhile: no lock may be handed out from it; the client retries
            # against the new share-partition.
            return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        self._applied(sp, change, topic_name)
        return 0

    def _applied(self, sp: SharePartition, change: ShareChange, topic_name: str) -> None:
        """The part of a change that follows its write: locks, DLQ writes, woken fetches."""
        sp.apply_locks(change)
        if change.causes:
            self.dlq.schedule(sp, topic_name)
        if change.durable and sp.next_fetch_offset() < sp.end_offset:
            self.broker.waiters.notify((topic_name, sp.partition))

    def locks_released(self, sp: SharePartition, change: ShareChange) -> None:
        """A lock expiry (the state shard's timer) was written and replayed."""
        topic = self.broker.topics.by_id(sp.topic_id)
        if topic is None:
            sp.apply_locks(change)
        else:
            self._applied(sp, change, topic.name)

    # -- fetch and acknowledge ----------------------------------------------------------------

    async def acquire(self, sp: SharePartition, topic_name: str, member_id: str,
                      max_records: int, max_bytes: int, record_limit: bool = False,
                      batch_size: int = 0) -> tuple[memoryview | None, list[Acquired]]:
        """Read the log from the next fetch offset, acquire, and return the covering bytes;
        ApiError when the share state cannot be written (nothing acquired then)."""
        async with self.locked(sp.key):
            return await self._acquire(sp, topic_name, member_id, max_records, max_bytes,
                                       record_limit, batch_size)

    async def _acquire(self, sp: SharePartition, topic_name: str, member_id: str,
                       max_records: int, max_bytes: int, record_limit: bool,
                       batch_size: int) -> tuple[memoryview | None, list[Acquired]]:
        if not self.is_live(sp):
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        plog = self.broker.topics.log(topic_name, sp.partition)
        if plog is None:
            return None, []
        if sp.start_offset < plog.log_start_offset:
            code = await self.commit(sp, sp.plan_move_start(plog.log_start_offset), topic_name)
            if code:
                raise ApiError(code)
        offset = sp.next_fetch_offset()
        upper = plog.log_end_offset
        if sp.config.read_committed:
            upper = int(self.broker.producer_state(topic_name, sp.partition)
                        .last_stable_offset(upper))
        if offset >= upper or sp.in_flight_count() >= sp.config.max_record_locks \
                and offset >= sp.end_offset:
            return None, []
        try:
            data = plog.read(offset, max_bytes, upper)
        except CorruptBatchError as exc:  # damaged stored bytes: Fetch's answer too
            raise ApiError(ErrorCode.CORRUPT_MESSAGE) from exc
        spans = _batch_spans(data)
        aborted = _aborted_batches(plog, offset, upper, data) if sp.config.read_committed \
            else frozenset()
        # A batch of an aborted transaction is, like a control batch, never delivered: it
        # is archived when first reached (`maybeFilterAbortedTransactionalAcquiredRecords`).
        change = sp.plan_acquire(member_id, self.clock.now_ms(),
                                 [(b, last, c or b in aborted) for b, last, c, _, _ in spans],
                                 max_records, record_limit, batch_size)
        code = await self.commit(sp, change, topic_name)
        if code:
            raise ApiError(code)
        acquired: list[Acquired] = change.result  # type: ignore[assignment]
        if not acquired:
            return None, []
        first, last = acquired[0].first_offset, acquired[-1].last_offset
        chosen = [(s, e) for b, lst, _c, s, e in spans if lst >= first and b <= last]
        return data[chosen[0][0]:chosen[-1][1]], acquired

    async def acknowledge(self, sp: SharePartition, topic_name: str, member_id: str,
                          batches: Sequence[Any]) -> int:
        async with self.locked(sp.key):
            if not self.is_live(sp):
                return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            change = sp.plan_acknowledge(member_id, [(b.first_offset, b.last_offset,
                                                      b.acknowledge_types) for b in batches],
                                         self.clock.now_ms())
            if change.result != 0:
                return int(change.result)  # type: ignore[call-overload]
            return await self.commit(sp, change, topic_name)

    async def release_session(self, session: ShareSession) -> None:
        """Release every record the session's member holds (session closed or lost)."""
        for topic_id, index in list(session.partitions):
            key = (session.group_id, topic_id, index)
            topic = self.broker.topics.by_id(topic_id)
            if key in self.partitions and topic is not None:
                await self._release(key, session.member_id, topic.name)

    async def _release(self, key: SharePartitionKey, member_id: str, topic_name: str) -> None:
        """Release the member's records; a failed write leaves them to their lock expiry."""
        async with self.locked(key):
            sp = self.partitions.get(key)
            if sp is None:
                return
            change = sp.plan_release_member(member_id)
            if change.result and await self.commit(sp, change, topic_name):
                log.warning("releasing %s's records of %s failed; their locks expire instead",
                            member_id, key)

    def connection_closed(self, connection_id: str) -> None:
        for session in self.sessions.remove_connection(connection_id):
            self.run_after_reply(self.release_session(session))

    def reconfigure(self, group_id: str) -> None:
        """Apply changed group configs to the group's live share-partitions."""
        config = self.config_of(group_id)
        for key, sp in self.partitions.items():
            if key[0] == group_id:
                sp.config = config

    def lock_duration_ms(self, group_id: str) -> int:
        return self.config_of(group_id).record_lock_duration_ms

    def config_of(self, group_id: str) -> ShareConfig:
        """The group's effective share-partition settings."""
        return share_config(self.group_configs.get(group_id), self.defaults,
                            share_version_supports_dlq())


    # -- admin (DescribeShareGroupOffsets / Alter / Delete, `groupcoord groups`) ---------

    def summary(self, group_id: str, topic: Any, index: int) -> share_admin.PartitionSummary:
        return share_admin.summary(self, group_id, topic, index)

    def state_partitions(self, group_id: str) -> dict[bytes, set[int]]:
        return share_admin.groups_with_state(self, group_id)

    async def reset_start_offset(self, group_id: str, topic: Any, index: int,
                                 offset: int) -> None:
        await share_admin.reset_start_offset(self, group_id, topic, index, offset)

    async def initialize_state(self, group_id: str, parts: dict[bytes, Any],
                               state_epoch: int = 0,
                               start_offsets: Mapping[bytes, int] | None = None) -> None:
        await share_admin.initialize_state(self, group_id, parts, state_epoch,
                                           start_offsets or {})

    async def delete_state(self, group_id: str, topic_id: bytes) -> None:
        await share_admin.delete_state(self, group_id, topic_id)

    async def delete_group_state(self, group_id: str) -> None:
        """Drop every share-partition of a deleted group (DeleteGroups on a share group)."""
        for topic_id in list(self.state_partitions(group_id)):
            await share_admin.delete_state(self, group_id, topic_id)

def _batch_spans(data: memoryview) -> list[tuple[int, int, bool, int, int]]:
    """(base offset, last offset, is control, start, end) of each whole batch in `data`."""
    from groupcoord.logformat.batch import iter_batches

    spans = []
    pos = 0
    for header, view in iter_batches(data):
        spans.append((header.base_offset, header.last_offset, header.is_control,
                      pos, pos + len(view)))
        pos += len(view)
    return spans


def _aborted_batches(plog: Any, offset: int, upper: int, data: memoryview) -> frozenset[int]:
    """Base offsets of the transactional batches in `data` whose transaction aborted
    (`SharePartition.fetchAbortedTransactionRecordBatches`)."""
    from groupcoord.logformat.batch import iter_batches

    found = collect_aborted_txns(plog, offset, upper)
    if not found:
        return frozenset()
    return frozenset(
        header.base_offset for header, _view in iter_batches(data)
        if header.is_transactional and not header.is_control
        and any(t.producer_id == header.producer_id
                and t.first_offset <= header.base_offset <= t.last_offset for t in found))
