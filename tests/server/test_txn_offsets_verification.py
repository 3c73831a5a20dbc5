"""KIP-890 part 1 for TxnOffsetCommit against the real transaction coordinator and
runtime (Kafka's `CoordinatorPartitionWriter.maybeStartTransactionVerification`): without
AddOffsetsToTxn nothing is written and the error depends on the request version; an
unknown or fenced producer is refused; a transaction that EndTxn closed needs a new
AddOffsetsToTxn; v5 adds the partition itself (`addPartition`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, run
from test_txn_offsets_runtime import (
    GROUP,
    PARTITION,
    add_offsets,
    begin,
    errors,
    fetch,
    init_producer,
    txn_request,
)

from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.end_txn import EndTxnRequest, EndTxnResponse
from groupcoord.wire.generated.txn_offset_commit import TxnOffsetCommitResponse


def log_end(b: InProcBroker) -> int:
    plog = b.broker.topics.log(OFFSETS_TOPIC, PARTITION)
    return -1 if plog is None else int(plog.log_end_offset)


async def commit(client: Any, pid: int, epoch: int, version: int,
                 offset: int = 4) -> dict[tuple[str, int], int]:
    resp = await client.call(txn_request({("t", 0): offset}, pid, epoch), version,
                             TxnOffsetCommitResponse)
    return errors(resp)


async def end_txn(client: Any, pid: int, epoch: int, commit: bool) -> int:
    resp = await client.call(EndTxnRequest(transactional_id="tx-1", producer_id=pid,
                                           producer_epoch=epoch, committed=commit), 3,
                             EndTxnResponse)
    return int(resp.error_code)


def test_without_add_offsets_nothing_is_written(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            pid, epoch = await init_producer(client, "tx-1")
            end = log_end(b)
            for version in (0, 1, 2, 3):
                assert await commit(client, pid, epoch, version) == {
                    ("t", 0): E.INVALID_TXN_STATE}
            assert await commit(client, pid, epoch, 4) == {("t", 0): E.TRANSACTION_ABORTABLE}
            assert log_end(b) == end
            assert await fetch(client, True, [0]) == {0: (-1, 0)}
            # What a client does: AddOffsetsToTxn, then the commit goes through.
            assert await add_offsets(client, "tx-1", pid, epoch) == 0
            assert await commit(client, pid, epoch, 4) == {("t", 0): 0}
            assert await fetch(client, True, [0]) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    run(go())


def test_unknown_and_fenced_producers(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            end = log_end(b)
            assert await commit(client, 77, 0, 3) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
            pid, epoch = await init_producer(client, "tx-1")
            assert await commit(client, pid + 1, epoch, 3) == {
                ("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
            assert await commit(client, pid, epoch + 1, 4) == {
                ("t", 0): E.INVALID_PRODUCER_EPOCH}
            _, newer = await init_producer(client, "tx-1")
            assert newer > epoch
            for version in (2, 4, 5):
                assert await commit(client, pid, epoch, version) == {
                    ("t", 0): E.INVALID_PRODUCER_EPOCH}
            assert log_end(b) == end
    run(go())


def test_end_txn_closes_the_partition_for_the_next_commit(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            pid, epoch = await begin(client)
            assert await commit(client, pid, epoch, 3, offset=6) == {("t", 0): 0}
            # The open transaction on the partition: no verification needed for more.
            assert await commit(client, pid, epoch, 3, offset=8) == {("t", 0): 0}
            assert await end_txn(client, pid, epoch, True) == 0
            assert await fetch(client, True, [0]) == {0: (8, 0)}
            # A new transaction must add the partition again.
            assert await commit(client, pid, epoch, 3, offset=9) == {
                ("t", 0): E.INVALID_TXN_STATE}
            assert await commit(client, pid, epoch, 4, offset=9) == {
                ("t", 0): E.TRANSACTION_ABORTABLE}
            assert await fetch(client, True, [0]) == {0: (8, 0)}
    run(go())


def test_v5_adds_the_offsets_partition_to_the_transaction(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            pid, epoch = await init_producer(client, "tx-1")
            assert await commit(client, pid, epoch, 5, offset=3) == {("t", 0): 0}
            txn = b.broker.transactions.metadata("tx-1")
            assert (OFFSETS_TOPIC, PARTITION) in txn.partitions
            assert await end_txn(client, pid, epoch, True) == 0
            assert await fetch(client, True, [0]) == {0: (3, 0)}
    run(go())


def test_group_partition_is_the_one_verified(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            pid, epoch = await init_producer(client, "tx-1")
            other = next(g for g in (f"other-{i}" for i in range(100))
                         if b.broker.groups.partition_for(g) != PARTITION)
            # AddOffsetsToTxn for another group's partition does not cover GROUP.
            assert await add_offsets(client, "tx-1", pid, epoch, group=other) == 0
            assert await commit(client, pid, epoch, 4) == {("t", 0): E.TRANSACTION_ABORTABLE}
            assert await add_offsets(client, "tx-1", pid, epoch, group=GROUP) == 0
            assert await commit(client, pid, epoch, 4) == {("t", 0): 0}
    run(go())
