"""Share state under a failing `__share_group_state` append: the change is not applied,
the caller gets COORDINATOR_NOT_AVAILABLE, the state partition reloads from its log, memory
equals a replay of the log, and the retried operation succeeds. The disk fails through
`storage.faults.FaultInjectingFileIO` (short writes and refused writes)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from broker_inproc import InProcBroker, run, settle
from share_state_support import (
    GROUP,
    TOPIC,
    Ack,
    durable_view,
    earliest,
    kept_as_acknowledged,
    make_topic,
    rebuilt,
    state_partition,
)

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.share.partition import AckType, RecordState
from groupcoord.coordinator.share.state_shard import lock_timer_key
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.server.share_state import STATE_TOPIC
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.wire.errors import ErrorCode

SEGMENT = "00000000000000000000.log"
UNAVAILABLE = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)


def state_segment(partition: int) -> str:
    return f"{STATE_TOPIC}-{partition}/{SEGMENT}"


FAULTS = {
    "short-write": lambda io, p: io.add(FaultRule("write", errno.ENOSPC, suffix=state_segment(p),
                                                  times=2, short=True)),
    "eio": lambda io, p: io.add(FaultRule("write", errno.EIO, suffix=state_segment(p))),
    "short-write-truncate-refused": lambda io, p: (
        io.add(FaultRule("write", errno.ENOSPC, suffix=state_segment(p), times=2, short=True)),
        io.add(FaultRule("truncate", errno.EIO, suffix=state_segment(p)))),
}


def assert_memory_is_the_log(b: InProcBroker, sp_partition: int) -> None:
    shares = b.broker.shares
    replayed = rebuilt(b.broker, sp_partition).canonical()
    live = {k: v for k, v in shares.store.canonical().items()
            if k in replayed or k in shares.partitions}
    assert replayed == live
    for key, sp in shares.partitions.items():
        assert replayed[key] == durable_view(sp)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_failed_ack_write_fail_stops_reloads_and_the_retry_succeeds(
        tmp_path: Path, fault: str) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock, file_io=io) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            p = state_partition(sp)
            _data, got = await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            assert [(a.first_offset, a.last_offset) for a in got] == [(0, 9)]
            assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 2, [AckType.ACCEPT])]) == 0
            end_before = b.broker.logs.get(STATE_TOPIC, p).log_end_offset

            FAULTS[fault](io, p)
            code = await shares.acknowledge(sp, TOPIC, "m1", [Ack(3, 5, [AckType.ACCEPT])])
            assert code == UNAVAILABLE and io.fired
            assert shares.state.reloads == 1
            io.clear()
            # Nothing of the failed write is in the log or in memory; the locks stay.
            assert b.broker.logs.get(STATE_TOPIC, p).log_end_offset == end_before
            live = shares.partitions[sp.key]
            assert all(live.records[o].state == RecordState.ACQUIRED for o in range(3, 10))
            assert_memory_is_the_log(b, p)

            # The client retries: the same acknowledgement now goes through.
            assert await shares.acknowledge(live, TOPIC, "m1", [Ack(3, 5, [AckType.ACCEPT])]) == 0
            assert live.start_offset == 6
            assert_memory_is_the_log(b, p)
            for offset in range(6):
                assert kept_as_acknowledged(rebuilt(b.broker, p), live.key, offset)
    run(go())


def test_failed_lock_expiry_write_reloads_the_shard_and_redelivers(tmp_path: Path) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock, file_io=io) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            p = state_partition(sp)
            task = shares.state.runtime.shards[p]
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            lock_ms = sp.config.record_lock_duration_ms
            deadline = clock.now_ms() + lock_ms
            assert task.timers[lock_timer_key(sp.key)][2] == deadline
            io.add(FaultRule("write", errno.EIO, suffix=state_segment(p)))
            clock.advance(lock_ms)  # the expiry's write fails: the state shard fail-stops
            await settle(lambda: shares.state.reloads == 1
                         and task.state is ShardState.ACTIVE, turns=100_000)
            assert io.fired
            # The reload keeps the locks the log agrees with and re-arms their timer.
            assert sp.counts()["ACQUIRED"] == 4
            assert task.timers[lock_timer_key(sp.key)][2] == deadline
            assert_memory_is_the_log(b, p)
            clock.advance(0)  # the re-armed expiry writes: the records are available again
            await settle(lambda: sp.counts()["AVAILABLE"] == 4)
            assert_memory_is_the_log(b, p)
            assert lock_timer_key(sp.key) not in task.timers
            _data, again = await shares.acquire(sp, TOPIC, "m2", 10, 1 << 20)
            assert [(a.first_offset, a.last_offset, a.delivery_count) for a in again] == [
                (0, 3, 2)]
    run(go())


def test_unloading_the_state_shard_drops_its_lock_timers(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            p = state_partition(sp)
            runtime = shares.state.runtime
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            deadline = clock.now_ms() + sp.config.record_lock_duration_ms
            # (Besides the group coordinator's snapshot timer, armed on the loop.)
            assert clock.pending().count(deadline) == 1
            runtime.unload(p)  # resigned: the share-partition and its lock timer go
            assert deadline not in clock.pending() and sp.key not in shares.partitions
            with pytest.raises(ApiError) as info:
                await shares.partition(GROUP, topic, 0)
            assert info.value.code == ErrorCode.NOT_COORDINATOR
            task = runtime.load(p)
            await settle(lambda: task.state is ShardState.ACTIVE, turns=100_000)
            again = await shares.partition(GROUP, topic, 0)
            # Acquisitions are not persisted: nothing is locked, no timer is armed.
            assert again.counts()["ACQUIRED"] == 0 and lock_timer_key(again.key) not in task.timers
            _data, got = await shares.acquire(again, TOPIC, "m2", 10, 1 << 20)
            assert [(a.first_offset, a.last_offset) for a in got] == [(0, 3)]
            assert task.timers[lock_timer_key(again.key)][2] == \
                clock.now_ms() + again.config.record_lock_duration_ms
            clock.advance(again.config.record_lock_duration_ms)
            await settle(lambda: again.counts()["AVAILABLE"] == 4)
            assert_memory_is_the_log(b, p)
    run(go())


def test_failed_first_snapshot_leaves_no_share_partition(tmp_path: Path) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        async with InProcBroker(tmp_path, clock=ManualClock(), file_io=io) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            io.add(FaultRule("write", errno.ENOSPC, suffix=SEGMENT, times=None))
            with pytest.raises(ApiError) as info:
                await shares.partition(GROUP, topic, 0)
            assert info.value.code == UNAVAILABLE and not shares.partitions
            io.clear()
            assert (await shares.partition(GROUP, topic, 0)).start_offset == 4
    run(go())
