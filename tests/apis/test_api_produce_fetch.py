"""Produce, Fetch, ListOffsets and OffsetForLeaderEpoch over the wire."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run, settle

from groupcoord.logformat.batch import build_batch, decode_records, iter_batches
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import (
    create_topics,
    fetch,
    list_offsets,
    offset_for_leader_epoch,
    produce,
)


def _batch(n: int = 3, pid: int = -1, epoch: int = -1, seq: int = -1, ts: int = 1000,
           size: int = 10) -> bytes:
    rows = [(b"k%d" % i, b"v" * size, (), ts + i) for i in range(n)]
    return build_batch(rows, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def _produce(topic: str, records: bytes | None, partition: int = 0, acks: int = -1) -> Any:
    return produce.ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        produce.TopicProduceData(name=topic, partition_data=[
            produce.PartitionProduceData(index=partition, records=records)])])


async def _send(c: RawClient, topic: str, records: bytes | None, partition: int = 0,
                version: int = 9) -> Any:
    resp = await c.call(_produce(topic, records, partition), version, produce.ProduceResponse)
    return resp.responses[0].partition_responses[0]


async def _topic(c: RawClient, name: str, partitions: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    req = create_topics.CreateTopicsRequest(topics=[create_topics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[create_topics.CreatableTopicConfig(name=k, value=v)
                 for k, v in (configs or {}).items()])])
    resp = await c.call(req, 5, create_topics.CreateTopicsResponse)
    assert resp.topics[0].error_code == 0


def _fetch(topic: str, offset: int, partition: int = 0, max_wait: int = 0, min_bytes: int = 0,
           max_bytes: int = 1 << 20, partition_max: int = 1 << 20, session_id: int = 0,
           epoch: int = -1, isolation: int = 0) -> Any:
    return fetch.FetchRequest(
        replica_id=-1, max_wait_ms=max_wait, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=isolation, session_id=session_id, session_epoch=epoch, topics=[
            fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=partition_max)])])


def _records(data: Any) -> list[tuple[int, bytes | None]]:
    out = []
    for header, view in iter_batches(bytes(data or b"")):
        out += [(header.base_offset + r.offset_delta, r.key) for r in decode_records(view)]
    return out


def test_produce_then_fetch_returns_stored_bytes(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            first = await _send(c, "t", _batch(3))
            second = await _send(c, "t", _batch(2))
            assert (first.error_code, first.base_offset) == (0, 0)
            assert (second.base_offset, second.log_start_offset) == (3, 0)
            resp = await c.call(_fetch("t", 0), 12, fetch.FetchResponse)
            part = resp.responses[0].partitions[0]
            assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 5, 5)
            assert [o for o, _ in _records(part.records)] == [0, 1, 2, 3, 4]
            resp = await c.call(_fetch("t", 3), 4, fetch.FetchResponse)
            assert [o for o, _ in _records(resp.responses[0].partitions[0].records)] == [3, 4]
    run(go())


def test_produce_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            good = bytearray(_batch(2))
            corrupt = bytes(good[:-1]) + bytes([good[-1] ^ 0xFF])
            assert (await _send(c, "t", corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
            assert (await _send(c, "t", _batch() + _batch())).error_code == \
                ErrorCode.INVALID_RECORD
            bad_magic = bytearray(good)
            bad_magic[16] = 1
            assert (await _send(c, "t", bytes(bad_magic))).error_code == ErrorCode.INVALID_RECORD
            assert (await _send(c, "t", _batch(), partition=5)).error_code == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert (await _send(c, "__consumer_offsets", _batch())).error_code == \
                ErrorCode.INVALID_TOPIC_EXCEPTION
            zstd = build_batch([(b"k", b"v", (), 1)], compression=4)
            resp = await c.call(_produce("t", zstd), 6, produce.ProduceResponse)
            assert resp.responses[0].partition_responses[0].error_code == \
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            assert b.broker.topics.log("t", 0).log_end_offset == 0
            assert (await _send(c, "t", zstd, version=7)).error_code == 0
    run(go())


def test_acks_zero_sends_no_response(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            await c.send(_produce("t", _batch(1), acks=0), 9)
            resp = await c.call(_fetch("t", 0), 12, fetch.FetchResponse)
            # The next response on the wire is the fetch's: nothing was sent for acks=0.
            assert resp.responses[0].partitions[0].high_watermark == 1
    run(go())


def test_failed_acks_zero_produce_closes_the_connection(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await c.send(_produce("missing", _batch(1), acks=0), 9)
            assert await c.closed()
    run(go())


def test_idempotent_producer(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            assert (await _send(c, "t", _batch(3, pid=9, epoch=0, seq=0))).base_offset == 0
            assert (await _send(c, "t", _batch(2, pid=9, epoch=0, seq=3))).base_offset == 3
            dup = await _send(c, "t", _batch(3, pid=9, epoch=0, seq=0))
            assert (dup.error_code, dup.base_offset) == (0, 0)
            gap = await _send(c, "t", _batch(1, pid=9, epoch=0, seq=9))
            assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert (await _send(c, "t", _batch(1, pid=9, epoch=1, seq=0))).error_code == 0
            old = await _send(c, "t", _batch(1, pid=9, epoch=0, seq=5))
            assert old.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
            assert b.broker.topics.log("t", 0).log_end_offset == 6
        # Producer state is rebuilt from the log after a restart.
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            dup = await _send(c, "t", _batch(1, pid=9, epoch=1, seq=0))
            assert (dup.error_code, dup.base_offset) == (0, 5)
    run(go())


def test_log_append_time(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t", configs={"message.timestamp.type": "LogAppendTime"})
            before = int(time.time() * 1000)
            resp = await _send(c, "t", _batch(1, ts=5))
            assert resp.log_append_time_ms >= before
    run(go())


def test_fetch_long_poll_woken_by_append(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c, p = await b.client(), await b.client()
            await _topic(c, "t")
            started = time.monotonic()
            waiting = asyncio.ensure_future(c.call(_fetch("t", 0, max_wait=5000, min_bytes=1),
                                                   12, fetch.FetchResponse))
            await settle(lambda: b.broker.waiters.parked(("t", 0)))
            assert not waiting.done()
            await _send(p, "t", _batch(1))
            resp = await waiting
            assert time.monotonic() - started < 2
            assert _records(resp.responses[0].partitions[0].records)
            # With no data the fetch returns empty after max_wait.
            started = time.monotonic()
            resp = await c.call(_fetch("t", 1, max_wait=300, min_bytes=1), 12, fetch.FetchResponse)
            assert 0.25 < time.monotonic() - started < 2
            assert not resp.responses[0].partitions[0].records
    run(go())


def test_fetch_pipelined_behind_long_poll_keeps_order(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            first = await c.send(_fetch("t", 0, max_wait=400, min_bytes=1), 12)
            second = await c.send(_produce("t", _batch(1)), 9)
            corr1, _ = await c.recv(fetch.FetchResponse, 12)
            corr2, p = await c.recv(produce.ProduceResponse, 9)
            assert (corr1, corr2) == (first, second)
            assert p.responses[0].partition_responses[0].base_offset == 0
    run(go())


def test_fetch_limits_and_out_of_range(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t", 2)
            for _ in range(3):
                await _send(c, "t", _batch(1, size=500))
                await _send(c, "t", _batch(1, size=500), partition=1)
            # A partition limit smaller than one batch still returns that one batch.
            resp = await c.call(_fetch("t", 0, partition_max=10), 12, fetch.FetchResponse)
            assert len(_records(resp.responses[0].partitions[0].records)) == 1
            req = fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=10,
                                     session_id=0, session_epoch=-1, topics=[fetch.FetchTopic(
                                         topic="t", partitions=[
                                             fetch.FetchPartition(partition=p, fetch_offset=0,
                                                                  partition_max_bytes=1 << 20)
                                             for p in (0, 1)])])
            resp = await c.call(req, 12, fetch.FetchResponse)
            p0, p1 = resp.responses[0].partitions
            assert len(_records(p0.records)) == 1 and not p1.records
            resp = await c.call(_fetch("t", 99), 12, fetch.FetchResponse)
            assert resp.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            resp = await c.call(_fetch("nope", 0), 12, fetch.FetchResponse)
            assert resp.responses[0].partitions[0].error_code == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run(go())


def test_fetch_session_incremental(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            await _send(c, "t", _batch(2))
            full = await c.call(_fetch("t", 0, epoch=0), 12, fetch.FetchResponse)
            sid = full.session_id
            assert sid != 0 and len(full.responses) == 1
            empty = fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                       max_bytes=1 << 20, session_id=sid, session_epoch=1,
                                       topics=[])
            resp = await c.call(empty, 12, fetch.FetchResponse)
            # The session still fetches from offset 0, so its data is returned again.
            assert resp.session_id == sid and _records(resp.responses[0].partitions[0].records)
            moved = _fetch("t", 2, session_id=sid, epoch=2)
            resp = await c.call(moved, 12, fetch.FetchResponse)
            assert resp.responses == []
            await _send(c, "t", _batch(1))
            again = fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                       max_bytes=1 << 20, session_id=sid, session_epoch=3,
                                       topics=[])
            resp = await c.call(again, 12, fetch.FetchResponse)
            assert [o for o, _ in _records(resp.responses[0].partitions[0].records)] == [2]
            bad = await c.call(_fetch("t", 0, session_id=sid, epoch=9), 12, fetch.FetchResponse)
            assert bad.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
            lost = await c.call(_fetch("t", 0, session_id=sid + 1, epoch=1), 12,
                                fetch.FetchResponse)
            assert lost.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    run(go())


def test_fetch_by_topic_id(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            await _send(c, "t", _batch(1))
            tid = b.broker.topics.get("t").topic_id
            req = fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                     session_id=0, session_epoch=-1, topics=[
                                         fetch.FetchTopic(topic_id=tid, partitions=[
                                             fetch.FetchPartition(partition=0, fetch_offset=0,
                                                                  partition_max_bytes=1 << 20)]),
                                         fetch.FetchTopic(topic_id=b"\x07" * 16, partitions=[
                                             fetch.FetchPartition(partition=0, fetch_offset=0,
                                                                  partition_max_bytes=1 << 20)])])
            resp = await c.call(req, 16, fetch.FetchResponse)
            known, unknown = resp.responses
            assert known.topic_id == tid and _records(known.partitions[0].records)
            assert unknown.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    run(go())


def test_list_offsets_and_leader_epochs(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            await _send(c, "t", _batch(3, ts=1000))
            await _send(c, "t", _batch(3, ts=5000))

            async def lookup(ts: int, version: int = 7, epoch: int = -1) -> tuple[int, int, int]:
                req = list_offsets.ListOffsetsRequest(replica_id=-1, topics=[
                    list_offsets.ListOffsetsTopic(name="t", partitions=[
                        list_offsets.ListOffsetsPartition(partition_index=0, timestamp=ts,
                                                          current_leader_epoch=epoch)])])
                resp = await c.call(req, version, list_offsets.ListOffsetsResponse)
                p = resp.topics[0].partitions[0]
                return p.error_code, p.offset, p.timestamp

            assert await lookup(-1) == (0, 6, -1)
            assert await lookup(-2) == (0, 0, -1)
            assert await lookup(-3) == (0, 5, 5002)
            assert await lookup(1001) == (0, 1, 1001)
            assert await lookup(4000) == (0, 3, 5000)
            assert await lookup(9999) == (0, -1, -1)
            assert (await lookup(-1, epoch=4))[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
            assert (await lookup(-3, version=6))[0] == ErrorCode.UNSUPPORTED_VERSION
            req = offset_for_leader_epoch.OffsetForLeaderEpochRequest(topics=[
                offset_for_leader_epoch.OffsetForLeaderTopic(topic="t", partitions=[
                    offset_for_leader_epoch.OffsetForLeaderPartition(partition=0, leader_epoch=0),
                    offset_for_leader_epoch.OffsetForLeaderPartition(partition=0, leader_epoch=3),
                    offset_for_leader_epoch.OffsetForLeaderPartition(partition=7, leader_epoch=0),
                ])])
            resp = await c.call(req, 4, offset_for_leader_epoch.OffsetForLeaderEpochResponse)
            got = [(p.error_code, p.leader_epoch, p.end_offset) for p in resp.topics[0].partitions]
            assert got == [(0, 0, 6), (0, -1, -1), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    run(go())


def test_large_batch_spanning_many_reads(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "big", configs={"max.message.bytes": "8000000"})
            big = _batch(3, size=1_000_000)
            assert (await _send(c, "big", big)).error_code == 0
            assert (await _send(c, "t-missing", big)).error_code == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            resp = await c.call(_fetch("big", 0, partition_max=100), 12, fetch.FetchResponse)
            records = resp.responses[0].partitions[0].records
            assert len(_records(records)) == 3 and len(records) == len(big)
            too_big = await _send(c, "big", _batch(9, size=1_000_000))
            assert too_big.error_code == ErrorCode.MESSAGE_TOO_LARGE
    run(go())


def test_delete_records(tmp_path: Path) -> None:
    from groupcoord.wire.generated import delete_records as dr

    def req(topic: str, offset: int, partition: int = 0) -> Any:
        return dr.DeleteRecordsRequest(timeout_ms=1000, topics=[dr.DeleteRecordsTopic(
            name=topic, partitions=[dr.DeleteRecordsPartition(partition_index=partition,
                                                              offset=offset)])])

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            for _ in range(3):
                await _send(c, "t", _batch(2))

            async def call(r: Any) -> tuple[int, int]:
                resp = await c.call(r, 2, dr.DeleteRecordsResponse)
                p = resp.topics[0].partitions[0]
                return p.error_code, p.low_watermark

            assert await call(req("t", 2)) == (0, 2)
            assert await call(req("t", 99)) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
            assert await call(req("nope", 0)) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            assert await call(req("__consumer_offsets", 0)) == (
                ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
            resp = await c.call(_fetch("t", 0), 12, fetch.FetchResponse)
            assert resp.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert await call(req("t", -1)) == (0, 6)
        async with InProcBroker(tmp_path) as b:
            assert b.broker.topics.log("t", 0).log_start_offset == 6
    run(go())


def test_fetch_with_nothing_to_read_is_answered_at_once(tmp_path: Path) -> None:
    """A session close, a sessionless fetch naming nothing and an incremental fetch that
    forgets the last partition are answered at once (Kafka's `interesting.isEmpty`); an
    incremental fetch naming nothing still waits while its session has a partition."""
    def nothing(session_id: int, epoch: int, max_wait: int = 60_000,
                forget: bool = False) -> fetch.FetchRequest:
        forgotten = [fetch.ForgottenTopic(topic="t", partitions=[0])] if forget else []
        return fetch.FetchRequest(replica_id=-1, max_wait_ms=max_wait, min_bytes=1,
                                  max_bytes=1 << 20, session_id=session_id,
                                  session_epoch=epoch, topics=[],
                                  forgotten_topics_data=forgotten)

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _topic(c, "t")
            await _send(c, "t", _batch(2))
            for request in (nothing(0, -1), nothing(0, 0)):
                resp = await asyncio.wait_for(c.call(request, 12, fetch.FetchResponse), 10)
                assert resp.error_code == 0 and resp.responses == []
            sid = (await c.call(_fetch("t", 2, epoch=0), 12, fetch.FetchResponse)).session_id
            started = time.monotonic()
            resp = await c.call(nothing(sid, 1, max_wait=300), 12, fetch.FetchResponse)
            assert time.monotonic() - started >= 0.25 and resp.responses == []
            resp = await asyncio.wait_for(c.call(nothing(sid, -1), 12, fetch.FetchResponse), 10)
            assert resp.error_code == 0 and resp.session_id == 0
            sid = (await c.call(_fetch("t", 2, epoch=0), 12, fetch.FetchResponse)).session_id
            resp = await asyncio.wait_for(
                c.call(nothing(sid, 1, forget=True), 12, fetch.FetchResponse), 10)
            assert resp.error_code == 0 and resp.responses == []
    run(go())
