"""`__share_group_state` partitions as shards of the generic runtime: a loading state shard
answers COORDINATOR_LOAD_IN_PROGRESS, an unloaded one NOT_COORDINATOR (and its live
share-partitions go), loading it again replays its log; a failed append fail-stops the
shard through its `ShardTask`, which is ACTIVE again, with memory equal to the log, when the
caller hears COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run
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
from groupcoord.coordinator.share.partition import AckType, RecordState
from groupcoord.coordinator.share.state_shard import ShareStateShard
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode


def test_unloaded_state_shard_answers_not_coordinator_and_load_replays_it(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            key, p = sp.key, state_partition(sp)
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.ACCEPT])]) == 0
            before = durable_view(sp)
            runtime = shares.state.runtime

            runtime.unload(p)
            assert key not in shares.partitions  # the live share-partition went with it
            with pytest.raises(ApiError) as info:
                shares.store.get(key)
            assert info.value.code == ErrorCode.NOT_COORDINATOR
            for write in (lambda: shares.state.delete(key),
                          lambda: shares.partition(GROUP, topic, 0)):
                with pytest.raises(ApiError) as info:
                    await write()
                assert info.value.code == ErrorCode.NOT_COORDINATOR

            task = runtime.load(p)
            assert task.state is ShardState.LOADING
            with pytest.raises(ApiError) as info:
                await shares.state.initialize(key, 0)
            assert info.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await runtime.wait_loaded()
            again = await shares.partition(GROUP, topic, 0)
            assert durable_view(again) == before == rebuilt(b.broker, p).canonical()[key]
    run(go())


def test_failed_state_append_reloads_the_shard_through_its_task(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            key, p = sp.key, state_partition(sp)
            await shares.acquire(sp, TOPIC, "m1", 10, 1 << 20)
            task = shares.state.runtime.shards[p]
            first_shard = task.shard
            real = shares.state.append

            def failing(*args: Any, **kwargs: Any) -> Any:
                real(*args, **kwargs)  # the batch reaches the log, then the write "fails"
                raise OSError("fsync failed")
            shares.state.append = failing
            code = await shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.ACCEPT])])
            assert code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            # Reloaded before the answer: a new shard, ACTIVE, the batch cut off again.
            assert task.state is ShardState.ACTIVE and task.reloads == 1
            assert task.shard is not first_shard and isinstance(task.shard, ShareStateShard)
            assert rebuilt(b.broker, p).canonical()[key] == durable_view(sp) \
                == shares.store.canonical()[key]
            assert all(sp.records[o].state == RecordState.ACQUIRED for o in range(4))
            shares.state.append = real
            assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 3, [AckType.ACCEPT])]) == 0
            assert rebuilt(b.broker, p).canonical()[key] == durable_view(sp)
    run(go())
