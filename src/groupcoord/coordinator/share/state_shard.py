"""One `__share_group_state` partition as a coordinator shard (Kafka's
`ShareCoordinatorShard` on the `CoordinatorRuntime`).

The handlers (write, initialize, delete, read share-partition state) read the shard's
`ShareStateStore` and return the records to write, answered NONE once they are appended;
`replay`, the one path that changes durable share state, changes only that store. The
broker's live share-partitions of this state partition (KIP-932 runs the share coordinator
and the share-partitions in one process here) follow through effects, which the runtime
runs once the records are appended (`apply_effect`): with `StateWritten` a ShareUpdate or
ShareSnapshot is applied to the live share-partition, and a tombstone or a reset behind its
window drops it. `on_loaded` reloads every live share-partition of the partition from the
loaded store (after a fail-stop, the acquisition locks the log agrees with are kept: they
are soft state) and drops those without state.

Acquisition-lock expiry is a keyed timer of this shard (`lock_timer_key`, one per
share-partition at its earliest lock deadline), so it stops with an unload and `on_loaded`
re-derives it. A fired timer plans the release and returns its records; the released locks
are applied (and fetches woken) by its `LocksExpired` effect, after the append (never, if
the append fails). A drain runs its operations, append and effects in one step of the event
loop, so nothing changes the share-partition between that plan and its effect. A timer
that fires while the share-partition is `busy` (a ShareFetch, ShareAcknowledge, release or
DLQ write holds its lock, between planning and applying its own change) does nothing: the
holder re-arms the timer when it lets go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from groupcoord.coordinator.offsets.store import NO_PRODUCER_ID
from groupcoord.coordinator.result import Effect, Result, ScheduleTimer, TimerOp
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
from groupcoord.logformat.coordinator_records import SHARE, CoordinatorRecord
from groupcoord.wire.errors import ErrorCode

LOCK_TIMER = "share-lock-expiry"


def lock_timer_key(key: SharePartitionKey) -> tuple[str, str, bytes, int]:
    """The keyed timer that expires the acquisition locks of share-partition `key`."""
    return (LOCK_TIMER, *key)


class LiveSharePartitions(Protocol):
    """The broker's live share-partitions, which replay keeps equal to the state."""

    def live(self, key: SharePartitionKey) -> SharePartition | None: ...

    def live_keys(self) -> Iterable[SharePartitionKey]: ...

    def drop(self, key: SharePartitionKey) -> None: ...

    def busy(self, key: SharePartitionKey) -> bool:
        """A change of the share-partition is planned and not yet applied (or waits to be);
        its holder re-arms the lock timer when done."""

    def locks_released(self, sp: SharePartition, change: ShareChange) -> None:
        """A lock expiry's records were written: apply its locks, wake fetches."""


@dataclass(frozen=True, slots=True)
class StateWritten(Effect):
    """A share-partition's state record was appended: its live share-partition takes it."""

    key: SharePartitionKey
    record: CoordinatorRecord


@dataclass(frozen=True, slots=True)
class LocksExpired(Effect):
    """A lock expiry planned on `sp` was written (its records, if any, before this): its
    locks are released and fetches woken, if `sp` is still the live share-partition."""

    sp: SharePartition
    change: ShareChange


def _written(records: list[CoordinatorRecord]) -> list[Effect]:
    effects: list[Effect] = []
    for record in records:
        key: Any = record.key
        effects.append(StateWritten((key.group_id, bytes(key.topic_id), key.partition), record))
    return effects


def apply_effect(live: LiveSharePartitions, effect: Effect) -> None:
    """Run a state shard's effect on the live share-partitions (after the append)."""
    if isinstance(effect, StateWritten):
        sp = live.live(effect.key)
        if sp is None:
            return
        key: Any = effect.record.key
        value: Any = effect.record.value
        if value is None:
            live.drop(effect.key)
        elif key.RECORD_TYPE == SNAPSHOT_RECORD_TYPE and value.start_offset < sp.start_offset:
            live.drop(effect.key)  # a reset behind the window: initialize again on next use
        else:
            sp.replay(value.start_offset, [StateBatch(b.first_offset, b.last_offset,
                                                      b.delivery_state, b.delivery_count)
                                           for b in value.state_batches])
    elif isinstance(effect, LocksExpired):
        if live.live(effect.sp.key) is effect.sp:
            live.locks_released(effect.sp, effect.change)
    else:
        raise TypeError(f"not a share-state effect: {effect!r}")


class ShareStateShard(Shard):
    """The persisted state of the share-partitions hashed to one state partition."""

    record_types = SHARE

    def __init__(self, partition: int, num_partitions: int, live: LiveSharePartitions) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.store = ShareStateStore()
        self._live = live

    def owns(self, key: SharePartitionKey) -> bool:
        return share_state_partition(key, self.num_partitions) == self.partition

    def _live_keys(self) -> list[SharePartitionKey]:
        return [key for key in self._live.live_keys() if self.owns(key)]

    # -- replay: the one mutation path of durable share state ---------------------------
    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        self.store.replay(record)

    def on_loaded(self, now_ms: int) -> Result:
        """Reconcile the live share-partitions with the loaded state and re-arm their
        lock timers (dropped with the shard's other soft state at a fail-stop)."""
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
        if sp is None or self._live.busy(spk):
            return None
        change = sp.plan_expire_locks(now_ms)
        later = [r.deadline_ms for r in sp.records.values()
                 if r.state == RecordState.ACQUIRED and r.deadline_ms > now_ms]
        timers: list[TimerOp] = [ScheduleTimer(key, min(later))] if later else []
        records = self.store.write_records(
            spk, change.start_offset, change.changed, change.durable_batches, now_ms,
            sp.state_epoch) if change.durable else []
        effects = _written(records)
        effects.append(LocksExpired(sp, change))
        return Result(records=records, timers=timers, effects=effects)

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
        records = self.store.write_records(key, start_offset, changed, full, now_ms,
                                           state_epoch)
        return Result(records=records, response=ErrorCode.NONE, effects=_written(records))

    def initialize_state(self, key: SharePartitionKey, start_offset: int, state_epoch: int,
                         now_ms: int) -> Result:
        """InitializeShareGroupState (and a reset of the start offset): a ShareSnapshot."""
        records = [snapshot_record(key, start_offset, [], now_ms, state_epoch)]
        return Result(records=records, response=ErrorCode.NONE, effects=_written(records))

    def delete_state(self, key: SharePartitionKey) -> Result:
        """DeleteShareGroupState: a tombstone, if there is state to delete."""
        if self.store.get(key) is None:
            return Result(response=ErrorCode.NONE)
        records = [tombstone_record(key)]
        return Result(records=records, response=ErrorCode.NONE, effects=_written(records))
