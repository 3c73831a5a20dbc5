"""Transactional offsets through the real coordinator runtime and broker: TxnOffsetCommit
over the wire (after InitProducerId and AddOffsetsToTxn, as a client does) writes a
transactional batch, `complete_transaction` (what EndTxn calls) writes the control batch,
both survive a restart, and the producer-epoch checks and the shard's fail-stop answer with
Kafka's error codes. The KIP-890 verification against the real transaction coordinator is
in `test_txn_offsets_verification.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.logformat.batch import control_record_type, decode_records, parse_header
from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC
from groupcoord.server.runtime.shard_log import decode_end_txn_marker
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)

GROUP = "txn-group"
PARTITION = partition_for(GROUP, 50)


async def init_producer(client: Any, tid: str) -> tuple[int, int]:
    """InitProducerId for `tid`: its producer id and epoch. Fencing an open transaction
    answers CONCURRENT_TRANSACTIONS until its abort completed; the client retries (each
    round trip lets the in-process broker write the abort: no clock is involved)."""
    for _ in range(1_000):
        resp = await client.call(InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
            producer_epoch=-1), 4, InitProducerIdResponse)
        if resp.error_code != E.CONCURRENT_TRANSACTIONS:
            break
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


async def add_offsets(client: Any, tid: str, pid: int, epoch: int, group: str = GROUP) -> int:
    resp = await client.call(AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group), 3,
        AddOffsetsToTxnResponse)
    return int(resp.error_code)


async def begin(client: Any, tid: str = "tx-1") -> tuple[int, int]:
    """What a transactional producer does before sendOffsetsToTransaction's commit."""
    pid, epoch = await init_producer(client, tid)
    assert await add_offsets(client, tid, pid, epoch) == 0
    return pid, epoch


