"""Acquisition-lock expiry as a keyed timer of the share-state shard
(`ShareStateShard.on_timer`), without a broker: the fired timer returns the release's
records, its effects and the next deadline; replay changes only the store, and the
released locks reach the live share-partition only when the effects of exactly that result
run (the runtime runs them after the append)."""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.result import Result, ScheduleTimer
from groupcoord.coordinator.share.change import ShareChange
from groupcoord.coordinator.share.partition import RecordState, SharePartition
from groupcoord.coordinator.share.state_shard import (
    ShareStateShard,
    apply_effect,
    lock_timer_key,
)
from groupcoord.coordinator.share.state_store import SharePartitionKey, share_state_partition

PARTITIONS = 50
KEY: SharePartitionKey = ("g", bytes(range(16)), 0)
LOCK_MS = 30_000


class Live:
    """The broker's live share-partitions, recording what the shard hands back."""

    def __init__(self) -> None:
        self.sps: dict[SharePartitionKey, SharePartition] = {}
        self.released: list[ShareChange] = []
        self.busy_keys: set[SharePartitionKey] = set()

    def live(self, key: SharePartitionKey) -> SharePartition | None:
        return self.sps.get(key)

    def live_keys(self) -> Iterable[SharePartitionKey]:
        return list(self.sps)

    def drop(self, key: SharePartitionKey) -> None:
        self.sps.pop(key, None)

    def busy(self, key: SharePartitionKey) -> bool:
        return key in self.busy_keys

    def locks_released(self, sp: SharePartition, change: ShareChange) -> None:
        sp.apply_locks(change)
        self.released.append(change)


def appended(shard: ShareStateShard, live: Live, result: Result) -> None:
    """What the runtime does once the result's records are appended: replay, effects."""
    for record in result.records:
        shard.replay(record)
    for effect in result.effects:
        apply_effect(live, effect)


def loaded_shard() -> tuple[ShareStateShard, Live, SharePartition]:
    live = Live()
    shard = ShareStateShard(share_state_partition(KEY, PARTITIONS), PARTITIONS, live)
    for record in shard.initialize_state(KEY, 0, 0, 0).records:
        shard.replay(record)
    sp = SharePartition(*KEY)
    persisted = shard.store.get(KEY)
    assert persisted is not None
    sp.initialize(persisted.start_offset, persisted.batches())
    live.sps[KEY] = sp
    loaded = shard.on_loaded(0)
    assert loaded.timers == []  # nothing acquired yet
    return shard, live, sp


def test_the_fired_timer_writes_the_release_and_rearms_for_the_next_lock() -> None:
    shard, live, sp = loaded_shard()
    sp.acquire("m1", 1_000, [(0, 3, False)], 100)
    sp.acquire("m2", 5_000, [(4, 5, False)], 100)
    # A load re-derives the timer at the earliest lock deadline.
    assert shard.on_loaded(5_000).timers == [ScheduleTimer(lock_timer_key(KEY),
                                                           1_000 + LOCK_MS)]
    result = shard.on_timer(lock_timer_key(KEY), 1_000 + LOCK_MS)
    assert result is not None and len(result.records) == 1
    assert result.timers == [ScheduleTimer(lock_timer_key(KEY), 5_000 + LOCK_MS)]
    # Nothing is released before the records are appended: replay alone changes the store.
    assert sp.counts()["ACQUIRED"] == 6 and live.released == []
    shard.replay(result.records[0])
    assert sp.counts()["ACQUIRED"] == 6 and live.released == []
    for effect in result.effects:
        apply_effect(live, effect)
    assert len(live.released) == 1
    assert [sp.records[o].state for o in range(6)] == [RecordState.AVAILABLE] * 4 + [
        RecordState.ACQUIRED] * 2


def test_a_write_that_never_happened_applies_nothing_later() -> None:
    shard, live, sp = loaded_shard()
    sp.acquire("m1", 1_000, [(0, 3, False)], 100)
    refused = shard.on_timer(lock_timer_key(KEY), 1_000 + LOCK_MS)
    assert refused is not None and refused.records  # the runtime refuses this write
    # Another write of the share-partition is appended: the refused expiry is not applied.
    appended(shard, live, shard.write_state(KEY, 0, [], sp.durable_batches, sp.state_epoch,
                                            2_000 + LOCK_MS))
    assert live.released == [] and sp.counts()["ACQUIRED"] == 4


def test_timers_of_other_kinds_and_of_dropped_partitions_do_nothing() -> None:
    shard, live, sp = loaded_shard()
    sp.acquire("m1", 1_000, [(0, 3, False)], 100)
    assert shard.on_timer(("other",), 1_000 + LOCK_MS) is None
    live.drop(KEY)
    assert shard.on_timer(lock_timer_key(KEY), 1_000 + LOCK_MS) is None


def test_a_timer_of_a_busy_share_partition_leaves_it_to_the_holder() -> None:
    """A change is planned and its write awaited (the share-partition's lock is held): the
    expiry does not plan beside it; the holder re-arms the timer when it lets go."""
    shard, live, sp = loaded_shard()
    sp.acquire("m1", 1_000, [(0, 3, False)], 100)
    live.busy_keys.add(KEY)
    assert shard.on_timer(lock_timer_key(KEY), 1_000 + LOCK_MS) is None
    assert sp.counts()["ACQUIRED"] == 4
    live.busy_keys.clear()
    result = shard.on_timer(lock_timer_key(KEY), 1_000 + LOCK_MS)
    assert result is not None
    appended(shard, live, result)
    assert sp.counts()["ACQUIRED"] == 0 and len(live.released) == 1
