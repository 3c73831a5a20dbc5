"""The shard's operation queue (`op_queue.OpQueue`), the runtime's cached group id ->
partition mapping and its kept group callers: the hot-path replacements keep the
behaviour of what they replace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.server.runtime import coordinator_runtime
from groupcoord.server.runtime.op_queue import OpQueue
from tests.server.broker_inproc import InProcBroker, run


def _item(n: int) -> Any:
    return (lambda _s, _c, _n: n, None, None, None)


def test_items_come_out_in_order_and_get_waits_for_one() -> None:
    async def go() -> list[int]:
        queue = OpQueue(asyncio.get_running_loop())
        assert queue.empty()
        with pytest.raises(IndexError):
            queue.get_nowait()
        waiting = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)
        assert not waiting.done()
        queue.put_nowait(_item(1))
        queue.put_nowait(_item(2))
        got = [(await waiting)[0](None, None, 0), queue.get_nowait()[0](None, None, 0)]
        assert queue.empty()
        return got

    assert run(go()) == [1, 2]


def test_a_cancelled_get_leaves_the_queue_usable() -> None:
    async def go() -> int:
        queue = OpQueue(asyncio.get_running_loop())
        waiting = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.sleep(0)
        queue.put_nowait(_item(3))  # the cancelled waiter is skipped
        item = await queue.get()
        result: int = item[0](None, None, 0)
        return result

    assert run(go()) == 3


def test_cached_partitions_are_kafkas_and_the_cache_is_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordinator_runtime, "PARTITION_CACHE_SIZE", 3)

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            groups = b.broker.groups
            ids = [f"group-{i}" for i in range(10)] + ["group-0", "", "é-group"]
            for group_id in ids:
                assert groups.partition_for(group_id) == partition_for(
                    group_id, groups.num_partitions)
                assert len(groups._partition_of) <= 3

    run(go())


def test_a_client_keeps_its_group_caller_and_each_node_has_its_own(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            groups = b.broker.groups
            first = groups.bind("client", "/127.0.0.1", 0)
            assert groups.bind("client", "/127.0.0.1", 0) is first
            assert groups.bind(None, "/127.0.0.1", 0) is groups.bind("", "/127.0.0.1", 0)
            other = groups.bind("client", "/127.0.0.1", 1)
            assert other is not first
            assert (other.client_id, other.client_host, other.node_id) == (
                "client", "/127.0.0.1", 1)

    run(go())