def txn_request(offsets: dict[tuple[str, int], int], pid: int = 11, epoch: int = 2,
                group: str = GROUP, tid: str = "tx-1") -> TxnOffsetCommitRequest:
    by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(TxnOffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_metadata="md"))
    return TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch,
        topics=[TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def errors(resp: TxnOffsetCommitResponse) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def fetch(client: Any, stable: bool, partitions: list[int]) -> dict[int, tuple[int, int]]:
    req = OffsetFetchRequest(group_id=GROUP, require_stable=stable, topics=[
        OffsetFetchRequestTopic(name="t", partition_indexes=partitions)])
    resp = await client.call(req, 7, OffsetFetchResponse)
    return {p.partition_index: (p.committed_offset, p.error_code)
            for t in resp.topics for p in t.partitions}


def batches(b: InProcBroker) -> list[Any]:
    plog = b.broker.topics.log(OFFSETS_TOPIC, PARTITION)
    return [parse_header(v) for v in plog.iter_batches()], list(plog.iter_batches())


def test_txn_commit_over_the_wire_then_commit_marker(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 2, {})
            client = await b.client()
            pid, epoch = await begin(client)
            resp = await client.call(txn_request({("t", 0): 5, ("t", 1): 6, ("t", 9): 1,
                                                  ("nope", 0): 1}, pid, epoch), 3,
                                     TxnOffsetCommitResponse)
            assert errors(resp) == {("t", 0): 0, ("t", 1): 0,
                                    ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION,
                                    ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
            headers, _ = batches(b)
            last = headers[-1]
            assert (last.is_transactional, last.is_control, last.producer_id,
                    last.producer_epoch, last.records_count) == (True, False, pid, epoch, 2)
            assert await fetch(client, False, [0, 1]) == {0: (-1, 0), 1: (-1, 0)}
            assert await fetch(client, True, [0, 1]) == {
                0: (-1, E.UNSTABLE_OFFSET_COMMIT), 1: (-1, E.UNSTABLE_OFFSET_COMMIT)}

            code = await b.broker.groups.complete_transaction(PARTITION, pid, epoch, 7, True)
            assert code == 0
            headers, views = batches(b)
            marker = headers[-1]
            assert (marker.is_transactional, marker.is_control, marker.producer_id,
                    marker.producer_epoch) == (True, True, pid, epoch)
            (rec,) = decode_records(views[-1])
            assert control_record_type(rec) == 1
            assert decode_end_txn_marker(rec) == (True, 7)
            assert await fetch(client, True, [0, 1]) == {0: (5, 0), 1: (6, 0)}
    run(go())


def test_open_transaction_survives_restart_and_aborts_after(tmp_path: Path) -> None:
    async def first() -> tuple[dict[str, Any], tuple[int, int]]:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 2, {})
            client = await b.client()
            pid, epoch = await begin(client)
            resp = await client.call(txn_request({("t", 0): 3}, pid, epoch), 5,
                                     TxnOffsetCommitResponse)
            assert errors(resp) == {("t", 0): 0}
            assert await b.broker.groups.complete_transaction(PARTITION, pid, epoch, 0,
                                                              True) == 0
            # The partition is still in the coordinator's (Ongoing) transaction: verified.
            resp = await client.call(txn_request({("t", 0): 9, ("t", 1): 9}, pid, epoch), 5,
                                     TxnOffsetCommitResponse)
            assert errors(resp) == {("t", 0): 0, ("t", 1): 0}
            snap: dict[str, Any] = b.broker.groups.shards[PARTITION].shard.snapshot()
            return snap, (pid, epoch)

    async def second(before: dict[str, Any], pid: int, epoch: int) -> None:
        async with InProcBroker(tmp_path) as b:
            client = await b.client()
            assert await fetch(client, True, [0, 1]) == {
                0: (-1, E.UNSTABLE_OFFSET_COMMIT), 1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
            assert await fetch(client, False, [0, 1]) == {0: (3, 0), 1: (-1, 0)}
            # Loaded from the log: the very state that was live, pending offsets included.
            assert b.broker.groups.shards[PARTITION].shard.snapshot() == before
            assert await b.broker.groups.complete_transaction(PARTITION, pid, epoch, 0,
                                                              False) == 0
            assert await fetch(client, True, [0, 1]) == {0: (3, 0), 1: (-1, 0)}
    before, (pid, epoch) = run(first())
    assert "pending" in before
    run(second(before, pid, epoch))


def test_producer_and_coordinator_epoch_fencing(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            groups = b.broker.groups
            client = await b.client()
            pid, old = await begin(client)
            assert errors(await client.call(txn_request({("t", 0): 1}, pid, old), 3,
                                            TxnOffsetCommitResponse)) == {("t", 0): 0}
            # A new instance fences the producer and aborts its open transaction.
            same_pid, epoch = await init_producer(client, "tx-1")
            assert same_pid == pid and epoch > old
            assert await fetch(client, True, [0]) == {0: (-1, 0)}
            # The zombie (older epoch) is refused before anything is written.
            end = b.broker.topics.log(OFFSETS_TOPIC, PARTITION).log_end_offset
            assert errors(await client.call(txn_request({("t", 0): 2}, pid, old), 3,
                                            TxnOffsetCommitResponse)) == {
                ("t", 0): E.INVALID_PRODUCER_EPOCH}
            assert b.broker.topics.log(OFFSETS_TOPIC, PARTITION).log_end_offset == end
            assert await groups.complete_transaction(PARTITION, pid, old, 3, True) \
                == E.INVALID_PRODUCER_EPOCH
            assert await add_offsets(client, "tx-1", pid, epoch) == 0
            await client.call(txn_request({("t", 0): 5}, pid, epoch), 3,
                              TxnOffsetCommitResponse)
            assert await groups.complete_transaction(PARTITION, pid, epoch, 3, True) == 0
            assert await fetch(client, True, [0]) == {0: (5, 0)}
            await client.call(txn_request({("t", 0): 7}, pid, epoch), 3,
                              TxnOffsetCommitResponse)
            assert await groups.complete_transaction(PARTITION, pid, epoch, 2, True) \
                == E.TRANSACTION_COORDINATOR_FENCED
            assert await fetch(client, True, [0]) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
            assert await fetch(client, False, [0]) == {0: (5, 0)}
    run(go())


def test_complete_transaction_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            groups = b.broker.groups
            assert await groups.complete_transaction(50, 1, 0, 0, True) == E.NOT_COORDINATOR
            assert await groups.complete_transaction(-1, 1, 0, 0, True) == E.NOT_COORDINATOR
            # A marker with nothing pending is still written (Kafka writes it too).
            assert await groups.complete_transaction(3, 1, 0, 0, False) == 0
            assert b.broker.topics.log(OFFSETS_TOPIC, 3).log_end_offset == 1

            b.broker.topics.create("t", 1, {})
            client = await b.client()
            pid, epoch = await begin(client)
            await client.call(txn_request({("t", 0): 1}, pid, epoch), 3,
                              TxnOffsetCommitResponse)
            real_append = b.broker.append
            calls: list[int] = []

            def failing_append(*args: Any, **kw: Any) -> Any:
                if not calls:
                    calls.append(1)
                    raise OSError("disk gone")
                return real_append(*args, **kw)
            b.broker.append = failing_append  # type: ignore[method-assign]
            # The append fails: the shard fail-stops, the transaction coordinator hears the
            # log's error (Kafka passes it through), and the shard reloads from its log.
            assert await groups.complete_transaction(PARTITION, pid, epoch, 0, True) \
                == E.KAFKA_STORAGE_ERROR
            assert await fetch(client, True, [0]) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
            assert await groups.complete_transaction(PARTITION, pid, epoch, 0, True) == 0
            assert await fetch(client, True, [0]) == {0: (1, 0)}
    run(go())


def test_call_transactional_error_reaches_the_handler(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            with pytest.raises(ApiError) as info:
                await b.broker.groups.call_transactional(GROUP, 3, 1, lambda s, c, n: _raise())
            assert info.value.code == E.GROUP_AUTHORIZATION_FAILED
    run(go())


def _raise() -> Any:
    raise ApiError(E.GROUP_AUTHORIZATION_FAILED)


def test_analytics_reader_resolves_our_transactions(tmp_path: Path) -> None:
    """The analytics reader (read only here) sees our batches' outcomes as written."""
    from groupcoord.analytics.read.segments import (
        list_partitions,
        resolve_transactions,
        scan_headers,
    )

    async def go() -> list[int]:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            groups = b.broker.groups
            pids = []
            for n in (1, 2, 3):
                pid, epoch = await begin(client, f"tx-{n}")
                pids.append(pid)
                resp = await client.call(txn_request({("t", 0): n}, pid, epoch, tid=f"tx-{n}"),
                                         3, TxnOffsetCommitResponse)
                assert errors(resp) == {("t", 0): 0}
            assert await groups.complete_transaction(PARTITION, pids[0], 0, 0, True) == 0
            assert await groups.complete_transaction(PARTITION, pids[1], 0, 0, False) == 0
            return pids
    pids = run(go())
    (part,) = [p for p in list_partitions(tmp_path, OFFSETS_TOPIC) if p.partition == PARTITION]
    resolver = resolve_transactions(part)
    outcomes = {h.producer_id: resolver.outcome(h.producer_id, h.base_offset)
                for seg in part.segments() for h in scan_headers(seg)
                if h.is_transactional and not h.is_control}
    assert outcomes == {pids[0]: "committed", pids[1]: "aborted", pids[2]: "open"}
