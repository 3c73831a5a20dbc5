"""Transactions over the wire: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
transactional Produce, read_committed Fetch/ListOffsets, List/DescribeTransactions,
DescribeProducers, against an in-process broker."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.logformat.batch import build_batch, decode_records, iter_batches
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    create_topics,
    describe_producers,
    describe_transactions,
    end_txn,
    fetch,
    init_producer_id,
    list_offsets,
    list_transactions,
    produce,
)

APT = add_partitions_to_txn


async def _topic(c: RawClient, name: str, partitions: int = 1) -> None:
    req = create_topics.CreateTopicsRequest(topics=[create_topics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)])
    resp = await c.call(req, 5, create_topics.CreateTopicsResponse)
    assert resp.topics[0].error_code == 0


async def _init(c: RawClient, tid: str, version: int = 4, timeout: int = 60_000,
                pid: int = -1, epoch: int = -1) -> Any:
    return await c.call(init_producer_id.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=timeout, producer_id=pid,
        producer_epoch=epoch), version, init_producer_id.InitProducerIdResponse)


async def _add(c: RawClient, tid: str, pid: int, epoch: int, topic: str,
               partitions: list[int], version: int = 3) -> dict[int, int]:
    req = APT.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
            APT.AddPartitionsToTxnTopic(name=topic, partitions=partitions)])
    resp = await c.call(req, version, APT.AddPartitionsToTxnResponse)
    return {p.partition_index: p.partition_error_code
            for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}


async def _end(c: RawClient, tid: str, pid: int, epoch: int, commit: bool,
               version: int = 3) -> Any:
    return await c.call(end_txn.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                              producer_epoch=epoch, committed=commit),
                        version, end_txn.EndTxnResponse)


def _batch(keys: list[bytes], pid: int, epoch: int, seq: int, transactional: bool = True) -> bytes:
    rows = [(k, b"v", (), 1000) for k in keys]
    return build_batch(rows, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       transactional=transactional)


async def _produce(c: RawClient, topic: str, records: bytes, tid: str | None,
                   partition: int = 0, version: int = 9) -> Any:
    req = produce.ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=tid, topic_data=[
        produce.TopicProduceData(name=topic, partition_data=[
            produce.PartitionProduceData(index=partition, records=records)])])
    resp = await c.call(req, version, produce.ProduceResponse)
    return resp.responses[0].partition_responses[0]


async def _fetch(c: RawClient, topic: str, offset: int, isolation: int) -> Any:
    req = fetch.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
        isolation_level=isolation, session_id=0, session_epoch=-1, topics=[
            fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    resp = await c.call(req, 11, fetch.FetchResponse)
    return resp.responses[0].partitions[0]


def _keys(data: Any) -> list[bytes | None]:
    out: list[bytes | None] = []
    for header, view in iter_batches(bytes(data or b"")):
        if not header.is_control:
            out += [r.key for r in decode_records(view)]
    return out


async def _latest(c: RawClient, topic: str, isolation: int) -> int:
    req = list_offsets.ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[
        list_offsets.ListOffsetsTopic(name=topic, partitions=[
            list_offsets.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    resp = await c.call(req, 5, list_offsets.ListOffsetsResponse)
    return int(resp.topics[0].partitions[0].offset)


def test_commit_and_abort_with_read_committed_fetch(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            init = await _init(c, "tx")
            assert init.error_code == 0
            pid, epoch = init.producer_id, init.producer_epoch
            assert await _add(c, "tx", pid, epoch, "t", [0]) == {0: 0}
            first = await _produce(c, "t", _batch([b"a", b"b"], pid, epoch, 0), "tx")
            assert first.error_code == 0
            # Open transaction: read_committed sees nothing, the LSO is its first offset.
            part = await _fetch(c, "t", 0, 1)
            assert (part.high_watermark, part.last_stable_offset) == (2, 0)
            assert _keys(part.records) == [] and part.aborted_transactions == []
            assert await _latest(c, "t", 1) == 0 and await _latest(c, "t", 0) == 2
            assert (await _end(c, "tx", pid, epoch, True)).error_code == 0
            # Second transaction, aborted.
            assert await _add(c, "tx", pid, epoch, "t", [0]) == {0: 0}
            await _produce(c, "t", _batch([b"x"], pid, epoch, 2), "tx")
            assert (await _end(c, "tx", pid, epoch, False)).error_code == 0
            part = await _fetch(c, "t", 0, 1)
            assert part.high_watermark == part.last_stable_offset == 5
            assert _keys(part.records) == [b"a", b"b", b"x"]
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 3)]
            plain = await _fetch(c, "t", 0, 0)
            assert plain.aborted_transactions is None and plain.last_stable_offset == 5
            assert (tmp_path / "t-0" / "00000000000000000000.txnindex").stat().st_size == 34
    run(go())


def test_produce_transactional_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            init = await _init(c, "tx")
            pid, epoch = init.producer_id, init.producer_epoch
            batch = _batch([b"a"], pid, epoch, 0)
            # Not added to the transaction: INVALID_TXN_STATE before v11, else abortable.
            assert (await _produce(c, "t", batch, "tx")).error_code == ErrorCode.INVALID_TXN_STATE
            resp = await _produce(c, "t", batch, "tx", version=11)
            assert resp.error_code == ErrorCode.TRANSACTION_ABORTABLE
            assert (await _produce(c, "t", batch, None)).error_code == (
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            await _add(c, "tx", pid, epoch, "t", [0])
            stale = _batch([b"a"], pid, epoch - 1 if epoch else epoch, 0)
            if epoch:
                assert (await _produce(c, "t", stale, "tx")).error_code == (
                    ErrorCode.INVALID_PRODUCER_EPOCH)
            assert (await _produce(c, "t", batch, "tx")).error_code == 0
            plain = _batch([b"p"], pid, epoch, 1, transactional=False)
            assert (await _produce(c, "t", plain, "tx")).error_code == ErrorCode.INVALID_TXN_STATE
            # A new producer instance fences the old one and aborts its transaction.
            again = await _init(c, "tx")
            assert again.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
            again = await _init(c, "tx")
            assert (again.error_code, again.producer_epoch) == (0, epoch + 2)
            assert (await _end(c, "tx", pid, epoch, True, version=1)).error_code == (
                ErrorCode.INVALID_PRODUCER_EPOCH)
            assert (await _end(c, "tx", pid, epoch, True, version=2)).error_code == (
                ErrorCode.PRODUCER_FENCED)
            late = _batch([b"z"], pid, epoch, 1)
            assert (await _produce(c, "t", late, "tx")).error_code == (
                ErrorCode.INVALID_PRODUCER_EPOCH)
            part = await _fetch(c, "t", 0, 1)
            assert part.last_stable_offset == part.high_watermark == 2
            assert [a.first_offset for a in part.aborted_transactions] == [0]
    run(go())


def test_produce_v12_adds_the_partition_for_a_tv2_producer(tmp_path: Path) -> None:
    """KIP-890 part 2: a Produce v12 batch starts the transaction on its partition (no
    AddPartitionsToTxn), the transaction records ClientTransactionVersion 2, EndTxn v5 bumps
    the epoch, and the next transaction runs at the bumped epoch; the old epoch is fenced."""
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            init = await _init(c, "tx", version=5)
            pid, epoch = init.producer_id, init.producer_epoch
            first = await _produce(c, "t", _batch([b"a"], pid, epoch, 0), "tx", version=12)
            assert first.error_code == 0
            txn = b.broker.transactions.metadata("tx")
            assert (txn.partitions, txn.client_tv) == (frozenset({("t", 0)}), 2)
            ended = await _end(c, "tx", pid, epoch, True, version=5)
            assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)
            second = await _produce(c, "t", _batch([b"b"], pid, epoch + 1, 0), "tx", version=12)
            assert second.error_code == 0
            assert (await _end(c, "tx", pid, epoch + 1, False, version=5)).producer_epoch == (
                epoch + 2)
            stale = await _produce(c, "t", _batch([b"z"], pid, epoch + 1, 1), "tx", version=12)
            assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
            part = await _fetch(c, "t", 0, 1)  # a, its marker, b (aborted), its marker
            assert _keys(part.records) == [b"a", b"b"] and part.last_stable_offset == 4
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 2)]
    run(go())


def test_add_partitions_validation_and_batched_verify(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t", 2)
            init = await _init(c, "tx")
            pid, epoch = init.producer_id, init.producer_epoch
            got = await _add(c, "tx", pid, epoch, "t", [0, 5])
            assert got == {0: ErrorCode.OPERATION_NOT_ATTEMPTED,
                           5: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert await _add(c, "tx", pid, epoch + 1, "t", [0], version=1) == {
                0: ErrorCode.INVALID_PRODUCER_EPOCH}
            assert await _add(c, "nope", pid, epoch, "t", [0]) == {
                0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
            assert await _add(c, "tx", pid, epoch, "t", [1]) == {1: 0}
            req = APT.AddPartitionsToTxnRequest(transactions=[APT.AddPartitionsToTxnTransaction(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, verify_only=True,
                topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])])])
            resp = await c.call(req, 4, APT.AddPartitionsToTxnResponse)
            codes = {p.partition_index: p.partition_error_code
                     for p in resp.results_by_transaction[0].topic_results[0].results_by_partition}
            assert codes == {0: ErrorCode.TRANSACTION_ABORTABLE, 1: 0}
            off = await c.call(add_offsets_to_txn.AddOffsetsToTxnRequest(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"),
                3, add_offsets_to_txn.AddOffsetsToTxnResponse)
            assert off.error_code == 0
            desc = await c.call(describe_transactions.DescribeTransactionsRequest(
                transactional_ids=["tx", "missing", ""]), 0,
                describe_transactions.DescribeTransactionsResponse)
            state, missing, empty = desc.transaction_states
            assert (state.error_code, state.transaction_state, state.producer_id) == (
                0, "Ongoing", pid)
            assert sorted((t.topic, t.partitions) for t in state.topics) == [
                ("__consumer_offsets", [partition_for("g")]), ("t", [1])]
            assert missing.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            assert empty.error_code == ErrorCode.INVALID_REQUEST
            listed = await c.call(list_transactions.ListTransactionsRequest(
                state_filters=["Ongoing", "Nope"]), 1, list_transactions.ListTransactionsResponse)
            assert [(s.transactional_id, s.transaction_state) for s in
                    listed.transaction_states] == [("tx", "Ongoing")]
            assert listed.unknown_state_filters == ["Nope"]
    run(go())


def test_restart_keeps_open_transaction_and_timeout_aborts_it(tmp_path: Path) -> None:
    extra = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}

    async def first() -> tuple[int, int]:
        async with InProcBroker(tmp_path, extra=extra) as b:
            c = await b.client()
            await _topic(c, "t")
            init = await _init(c, "tx", timeout=1000)
            pid, epoch = init.producer_id, init.producer_epoch
            await _add(c, "tx", pid, epoch, "t", [0])
            await _produce(c, "t", _batch([b"a", b"b"], pid, epoch, 0), "tx")
            return pid, epoch

    async def second(pid: int, epoch: int) -> None:
        async with InProcBroker(tmp_path, extra=extra) as b:
            c = await b.client()
            part = await _fetch(c, "t", 0, 1)
            assert part.last_stable_offset == 0  # still open after the restart
            for _ in range(100):
                part = await _fetch(c, "t", 0, 1)
                if part.last_stable_offset == 3:
                    break
                await __import__("asyncio").sleep(0.05)
            assert part.last_stable_offset == 3
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [
                (pid, 0)]
            resp = await c.call(describe_producers.DescribeProducersRequest(topics=[
                describe_producers.TopicRequest(name="t", partition_indexes=[0])]), 0,
                describe_producers.DescribeProducersResponse)
            (producer,) = resp.topics[0].partitions[0].active_producers
            assert (producer.producer_id, producer.producer_epoch) == (pid, epoch + 1)
            assert producer.current_txn_start_offset == -1
            assert (await _end(c, "tx", pid, epoch, True)).error_code == ErrorCode.PRODUCER_FENCED

    run(second(*run(first())))
