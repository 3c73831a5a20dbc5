"""The coordinator runtime against a tiny fake shard: append-then-release, replay on load,
parked replies, keyed timers, group events and fail-stop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest
from broker_inproc import InProcBroker, run, settle

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.result import GroupEvent, Reply, Result, ScheduleTimer
from groupcoord.coordinator.shard import Shard
from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC, CoordinatorRuntime


class FakeShard(Shard):
    instances: ClassVar[list[FakeShard]] = []

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.offsets: dict[tuple[str, str, int], int | None] = {}
        self.fired: list[tuple[Any, ...]] = []
        self.disconnected: list[int] = []
        self.loaded_with = -1
        FakeShard.instances.append(self)

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        key = record.key
        value = record.value
        self.offsets[(key.group, key.topic, key.partition)] = None if value is None else value.offset

    def on_loaded(self, now_ms: int) -> Result:
        self.loaded_with = len(self.offsets)
        return Result()

    def commit(self, group: str, offset: int, now_ms: int) -> Result:
        record = offset_commit_record(group, "t", 0, offset, -1, "", now_ms, -1, bytes(16))
        return Result(records=[record], response=("committed", offset, dict(self.offsets)))

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result:
        self.fired.append(key)
        event = GroupEvent("g", "timer", None, "test", 1, now_ms, {"key": list(key)})
        return Result(events=[event])

    def on_client_disconnect(self, tokens: list[int]) -> Result:
        self.disconnected.extend(tokens)
        return Result()


async def _runtime(b: InProcBroker) -> CoordinatorRuntime:
    runtime = CoordinatorRuntime(b.broker, shard_factory=FakeShard)
    await runtime.start()
    return runtime


def _end_offset(b: InProcBroker, partition: int) -> int:
    plog = b.broker.topics.log(OFFSETS_TOPIC, partition)
    return plog.log_end_offset


def test_response_released_after_append_and_replay(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)
            p = rt.partition_for("g")
            resp = await rt.call("g", lambda s, c, n: s.commit("g", 5, n))
            # The shard saw its own record before the response was released.
            assert resp == ("committed", 5, {})
            assert rt.shards[p].shard.offsets == {("g", "t", 0): 5}
            assert _end_offset(b, p) == 1
            await rt.stop()
    run(go())


def test_shard_replays_its_log_on_first_use(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)
            for i in range(3):
                await rt.call("g", lambda s, c, n, i=i: s.commit("g", i, n))
            await rt.stop()
            rt2 = await _runtime(b)
            await settle(lambda: not rt2.loading_partitions())  # LOAD_IN_PROGRESS until then
            offsets = await rt2.call("g", lambda s, c, n: Result(response=dict(s.offsets)))
            assert offsets == {("g", "t", 0): 2}
            assert rt2.shards[rt2.partition_for("g")].shard.loaded_with == 1
            await rt2.stop()
    run(go())


def test_parked_reply_released_by_later_operation(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)
            tokens: list[int] = []

            def park(s: Any, ctx: Any, n: int) -> Result:
                tokens.append(ctx.reply_token)
                return Result(response=None)

            parked = asyncio.ensure_future(rt.call("g", park))
            await settle(lambda: tokens)
            assert not parked.done()
            done = await rt.call("g", lambda s, c, n: Result(
                response="second", deferred=[Reply(tokens[0], "first")]))
            assert done == "second" and await parked == "first"
            await rt.stop()
    run(go())


def test_cancelled_parked_call_notifies_shard(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)
            tokens: list[int] = []

            def park(s: Any, ctx: Any, n: int) -> Result:
                tokens.append(ctx.reply_token)
                return Result(response=None)

            parked = asyncio.ensure_future(rt.call("g", park))
            await settle(lambda: tokens)
            parked.cancel()
            shard = rt.shards[rt.partition_for("g")].shard
            await settle(lambda: shard.disconnected)
            assert shard.disconnected == tokens
            await rt.stop()
    run(go())


def test_keyed_timers_replace_and_fire_once(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            rt = await _runtime(b)
            def arm(s: Any, c: Any, n: int) -> Result:
                return Result(response="ok", timers=[ScheduleTimer(("hb", "m1"), n + 30),
                                                     ScheduleTimer(("hb", "m1"), n + 60)])

            await rt.call("g", arm)
            shard = rt.shards[rt.partition_for("g")].shard
            clock.advance(59)  # the replaced deadline (30) passed: nothing fires
            await rt.call("g", lambda s, c, n: Result(response="sync"))
            assert shard.fired == []
            clock.advance(1)
            await settle(lambda: shard.fired)
            clock.advance(1_000)
            await rt.call("g", lambda s, c, n: Result(response="sync"))
            assert shard.fired == [("hb", "m1")]
            events = b.broker.topics.log("__group_events", 0)
            assert events is not None and events.log_end_offset == 1
            await rt.stop()
    run(go())


def test_api_error_reaches_the_caller(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)

            def fail(s: Any, c: Any, n: int) -> Result:
                raise ApiError(25)

            with pytest.raises(ApiError) as info:
                await rt.call("g", fail)
            assert info.value.code == 25
            await rt.stop()
    run(go())


def test_failed_append_fail_stops_the_shard(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            rt = await _runtime(b)
            await rt.call("g", lambda s, c, n: s.commit("g", 1, n))
            real_append = b.broker.append

            def broken(*args: Any, **kwargs: Any) -> Any:
                raise OSError("disk full")

            b.broker.append = broken  # type: ignore[method-assign]
            with pytest.raises(ApiError) as info:
                await rt.call("g", lambda s, c, n: s.commit("g", 2, n))
            assert info.value.code == 16  # NOT_COORDINATOR: Kafka's answer to a disk error
            b.broker.append = real_append  # type: ignore[method-assign]
            # Queued behind the reload.
            resp = await rt.call("g", lambda s, c, n: s.commit("g", 3, n))
            # Reloaded from the log: the failed commit never happened.
            assert resp[2] == {("g", "t", 0): 1}
            await rt.stop()
    run(go())
