"""Write coalescing in the coordinator runtime (Kafka's `CoordinatorBatch`): the plain
records of the operations drained from a shard's queue are replayed at the offsets they
will get and appended as one batch when the drain ends; a transactional write goes in a
batch of its own after the pending one; an operation whose own records the log refuses
fails alone; a failed coalesced append fails every operation of the drain and the shard
is rebuilt from its log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run, settle

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.server.runtime import shard_task
from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC, CoordinatorRuntime
from groupcoord.server.runtime.shard_log import encode_records_batch, replay_log
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode as E

GROUP = "coalesced"
N = 20


class OffsetsShard(Shard):
    """Committed offsets with the log offset each was replayed at."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.offsets: dict[tuple[str, int], tuple[int, int, int]] = {}

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        key, value = record.key, record.value
        self.offsets[(key.topic, key.partition)] = (value.offset, offset, producer_id)

    def commit(self, partition: int, offset: int, metadata: str, now_ms: int) -> Result:
        record = offset_commit_record(GROUP, "t", partition, offset, -1, metadata, now_ms, -1,
                                      bytes(16))
        return Result(records=[record], response=(partition, offset))


async def _runtime(b: InProcBroker) -> tuple[CoordinatorRuntime, int]:
    runtime = CoordinatorRuntime(b.broker, shard_factory=OffsetsShard)
    await runtime.start()
    return runtime, runtime.partition_for(GROUP)


def _commit(partition: int, offset: int, metadata: str = "") -> Any:
    return lambda s, _c, n: s.commit(partition, offset, metadata, n)


def _batches(b: InProcBroker, partition: int) -> list[tuple[int, int, int]]:
    """(base offset, record count, producer id) of each batch in the shard's log."""
    plog = b.broker.topics.log(OFFSETS_TOPIC, partition)
    return [(h.base_offset, h.records_count, h.producer_id)
            for h in plog.iter_batch_headers()]


def _from_log(b: InProcBroker, runtime: CoordinatorRuntime, partition: int) -> Any:
    shard = OffsetsShard(partition)
    replay_log(b.broker.logs.get(OFFSETS_TOPIC, partition), shard)
    return shard.offsets


async def _outcome(call: Any) -> Any:
    """The response of an awaited call, or the ApiError code it failed with."""
    try:
        return await call
    except ApiError as exc:
        return exc.code


async def _drain(runtime: CoordinatorRuntime, ops: list[Any]) -> list[Any]:
    """Submit `ops` in one loop turn (so one drain takes them all)."""
    return list(await asyncio.gather(*(_outcome(runtime.call(GROUP, op)) for op in ops)))


