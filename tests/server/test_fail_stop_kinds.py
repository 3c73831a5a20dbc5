"""Must-show of the one coordinator runtime: an append that fails (injected at the
runtime's append) leaves memory equal to a replay of the log, the shard reloads through its
`ShardTask`, and the client's retry succeeds, for a group shard (`__consumer_offsets`) and
the transaction coordinator (`__transaction_state`). Share state has the same checks in
`test_share_state_shards.py`, `test_share_state_faults.py` and the property test
`test_share_state_property.py`; transaction state has its property test in
`test_txn_state_property.py`. Load and unload of a transaction shard answer Kafka's
`TransactionStateManager` errors: COORDINATOR_LOAD_IN_PROGRESS, then NOT_COORDINATOR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, run, settle
from test_txn_offsets_runtime import add_offsets, init_producer

from groupcoord.coordinator.transactions.coordinator import TransactionCoordinator
from groupcoord.coordinator.transactions.state import S, TransactionMetadata
from groupcoord.server.runtime.shard_log import replay_log
from groupcoord.server.runtime.shard_runtime import ShardRuntime
from groupcoord.server.runtime.shard_task import ShardState, ShardTask
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import offset_commit, offset_fetch
from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from groupcoord.wire.generated.end_txn import EndTxnRequest, EndTxnResponse
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)

TID = "fail-stop-txn"
GROUP = "fail-stop-group"


def failing_after_write(runtime: ShardRuntime) -> Any:
    """An append whose batch reaches the log and then fails (a failed fsync): the runtime
    must cut the batch off again."""
    real = runtime.append

    def append(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise OSError(5, "Input/output error")
    return append


def replayed(runtime: ShardRuntime, partition: int) -> Any:
    """A fresh shard of the partition, loaded from what its log holds."""
    shard = runtime.new_shard(partition)
    replay_log(runtime.broker.logs.get(runtime.topic, partition), shard)
    return shard


def durable(txns: dict[str, TransactionMetadata]) -> dict[str, tuple[Any, ...]]:
    """The fields a `__transaction_state` record holds (the live cache also keeps the
    previous producer id and last epoch, which a v0 record does not, as in Kafka)."""
    return {tid: (md.producer_id, md.producer_epoch, md.timeout_ms, md.state,
                  frozenset(md.partitions), md.start_ms, md.last_update_ms)
            for tid, md in txns.items()}


async def reloaded(task: ShardTask, reloads: int) -> None:
    # The reload runs on the loop (no timer): loop turns are enough.
    await settle(lambda: task.reloads == reloads and task.state is ShardState.ACTIVE,
                 turns=100_000)


async def commit(client: Any, offset: int) -> int:
    request = offset_commit.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, retention_time_ms=-1, topics=[
            offset_commit.OffsetCommitRequestTopic(name="t", partitions=[
                offset_commit.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                    committed_metadata="")])])
    resp = await client.call(request, 8, offset_commit.OffsetCommitResponse)
    return int(resp.topics[0].partitions[0].error_code)


async def committed(client: Any) -> int:
    request = offset_fetch.OffsetFetchRequest(group_id=GROUP, require_stable=False, topics=[
        offset_fetch.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
    resp = await client.call(request, 7, offset_fetch.OffsetFetchResponse)
    return int(resp.topics[0].partitions[0].committed_offset)


async def end_txn(client: Any, pid: int, epoch: int) -> int:
    resp = await client.call(EndTxnRequest(transactional_id=TID, producer_id=pid,
                                           producer_epoch=epoch, committed=True), 3,
                             EndTxnResponse)
    return int(resp.error_code)


def test_failed_group_append_reloads_the_shard_and_the_client_recovers(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            groups = b.broker.groups
            assert await commit(client, 1) == 0
            p = groups.partition_for(GROUP)
            task = groups.shards[p]
            end = groups.log_end_offset(p)
            real = groups.append
            groups.append = failing_after_write(groups)
            # Kafka answers a disk error NOT_COORDINATOR: the client looks it up again.
            assert await commit(client, 2) == E.NOT_COORDINATOR
            groups.append = real
            await reloaded(task, 1)
            assert groups.log_end_offset(p) == end  # the failed batch was cut off
            assert task.shard.snapshot() == replayed(groups, p).snapshot()  # type: ignore[attr-defined]
            assert await committed(client) == 1
            assert await commit(client, 3) == 0  # the client's retry
            assert await committed(client) == 3
            assert task.shard.snapshot() == replayed(groups, p).snapshot()  # type: ignore[attr-defined]
    run(go())


def test_failed_transaction_state_append_reloads_and_the_client_recovers(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            txns = b.broker.transactions
            runtime = txns.runtime
            pid, epoch = await init_producer(client, TID)
            p = txns.partition_for(TID)
            task = runtime.shards[p]

            def memory_is_the_log() -> None:
                shard = task.shard
                assert isinstance(shard, TransactionCoordinator)
                assert durable(shard.txns) == durable(replayed(runtime, p).txns)

            real = runtime.append
            for reloads, call in ((1, lambda: add_offsets(client, TID, pid, epoch, GROUP)),
                                  (2, lambda: end_txn(client, pid, epoch))):
                end = runtime.log_end_offset(p)
                before = durable(runtime.shards[p].shard.txns)
                runtime.append = failing_after_write(runtime)
                # A disk error: Kafka's appendTransactionToLog answers NOT_COORDINATOR.
                assert await call() == E.NOT_COORDINATOR
                runtime.append = real
                # Reloaded before the answer: the failed transition is gone from the log
                # and from memory.
                assert task.reloads == reloads and task.state is ShardState.ACTIVE
                assert runtime.log_end_offset(p) == end
                assert durable(task.shard.txns) == before
                memory_is_the_log()
                assert await call() == 0  # the client's retry
                memory_is_the_log()
            md = txns.metadata(TID)
            assert md is not None and md.state == S.COMPLETE_COMMIT
    run(go())


def test_transaction_shard_load_and_unload_answer_kafkas_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            client = await b.client()
            txns = b.broker.transactions
            pid, epoch = await init_producer(client, TID)
            p = txns.partition_for(TID)
            txns.runtime.unload(p)
            assert (await txns.init_producer_id(TID, 60_000, None)).error \
                == E.NOT_COORDINATOR
            assert await txns.add_partitions(TID, pid, epoch, [("t", 0)]) == E.NOT_COORDINATOR
            assert await describe(client) == E.NOT_COORDINATOR
            async with txns.runtime.loading:  # the replay waits for the loader's turn
                task = txns.runtime.load(p)
                assert task.state is ShardState.LOADING
                assert (await txns.end_txn(TID, pid, epoch, True)).error \
                    == E.COORDINATOR_LOAD_IN_PROGRESS
                assert await describe(client) == E.COORDINATOR_LOAD_IN_PROGRESS
            await txns.runtime.wait_loaded()
            # The reloaded shard knows the producer: the next InitProducerId bumps it.
            assert await init_producer(client, TID) == (pid, epoch + 1)
            assert await describe(client) == 0
    run(go())


def test_a_loaded_transaction_shard_resumes_markers_and_list_waits_for_loads(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            client = await b.client()
            txns = b.broker.transactions
            pid, epoch = await init_producer(client, TID)
            assert await add_offsets(client, TID, pid, epoch, GROUP) == 0
            p = txns.partition_for(TID)
            # PrepareCommit appended through the shard, its markers not written (as if the
            # broker stopped right after the append).
            reply = await txns.runtime.call_shard(
                p, lambda c, _ctx, now: c.end_txn(TID, pid, epoch, True, now))
            assert reply.error == 0 and reply.writes_markers
            md = txns.metadata(TID)
            assert md is not None and md.state == S.PREPARE_COMMIT
            txns.runtime.unload(p)
            async with txns.runtime.loading:  # the replay waits for the loader's turn
                txns.runtime.load(p)
                listed = await list_transactions(client)
                assert listed.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
            await txns.runtime.wait_loaded()
            # The load found PrepareCommit and wrote its markers, then CompleteCommit.
            await settle(lambda: txns.metadata(TID).state == S.COMPLETE_COMMIT)  # type: ignore[union-attr]
            listed = await list_transactions(client)
            assert listed.error_code == 0
            assert [(t.transactional_id, t.transaction_state)
                    for t in listed.transaction_states] == [(TID, "CompleteCommit")]
    run(go())


async def list_transactions(client: Any) -> ListTransactionsResponse:
    resp: ListTransactionsResponse = await client.call(
        ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0,
        ListTransactionsResponse)
    return resp


async def describe(client: Any) -> int:
    """DescribeTransactions of TID: its error code."""
    resp = await client.call(DescribeTransactionsRequest(transactional_ids=[TID]), 0,
                             DescribeTransactionsResponse)
    return int(resp.transaction_states[0].error_code)
