"""One `__share_group_state` partition as a coordinator shard (Kafka's
`ShareCoordinatorShard` on the `CoordinatorRuntime`).

The handlers (write, initialize, delete, read share-partition state) read the shard's
`ShareStateStore` and return the records to write; the runtime appends them and only then
calls `replay`, the one path that changes durable share state. Replay also keeps the
broker's live share-partitions of this state partition equal to it (KIP-932 runs the share
coordinator and the share-partitions in one process here): a ShareUpdate or ShareSnapshot
is applied to the live share-partition, a tombstone or a reset behind its window drops it.
While the log loads, only the store is rebuilt; `on_loaded` then reloads every live
share-partition of the partition from it (after a fail-stop, the acquisition locks the log
agrees with are kept: they are soft state) and drops those without state.

Acquisition-lock expiry is a keyed timer of this shard (`lock_timer_key`, one per
share-partition at its earliest lock deadline), so it stops with an unload and `on_loaded`
re-derives it. A fired timer plans the release and returns its records; the released locks
are applied (and fetches woken) when those records are replayed, after the append.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from groupcoord.coordinator.offsets.store import NO_PRODUCER_ID
from groupcoord.coordinator.result import Result, ScheduleTimer, TimerOp
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.share.change import ShareChange
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.records_state import RecordState, StateBatch
from groupcoord.coordinator.share.state_store import (
    SNAPSHOT_RECORD_TYPE,
    SharePartitionKey,
    ShareStateStore,
    share_state_partition,
    snapshot_record,
    tombstone_record,
)
from groupcoord.logformat.coordinator_records import SHARE

LOCK_TIMER = "share-lock-expiry"


def lock_timer_key(key: SharePartitionKey) -> tuple[str, str, bytes, int]:
    """The keyed timer that expires the acquisition locks of share-partition `key`."""
    return (LOCK_TIMER, *key)


class LiveSharePartitions(Protocol):
    """The broker's live share-partitions, which replay keeps equal to the state."""

    def live(self, key: SharePartitionKey) -> SharePartition | None: ...

    def live_keys(self) -> Iterable[SharePartitionKey]: ...

    def drop(self, key: SharePartitionKey) -> None: ...

    def locks_released(self, sp: SharePartition, change: ShareChange) -> None:
        """A lock expiry's records were written: apply its locks, wake fetches."""


class ShareStateShard(Shard):
    """The persisted state of the share-partitions hashed to one state partition."""

    record_types = SHARE

    def __init__(self, partition: int, num_partitions: int, live: LiveSharePartitions) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.store = ShareStateStore()
        self._live = live
        # False while the log loads: live share-partitions are reconciled by on_loaded.
        self._loaded = False
        # Lock expiries being written: (their record, the change), applied when that very
        # record is replayed (a refused write leaves an entry no replay matches).
        self._expiring: dict[SharePartitionKey, tuple[Any, ShareChange]] = {}

    def owns(self, key: SharePartitionKey) -> bool:
        return share_state_partition(key, self.num_partitions) == self.partition

    def _live_keys(self) -> list[SharePartitionKey]:
        return [key for key in self._live.live_keys() if self.owns(key)]

    # -- replay: the one mutation path of durable share state ---------------------------
    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        self.store.replay(record)
        if not self._loaded:
            return
        key: Any = record.key
        spk = (key.group_id, bytes(key.topic_id), key.partition)
        sp = self._live.live(spk)
        if sp is None:
            return
        value: Any = record.value
        pending = self._expiring.pop(spk, None)
        expired = pending[1] if pending is not None and pending[0] is record else None
        if value is None:
            self._live.drop(spk)
        elif key.RECORD_TYPE == SNAPSHOT_RECORD_TYPE and value.start_offset < sp.start_offset:
            self._live.drop(spk)  # a reset behind the window: initialize again on next use
        else:
            sp.replay(value.start_offset, [StateBatch(b.first_offset, b.last_offset,
                                                      b.delivery_state, b.delivery_count)
                                           for b in value.state_batches])
            if expired is not None:
                self._live.locks_released(sp, expired)

    def on_loaded(self, now_ms: int) -> Result:
        """Reconcile the live share-partitions with the loaded state and re-arm their
        lock timers (dropped with the shard's other soft state at a fail-stop)."""
        self._loaded = True
        timers: list[TimerOp] = []
        for key in self._live_keys():
            persisted = self.store.get(key)
            sp = self._live.live(key)
            if persisted is None or persisted.start_offset < 0 or sp is None:
                self._live.drop(key)
                continue
            sp.reload(persisted.start_offset, persisted.batches(), persisted.state_epoch)
            deadline = sp.next_deadline()
            if deadline is not None:
                timers.append(ScheduleTimer(lock_timer_key(key), deadline))
        return Result(timers=timers)

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result | None:
        """A share-partition's lock timer: release the records whose lock expired
        (`SharePartition.releaseAcquisitionLockOnTimeout`) and re-arm for the next."""
        if key[0] != LOCK_TIMER:
            return None
        spk: SharePartitionKey = (key[1], key[2], key[3])
        sp = self._live.live(spk)
        if sp is None:
            return None
        change = sp.plan_expire_locks(now_ms)
        later = [r.deadline_ms for r in sp.records.values()
                 if r.state == RecordState.ACQUIRED and r.deadline_ms > now_ms]
        timers: list[TimerOp] = [ScheduleTimer(key, min(later))] if later else []
        records = self.store.write_records(
            spk, change.start_offset, change.changed, change.durable_batches, now_ms,
            sp.state_epoch) if change.durable else []
        if not records:
            self._live.locks_released(sp, change)
            return Result(timers=timers)
        self._expiring[spk] = (records[-1], change)
        return Result(records=records, timers=timers)

    def on_unloaded(self) -> None:
        """Another coordinator owns the state now: the live share-partitions go with it
        and initialize from the state again when it is back."""
        for key in self._live_keys():
            self._live.drop(key)

    # -- handlers -----------------------------------------------------------------------
    def write_state(self, key: SharePartitionKey, start_offset: int,
                    changed: Sequence[StateBatch], full: Callable[[], Sequence[StateBatch]],
                    state_epoch: int, now_ms: int) -> Result:
        """WriteShareGroupState: a ShareUpdate of the changed batches, or a ShareSnapshot
        of `full()` when one is due."""
        return Result(records=self.store.write_records(key, start_offset, changed, full,
                                                       now_ms, state_epoch))

    def initialize_state(self, key: SharePartitionKey, start_offset: int, state_epoch: int,
                         now_ms: int) -> Result:
        """InitializeShareGroupState (and a reset of the start offset): a ShareSnapshot."""
        return Result(records=[snapshot_record(key, start_offset, [], now_ms, state_epoch)])

    def delete_state(self, key: SharePartitionKey) -> Result:
        """DeleteShareGroupState: a tombstone, if there is state to delete."""
        if self.store.get(key) is None:
            return Result()
        return Result(records=[tombstone_record(key)])
