"""Share state under a failing `__share_group_state` append: the change is not applied,
the caller gets COORDINATOR_NOT_AVAILABLE, the state partition reloads from its log, memory
equals a replay of the log, and the retried operation succeeds. The disk fails through
`storage.faults.FaultInjectingFileIO` (short writes and refused writes)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from broker_inproc import InProcBroker, run
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
            sp = shares.partition(GROUP, topic, 0)
            p = state_partition(sp)
            _data, got = shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            assert [(a.first_offset, a.last_offset) for a in got] == [(0, 9)]
            assert shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 2, [AckType.ACCEPT])]) == 0
            end_before = b.broker.logs.get(STATE_TOPIC, p).log_end_offset

            FAULTS[fault](io, p)
            code = shares.acknowledge(sp, TOPIC, "m1", [Ack(3, 5, [AckType.ACCEPT])])
            assert code == UNAVAILABLE and io.fired
            assert shares.state.reloads == 1
            io.clear()
            # Nothing of the failed write is in the log or in memory; the locks stay.
            assert b.broker.logs.get(STATE_TOPIC, p).log_end_offset == end_before
            live = shares.partitions[sp.key]
            assert all(live.records[o].state == RecordState.ACQUIRED for o in range(3, 10))
            assert_memory_is_the_log(b, p)

            # The client retries: the same acknowledgement now goes through.
            assert shares.acknowledge(live, TOPIC, "m1", [Ack(3, 5, [AckType.ACCEPT])]) == 0
            assert live.start_offset == 6
            assert_memory_is_the_log(b, p)
            for offset in range(6):
                assert kept_as_acknowledged(rebuilt(b.broker, p), live.key, offset)
    run(go())


def test_failed_lock_expiry_write_retries_later_and_redelivers(tmp_path: Path) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock, file_io=io) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            earliest(b.broker)
            sp = shares.partition(GROUP, topic, 0)
            p = state_partition(sp)
            shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            lock_ms = sp.config.record_lock_duration_ms
            io.add(FaultRule("write", errno.EIO, suffix=state_segment(p)))
            clock.advance(lock_ms)  # the expiry's write fails: the locks stay, re-armed
            assert io.fired and shares.state.reloads == 1
            assert sp.counts()["ACQUIRED"] == 4
            assert clock.pending() == [clock.now_ms() + 1_000]
            assert_memory_is_the_log(b, p)
            clock.advance(1_000)  # the retry writes: the records are available again
            assert sp.counts()["AVAILABLE"] == 4
            assert_memory_is_the_log(b, p)
            _data, again = shares.acquire(sp, TOPIC, "m2", 10, 1 << 20)
            assert [(a.first_offset, a.last_offset, a.delivery_count) for a in again] == [
                (0, 3, 2)]
    run(go())


def test_failed_first_snapshot_leaves_no_share_partition(tmp_path: Path) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        async with InProcBroker(tmp_path, clock=ManualClock(), file_io=io) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            io.add(FaultRule("write", errno.ENOSPC, suffix=SEGMENT, times=None))
            with pytest.raises(ApiError) as info:
                shares.partition(GROUP, topic, 0)
            assert info.value.code == UNAVAILABLE and not shares.partitions
            io.clear()
            assert shares.partition(GROUP, topic, 0).start_offset == 4
    run(go())
