"""The runtime runs an offloaded target assignment on its worker thread and writes the
result by a later operation: with `group.consumer.assignor.offload.enable=true` a second
member joins, and the first member's heartbeats bring it the new target (half the
partitions) once the worker has computed it."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, settle

from groupcoord.coordinator.consumer import target_offload
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

OFFLOAD = {"group.consumer.assignor.offload.enable": "true",
           "group.consumer.assignment.interval.ms": "0"}


def test_an_offloaded_target_reaches_the_member(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    compute = target_offload.compute_target

    def recording(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return compute(*args)

    monkeypatch.setattr(target_offload, "compute_target", recording)

    async def heartbeat(client: Any, member_id: str, epoch: int,
                        owned: list[int]) -> ConsumerGroupHeartbeatResponse:
        joining = epoch == 0
        response: ConsumerGroupHeartbeatResponse = await client.call(
            ConsumerGroupHeartbeatRequest(
                group_id="g", member_id=member_id, member_epoch=epoch,
                rebalance_timeout_ms=30_000 if joining else -1,
                subscribed_topic_names=["t"] if joining else None,
                topic_partitions=[TopicPartitions(topic_id=topic_id, partitions=owned)]
                if owned else []),
            1, ConsumerGroupHeartbeatResponse)
        assert response.error_code == 0, response
        return response

    def partitions(response: ConsumerGroupHeartbeatResponse) -> list[int] | None:
        if response.assignment is None:
            return None
        return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)

    topic_id = b"\0" * 16

    async def scenario() -> list[int] | None:
        nonlocal topic_id
        async with InProcBroker(tmp_path, extra=OFFLOAD) as node:
            node.broker.topics.create("t", 4, {})
            topic_id = node.broker.topics.get("t").topic_id
            client = await node.client()
            m1, m2 = (f"m{i}-0000-4000-8000-000000000000" for i in (1, 2))
            r1 = await heartbeat(client, m1, 0, [])
            assert partitions(r1) == [0, 1, 2, 3]  # the first target: on the heartbeat
            r1 = await heartbeat(client, m1, r1.member_epoch, [0, 1, 2, 3])
            r2 = await heartbeat(client, m2, 0, [])
            assert partitions(r2) in (None, [])  # its target is being computed elsewhere
            owned, deadline = [0, 1, 2, 3], time.monotonic() + 10
            while len(owned) == 4:
                assert time.monotonic() < deadline, "the offloaded target never arrived"
                r1 = await heartbeat(client, m1, r1.member_epoch, owned)
                owned = partitions(r1) or owned
            return owned

    owned = asyncio.run(scenario())
    assert owned is not None and len(owned) == 2
    # Only offloaded computations go through `target_offload`: each ran on the worker.
    assert threads and all(n.startswith("groupcoord-offload") for n in threads)


def test_the_runtime_skips_work_superseded_before_it_starts(tmp_path: Path) -> None:
    """One worker thread: A runs, B waits behind it, C takes B's key and A2 A's. B is never
    computed, A's value is dropped, C's and A2's are applied."""
    from groupcoord.coordinator.result import Offload, Result

    release = threading.Event()
    computed: list[str] = []
    applied: list[str] = []

    def task(name: str, key: str) -> Offload:
        def compute() -> str:
            if name == "A":
                release.wait(10)
            computed.append(name)
            return name

        def apply(_shard: object, value: str | None, _now: int) -> Result | None:
            if value is not None:
                applied.append(value)
            return None

        return Offload(("test", key), compute, apply)

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as node:
            shard = node.broker.groups.shard(0)
            executor = node.broker.groups.offload_executor()

            def offload(work: Offload) -> None:
                shard.offloads.start(work, executor, lambda op: shard.submit(op, None, None))

            offload(task("A", "a"))
            offload(task("B", "b"))
            offload(task("C", "b"))
            offload(task("A2", "a"))  # A, already running, is superseded too
            release.set()
            # The worker thread computes; each loop turn lets finished work be applied.
            await settle(lambda: sorted(applied) == ["A2", "C"] and not shard.offloads.pending,
                         turns=1_000_000)
            assert sorted(computed) == ["A", "A2", "C"]

    asyncio.run(scenario())
