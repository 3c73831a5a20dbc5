"""A share-partition's change is planned, written through its state shard's queue and
applied while its lock is held (`ShareRuntime.locked`): what runs meanwhile never plans from
the state that pending write is about to change, and a state shard replaying its log after
a failed append is not read half-loaded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run, settle
from share_state_support import (
    GROUP,
    TOPIC,
    Ack,
    durable_view,
    earliest,
    make_topic,
    rebuilt,
    state_partition,
)

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.share.partition import AckType
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode


def test_a_lock_expiry_firing_while_an_acknowledge_is_written_does_not_undo_it(
        tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 4)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            ack = asyncio.ensure_future(
                shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.ACCEPT])]))
            await settle(lambda: shares.busy(sp.key))  # planned, its write queued
            # The locks expire before the write is applied: the expiry is queued behind it.
            clock.advance(sp.config.record_lock_duration_ms)
            assert await ack == 0
            await settle(lambda: not shares.busy(sp.key))
            # All acknowledged: the start moved past them (the expiry would have made them
            # available again).
            assert sp.start_offset == 4 and sp.counts()["ACQUIRED"] == 0
            p = state_partition(sp)
            assert rebuilt(b.broker, p).canonical()[sp.key] == durable_view(sp)
    run(go())


def test_concurrent_fetches_never_acquire_the_same_records(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            # m1 releases 0-3 (a write) while m2 and m3 fetch: each record goes to one.
            fetches = [shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.RELEASE])]),
                       shares.acquire(sp, TOPIC, "m2", 10, 1 << 20),
                       shares.acquire(sp, TOPIC, "m3", 10, 1 << 20)]
            done: list[Any] = await asyncio.gather(*fetches)
            assert done[0] == 0
            offsets = [[o for a in got for o in range(a.first_offset, a.last_offset + 1)]
                       for _data, got in done[1:]]
            assert sorted(offsets[0] + offsets[1]) == [0, 1, 2, 3]
            assert all(sp.records[o].member_id in ("m2", "m3") for o in range(4))
            assert rebuilt(b.broker, state_partition(sp)).canonical()[sp.key] == \
                durable_view(sp)
    run(go())


def test_state_reads_wait_for_the_reload_after_a_failed_append(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            key, p = sp.key, state_partition(sp)
            runtime = shares.state.runtime
            task = runtime.shards[p]
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            real = shares.state.append

            def failing(*args: Any, **kwargs: Any) -> Any:
                raise OSError("disk gone")
            shares.state.append = failing
            async with runtime.loading:  # the reload waits for its turn to replay
                ack = asyncio.ensure_future(
                    shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.ACCEPT])]))
                await settle(lambda: task.state is ShardState.RECOVERING)
                shares.state.append = real
                with pytest.raises(ApiError) as info:
                    shares.store.get(key)
                assert info.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE
                assert key not in shares.store.states
                assert not ack.done()  # answered once the reload has ended
            assert await ack == ErrorCode.COORDINATOR_NOT_AVAILABLE
            assert task.state is ShardState.ACTIVE
            persisted = shares.store.get(key)
            assert persisted is not None and persisted.start_offset == 0
            assert sp.counts()["ACQUIRED"] == 10
    run(go())