def test_concurrent_commits_share_one_batch_with_the_state_of_the_log(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            await runtime.call(GROUP, _commit(0, 1))  # one drain, one batch
            replies = await _drain(runtime, [_commit(i % 7, 100 + i) for i in range(N)])
            assert replies == [(i % 7, 100 + i) for i in range(N)]
            # N operations, one batch: the drain's records went in a single append.
            assert _batches(b, p) == [(0, 1, -1), (1, N, -1)]
            live = runtime.shards[p].shard.offsets
            # Replayed at the offsets the records got: the same state as a replay of the log.
            assert live == _from_log(b, runtime, p)
            assert live[("t", 6)] == (100 + 13, 1 + 13, -1)
            await runtime.stop()
    run(go())


def test_a_transactional_write_goes_after_the_pending_batch(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            pid, epoch = 4000, 0
            calls = [runtime.call(GROUP, _commit(0, i)) for i in range(3)]
            calls.append(runtime.call_transactional(GROUP, pid, epoch, _commit(2, 50)))
            calls += [runtime.call(GROUP, _commit(1, 10 + i)) for i in range(2)]
            outcomes = await asyncio.gather(*(_outcome(c) for c in calls))
            assert outcomes == [(0, 0), (0, 1), (0, 2), (2, 50), (1, 10), (1, 11)]
            # In queue order: the plain batch, the producer's own batch, the next plain one.
            assert _batches(b, p) == [(0, 3, -1), (3, 1, pid), (4, 2, -1)]
            assert runtime.shards[p].shard.offsets == _from_log(b, runtime, p)
            await runtime.stop()
    run(go())


def test_a_refused_operation_fails_alone_in_a_drain(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            # 1.2 MB of metadata: over max.message.bytes (1,048,588) even alone.
            ops = [_commit(0, 1), _commit(1, 2, "m" * 1_200_000), _commit(2, 3)]
            assert await _drain(runtime, ops) == [(0, 1), E.UNKNOWN_SERVER_ERROR, (2, 3)]
            assert _batches(b, p) == [(0, 2, -1)]
            task = runtime.shards[p]
            assert task.reloads == 0 and task.shard.offsets == _from_log(b, runtime, p)
            await runtime.stop()
    run(go())


def test_a_batch_that_would_pass_the_size_limit_is_appended_first(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            # Each fits alone (400 kB); three together would not: two batches.
            ops = [_commit(i, i, "m" * 400_000) for i in range(3)]
            assert await _drain(runtime, ops) == [(i, i) for i in range(3)]
            assert [n for _base, n, _pid in _batches(b, p)] == [2, 1]
            assert runtime.shards[p].shard.offsets == _from_log(b, runtime, p)
            await runtime.stop()
    run(go())


def test_a_batch_is_appended_at_the_record_count_limit(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shard_task, "MAX_BATCH_RECORDS", 5)

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            assert await _drain(runtime, [_commit(i, i) for i in range(12)]) \
                == [(i, i) for i in range(12)]
            assert _batches(b, p) == [(0, 5, -1), (5, 5, -1), (10, 2, -1)]
            assert runtime.shards[p].shard.offsets == _from_log(b, runtime, p)
            await runtime.stop()
    run(go())


@pytest.mark.parametrize("reaches_log", [False, True], ids=["refused", "failed-fsync"])
def test_a_failed_coalesced_append_fails_the_whole_drain(tmp_path: Path,
                                                         reaches_log: bool) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            await runtime.call(GROUP, _commit(0, 1))
            real = runtime.append
            calls: list[int] = []

            def failing(*args: Any, **kwargs: Any) -> Any:
                calls.append(1)
                if reaches_log:
                    real(*args, **kwargs)
                raise OSError(5, "Input/output error")
            runtime.append = failing
            replies = await _drain(runtime, [_commit(i % 3, 100 + i) for i in range(N)])
            # One append for the whole drain, and every operation of it gets the error.
            assert calls == [1]
            assert replies == [E.NOT_COORDINATOR] * N  # a disk error, as Kafka answers it
            runtime.append = real
            task = runtime.shards[p]
            await settle(lambda: task.reloads == 1 and task.state is ShardState.ACTIVE,
                         turns=100_000)
            # Memory is the replay of the log: what the failed batch replayed is gone.
            assert _batches(b, p) == [(0, 1, -1)]
            assert task.shard.offsets == _from_log(b, runtime, p) == {("t", 0): (1, 0, -1)}
            assert await runtime.call(GROUP, _commit(1, 7)) == (1, 7)
            assert task.shard.offsets == _from_log(b, runtime, p)
            await runtime.stop()
    run(go())


def test_a_log_another_writer_moved_refuses_the_batch_and_keeps_that_writers_records(
        tmp_path: Path) -> None:
    """The coalesced append names the log end its rows were replayed from. Another writer's
    batch landing first (what a shared store sees when leadership moved) makes the log
    refuse the drain's batch, writing nothing: every operation of the drain is answered
    NOT_COORDINATOR, the other writer's records stay, and the reload replays them."""
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime, p = await _runtime(b)
            await runtime.call(GROUP, _commit(0, 1))
            real = runtime.append
            foreign = encode_records_batch([offset_commit_record(
                GROUP, "t", 5, 555, -1, "other writer", 0, -1, bytes(16))], 0)

            def another_writer_first(*args: Any, **kwargs: Any) -> Any:
                b.broker.logs.get(OFFSETS_TOPIC, p).append(foreign)
                runtime.append = real
                return real(*args, **kwargs)
            runtime.append = another_writer_first
            replies = await _drain(runtime, [_commit(i % 3, 100 + i) for i in range(N)])
            assert replies == [E.NOT_COORDINATOR] * N
            task = runtime.shards[p]
            await settle(lambda: task.reloads == 1 and task.state is ShardState.ACTIVE,
                         turns=100_000)
            assert _batches(b, p) == [(0, 1, -1), (1, 1, -1)]
            assert task.shard.offsets == _from_log(b, runtime, p) == {
                ("t", 0): (1, 0, -1), ("t", 5): (555, 1, -1)}
            assert await runtime.call(GROUP, _commit(1, 7)) == (1, 7)
            assert _batches(b, p)[-1] == (2, 1, -1)
            await runtime.stop()
    run(go())
