"""The `__share_group_state` side of share groups: its shards on the generic runtime.

Mirrors Kafka's `ShareCoordinatorService` over the `CoordinatorRuntime` that also hosts the
group coordinator: each of the topic's partitions is a `ShareStateShard` run by a
`ShardTask`, so only replay changes state, load answers
COORDINATOR_LOAD_IN_PROGRESS and unload NOT_COORDINATOR, as for groups. Every write is a
queued operation like a group's: the handler returns the records and their effects, the
runtime appends and replays them (coalesced with the rest of its drain), then runs the
effects, which update the live share-partitions (`state_shard.apply_effect`), and only then
answers the caller. A failed append fail-stops the shard, which reloads from its log before
the caller gets COORDINATOR_NOT_AVAILABLE (retriable, as Kafka's persister maps a share
coordinator that cannot write), so no request ever sees it half-loaded. The share-partitions
plan a change, await its write and apply its locks while holding their key's lock
(`share_runtime`), so nothing plans from a state a pending write is about to change. At
start-up every partition with a log is loaded before the broker serves. Acquisition-lock
expiry timers are keyed timers of these shards (`arm_lock_timer`); a fired one is queued
like any timer and plans from the state when it runs (skipped while its share-partition's
lock is held: the holder re-arms it).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.share.records_state import StateBatch
from groupcoord.coordinator.share.state_shard import (
    LiveSharePartitions,
    ShareStateShard,
    apply_effect,
    lock_timer_key,
)
from groupcoord.coordinator.share.state_store import (
    PersistedState,
    SharePartitionKey,
    share_state_partition,
)
from groupcoord.logformat.internal_topics import SHARE_STATE_TOPIC as STATE_TOPIC
from groupcoord.server.runtime.shard_runtime import ShardRuntime
from groupcoord.server.runtime.shard_task import ShardState, ShardTask
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost

log = logging.getLogger("groupcoord.share")

STATE_TOPIC_PARTITIONS = 50
STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}


def _shard_of(shard: Shard) -> ShareStateShard:
    assert isinstance(shard, ShareStateShard)
    return shard


def _state_shard(task: ShardTask) -> ShareStateShard:
    return _shard_of(task.shard)


class ShareStates:
    """The persisted state of every share-partition, read from the state shards that hold
    all of it: not while one loads, nor while it replays its log again after a failed
    append (its store is then partly replayed, and a reload yields to the loop)."""

    def __init__(self, runtime: ShardRuntime) -> None:
        self._runtime = runtime

    def _loaded(self) -> Iterator[ShareStateShard]:
        for task in list(self._runtime.shards.values()):
            if task.state is ShardState.ACTIVE:
                yield _state_shard(task)

    def get(self, key: SharePartitionKey) -> PersistedState | None:
        """The key's state; ApiError LOAD_IN_PROGRESS / NOT_COORDINATOR when its shard is
        loading or unloaded, COORDINATOR_NOT_AVAILABLE (what the failed write answered)
        while it reloads."""
        task = self._runtime.active_shard(share_state_partition(key, STATE_TOPIC_PARTITIONS))
        if task.state is ShardState.RECOVERING:
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return _state_shard(task).store.get(key)

    @property
    def states(self) -> dict[SharePartitionKey, PersistedState]:
        return {k: v for shard in self._loaded() for k, v in shard.store.states.items()}

    def canonical(self) -> dict[SharePartitionKey, tuple[int, dict[int, tuple[int, int]]]]:
        return {k: v for shard in self._loaded() for k, v in shard.store.canonical().items()}


class ShareStateLog:
    """The share-state shards, and the writes the share-partitions and admin APIs make."""

    def __init__(self, broker: CoordinatorHost, live: LiveSharePartitions) -> None:
        self.runtime = ShardRuntime(
            broker, STATE_TOPIC, STATE_TOPIC_PARTITIONS, STATE_TOPIC_CONFIGS,
            lambda partition: ShareStateShard(partition, STATE_TOPIC_PARTITIONS, live),
            partial(apply_effect, live))
        # Every write here is `run_now`'s, within one loop step: none is left to a drain.
        self.runtime.drains_off_loop = False
        self.store = ShareStates(self.runtime)

    async def start(self) -> None:
        await self.runtime.start()
        await self.runtime.wait_loaded()

    async def stop(self) -> None:
        await self.runtime.stop()

    @property
    def append(self) -> Callable[..., Any]:
        """The append every share-state write goes through (tests inject faults here)."""
        return self.runtime.append

    @append.setter
    def append(self, append: Callable[..., Any]) -> None:
        self.runtime.append = append

    @property
    def reloads(self) -> int:
        """How many times a state shard failed and was reloaded (for tests and logs)."""
        return sum(task.reloads for task in self.runtime.shards.values())

    async def _write(self, key: SharePartitionKey,
                     op: Callable[[ShareStateShard, int], Result]) -> None:
        await self.runtime.call_shard(share_state_partition(key, STATE_TOPIC_PARTITIONS),
                                      lambda shard, _ctx, now: op(_shard_of(shard), now))

    # -- the writes: ApiError COORDINATOR_NOT_AVAILABLE after a failed append ------------

    async def write_state(self, key: SharePartitionKey, start_offset: int,
                          changed: Sequence[StateBatch],
                          full: Callable[[], Sequence[StateBatch]], state_epoch: int) -> None:
        await self._write(key, lambda shard, now: shard.write_state(
            key, start_offset, changed, full, state_epoch, now))

    async def initialize(self, key: SharePartitionKey, start_offset: int,
                         state_epoch: int = 0) -> None:
        await self._write(key, lambda shard, now: shard.initialize_state(
            key, start_offset, state_epoch, now))

    async def delete(self, key: SharePartitionKey) -> None:
        await self._write(key, lambda shard, _now: shard.delete_state(key))

    # -- lock timers ------------------------------------------------------------------

    def arm_lock_timer(self, key: SharePartitionKey, deadline_ms: int | None) -> None:
        """Arm the share-partition's lock-expiry timer at `deadline_ms` on the state shard
        that owns it (None: disarm); nothing while that shard is not serving, whose load
        re-derives the timers."""
        task = self.runtime.shards.get(share_state_partition(key, STATE_TOPIC_PARTITIONS))
        if task is None or task.state not in (ShardState.ACTIVE, ShardState.RECOVERING):
            return
        timer = lock_timer_key(key)
        if deadline_ms is None:
            task.timers.cancel(timer)
        else:
            current = task.timers.get(timer)
            if current is None or current[2] != deadline_ms:
                task.timers.schedule(timer, deadline_ms)
