"""Load and unload of a coordinator shard, answered as Kafka's `CoordinatorRuntime` does:
COORDINATOR_LOAD_IN_PROGRESS while a shard replays (at once, the request does not wait),
NOT_COORDINATOR once it is unloaded (queued and parked requests too), and a later load
rebuilds the state from the log. Runs on the manual clock: no time passes unless a test
advances it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run, settle

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.result import Result, ScheduleTimer
from groupcoord.coordinator.shard import Shard
from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime, ShardState
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse


class CountingShard(Shard):
    """Offsets by group, replayed from the log; `fired` lists timers that ran."""

    def __init__(self, partition: int) -> None:
        self.offsets: dict[str, int] = {}
        self.fired: list[tuple[Any, ...]] = []

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        self.offsets[record.key.group] = record.value.offset

    def on_loaded(self, now_ms: int) -> Result:
        return Result()

    def commit(self, group: str, offset: int, now_ms: int) -> Result:
        record = offset_commit_record(group, "t", 0, offset, -1, "", now_ms, -1, bytes(16))
        return Result(records=[record], response=offset,
                      timers=[ScheduleTimer(("expire", group), now_ms + 1000)])

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result:
        self.fired.append(key)
        return Result()


async def _runtime(b: InProcBroker) -> CoordinatorRuntime:
    runtime = CoordinatorRuntime(b.broker, shard_factory=CountingShard)
    await runtime.start()
    return runtime


async def _code(call: Any) -> int:
    try:
        await call
    except ApiError as exc:
        return int(exc.code)
    return 0


def test_a_shard_without_log_serves_its_first_request(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            rt = await _runtime(b)
            assert await rt.call("g", lambda s, c, n: s.commit("g", 1, n)) == 1
            assert rt.shards[rt.partition_for("g")].state is ShardState.ACTIVE
            await rt.stop()
    run(go())


def test_a_loading_shard_answers_load_in_progress_at_once(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            rt = await _runtime(b)
            await rt.call("g", lambda s, c, n: s.commit("g", 7, n))
            await rt.stop()
            rt2 = await _runtime(b)  # the shard has a log: it loads in the background
            p = rt2.partition_for("g")
            assert rt2.loading_partitions() == [p]
            assert await _code(rt2.call("g", lambda s, c, n: Result(response=1))) \
                == E.COORDINATOR_LOAD_IN_PROGRESS
            await settle(lambda: not rt2.loading_partitions())
            got = await rt2.call("g", lambda s, c, n: Result(response=dict(s.offsets)))
            assert got == {"g": 7}
            await rt2.stop()
    run(go())


def test_unload_answers_not_coordinator_and_load_replays_the_log(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            rt = await _runtime(b)
            p = rt.partition_for("g")
            for i in range(3):
                await rt.call("g", lambda s, c, n, i=i: s.commit("g", i, n))
            old = rt.shards[p]
            parked_tokens: list[int] = []

            def park(s: Any, ctx: Any, n: int) -> Result:
                parked_tokens.append(ctx.reply_token)
                return Result(response=None)

            parked = asyncio.ensure_future(rt.call("g", park))
            await settle(lambda: parked_tokens)
            rt.unload(p)
            assert await _code(parked) == E.NOT_COORDINATOR
            assert old.state is ShardState.UNLOADED and old.timers == {}
            assert await _code(rt.call("g", lambda s, c, n: Result(response=1))) \
                == E.NOT_COORDINATOR
            # The unloaded shard's timers are gone: nothing fires on the old state.
            clock.advance(5000)
            await settle(lambda: old.task.done())
            assert old.shard.fired == []
            rt.load(p)
            assert await _code(rt.call("g", lambda s, c, n: Result(response=1))) \
                == E.COORDINATOR_LOAD_IN_PROGRESS
            await settle(lambda: not rt.loading_partitions())
            got = await rt.call("g", lambda s, c, n: Result(response=dict(s.offsets)))
            assert got == {"g": 2}
            await rt.stop()
    run(go())


def test_unload_fails_queued_requests_with_not_coordinator(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            rt = await _runtime(b)
            p = rt.partition_for("g")
            await rt.call("g", lambda s, c, n: s.commit("g", 1, n))
            # Submitted but not yet run by the shard task when the unload comes.
            queued = [asyncio.ensure_future(rt.call("g", lambda s, c, n: s.commit("g", 9, n)))
                      for _ in range(3)]
            await asyncio.sleep(0)
            rt.unload(p)
            assert [await _code(q) for q in queued] == [E.NOT_COORDINATOR] * 3
            rt.load(p)
            await settle(lambda: not rt.loading_partitions())
            got = await rt.call("g", lambda s, c, n: Result(response=dict(s.offsets)))
            assert got == {"g": 1}  # nothing of the refused requests was written
            await rt.stop()
    run(go())


@pytest.mark.parametrize("unloaded", [True, False])
def test_list_groups_skips_unloaded_shards_and_reports_loading_ones(
        tmp_path: Path, unloaded: bool) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            c = await b.client()
            beat = ConsumerGroupHeartbeatRequest(
                group_id="g", member_id="m" * 22, member_epoch=0, rebalance_timeout_ms=10_000,
                subscribed_topic_names=["t"], topic_partitions=[])
            assert (await c.call(beat, 0, ConsumerGroupHeartbeatResponse)).error_code == 0
            rt = b.broker.groups
            p = rt.partition_for("g")
            rt.unload(p)
            if not unloaded:
                rt.load(p)  # the partition has a log: LOADING until its replay ends
            join = JoinGroupRequest(group_id="g", session_timeout_ms=10_000,
                                    rebalance_timeout_ms=10_000, member_id="",
                                    protocol_type="consumer",
                                    protocols=[JoinGroupRequestProtocol(name="range",
                                                                        metadata=b"")])
            async with rt.loading:  # holds the replay back: the shard stays LOADING
                listed = await c.call(ListGroupsRequest(), 4, ListGroupsResponse)
                joined = await c.call(join, 5, JoinGroupResponse)
                beat.member_epoch = 1
                again = await c.call(beat, 0, ConsumerGroupHeartbeatResponse)
            want = E.NOT_COORDINATOR if unloaded else E.COORDINATOR_LOAD_IN_PROGRESS
            if unloaded:
                assert (listed.error_code, listed.groups) == (0, [])
            else:
                assert listed.error_code == want
            assert (joined.error_code, again.error_code) == (want, want)
            rt.load(p)
            await settle(lambda: not rt.loading_partitions())
            listed = await c.call(ListGroupsRequest(), 4, ListGroupsResponse)
            assert listed.error_code == 0 and [g.group_id for g in listed.groups] == ["g"]
    run(go())
