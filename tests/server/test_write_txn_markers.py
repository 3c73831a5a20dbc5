"""WriteTxnMarkers (key 27) against the in-process broker, over the wire: a COMMIT marker
ends a transaction on a data partition (read_committed then sees it) and on
`__consumer_offsets` (its offsets become committed); an ABORT marker indexes the abort; the
per-partition errors as Kafka's `handleWriteTxnMarkersRequest` answers them (an unknown topic
or partition, an older producer epoch, an older coordinator epoch, an offsets shard that is
not loaded, a partition another node leads) and CLUSTER_AUTHORIZATION_FAILED without
CLUSTER_ACTION; ApiVersions advertises v1-v2, as Kafka 4.4 does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acl_support import ADMIN, client_as
from broker_inproc import InProcBroker, RawClient, run
from test_txn_offsets_runtime import PARTITION, add_offsets, batches, init_producer, txn_request

from groupcoord.logformat.batch import build_batch, parse_header
from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.txn_offset_commit import TxnOffsetCommitResponse
from groupcoord.wire.generated.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

TOPIC = "t"
PID = 4000


def _markers(*markers: tuple[int, int, bool, int, dict[str, list[int]]]
             ) -> WriteTxnMarkersRequest:
    """(producer id, epoch, commit, coordinator epoch, topic -> partitions) per marker."""
    return WriteTxnMarkersRequest(markers=[WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit,
        coordinator_epoch=coordinator_epoch,
        topics=[WritableTxnMarkerTopic(name=name, partition_indexes=parts)
                for name, parts in topics.items()])
        for pid, epoch, commit, coordinator_epoch, topics in markers])


def _errors(response: WriteTxnMarkersResponse) -> list[dict[tuple[str, int], int]]:
    return [{(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions}
            for m in response.markers]


async def _write(client: RawClient, request: WriteTxnMarkersRequest, version: int = 2
                 ) -> list[dict[tuple[str, int], int]]:
    response = await client.call(request, version, WriteTxnMarkersResponse)
    return _errors(response)


def _open_transaction(b: InProcBroker, partition: int, pid: int = PID, epoch: int = 0) -> None:
    """A transactional batch of `pid` (written as Produce would, once verified)."""
    batch = build_batch([(b"k", b"v", [], 1_000)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=0, transactional=True)
    b.broker.append(TOPIC, partition, batch, 1_000)


def _last_stable(b: InProcBroker, partition: int) -> int:
    plog = b.broker.topics.log(TOPIC, partition)
    assert plog is not None
    return b.broker.producer_state(TOPIC, partition).last_stable_offset(plog.log_end_offset)


def test_markers_end_transactions_on_data_partitions(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create(TOPIC, 2, {})
            _open_transaction(b, 0)
            _open_transaction(b, 1, pid=PID + 1)
            assert (_last_stable(b, 0), _last_stable(b, 1)) == (0, 0)
            client = await b.client()
            assert await _write(client, _markers((PID, 0, True, 3, {TOPIC: [0]}),
                                                 (PID + 1, 0, False, 3, {TOPIC: [1]}))) == [
                {(TOPIC, 0): 0}, {(TOPIC, 1): 0}]
            assert (_last_stable(b, 0), _last_stable(b, 1)) == (2, 2)
            for partition, pid in ((0, PID), (1, PID + 1)):
                plog = b.broker.topics.log(TOPIC, partition)
                assert plog is not None
                header = parse_header(list(plog.iter_batches())[-1])
                assert (header.is_control, header.producer_id) == (True, pid)
    run(go())


def test_marker_errors_per_partition(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create(TOPIC, 1, {})
            _open_transaction(b, 0, epoch=5)
            client = await b.client()
            # Unknown topic and partition; an older producer epoch.
            assert await _write(client, _markers(
                (PID, 4, True, 0, {"nope": [0], TOPIC: [7, 0]}))) == [
                {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                 (TOPIC, 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                 (TOPIC, 0): E.INVALID_PRODUCER_EPOCH}]
            assert await _write(client, _markers((PID, 5, True, 4, {TOPIC: [0]}))) == [
                {(TOPIC, 0): 0}]
            # The coordinator epoch went back: a deposed coordinator is fenced.
            _open_transaction(b, 0, epoch=5)
            assert await _write(client, _markers((PID, 5, False, 3, {TOPIC: [0]})), 1) == [
                {(TOPIC, 0): E.TRANSACTION_COORDINATOR_FENCED}]
    run(go())


def test_markers_on_consumer_offsets(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create(TOPIC, 2, {})
            client = await b.client()
            tid = "markers-offsets"
            pid, epoch = await init_producer(client, tid)
            assert await add_offsets(client, tid, pid, epoch) == 0
            committed = await client.call(txn_request({(TOPIC, 0): 5}, pid, epoch, tid=tid),
                                          3, TxnOffsetCommitResponse)
            assert committed.topics[0].partitions[0].error_code == 0
            ends = len(batches(b)[0])
            assert await _write(client, _markers(
                (pid, epoch, True, 0, {OFFSETS_TOPIC: [PARTITION, 50]}))) == [
                {(OFFSETS_TOPIC, PARTITION): 0,
                 (OFFSETS_TOPIC, 50): E.UNKNOWN_TOPIC_OR_PARTITION}]
            headers, _ = batches(b)
            assert len(headers) == ends + 1 and headers[-1].is_control
            # A shard this node does not have loaded: the coordinator is told
            # NOT_LEADER_OR_FOLLOWER (not NOT_COORDINATOR, which it does not expect).
            b.broker.groups.unload(PARTITION)
            assert await _write(client, _markers(
                (pid, epoch, True, 0, {OFFSETS_TOPIC: [PARTITION]}))) == [
                {(OFFSETS_TOPIC, PARTITION): E.NOT_LEADER_OR_FOLLOWER}]
    run(go())


def test_a_partition_another_node_leads(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=2) as b:
            b.broker.topics.create(TOPIC, 2, {})
            cluster = b.broker.cluster
            assert cluster is not None
            leaders = {p: cluster.owner(TOPIC, p) for p in (0, 1)}
            for node in (0, 1):
                client = RawClient(*await asyncio.open_connection(
                    "127.0.0.1", b.broker.node_servers[node][0].port))
                b.clients.append(client)
                errors = await _write(client, _markers((PID, 0, True, 0, {TOPIC: [0, 1]})))
                assert errors == [{(TOPIC, p): 0 if leaders[p] == node
                                   else E.NOT_LEADER_OR_FOLLOWER for p in (0, 1)}]
    run(go())


def test_cluster_action_is_required(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, authorizer="standard", super_users=ADMIN,
                                auto_create_topics=False) as b:
            b.broker.topics.create(TOPIC, 1, {})
            client = await client_as(b, "User:alice")
            assert await _write(client, _markers((PID, 0, True, 0, {TOPIC: [0]}))) == [
                {(TOPIC, 0): E.CLUSTER_AUTHORIZATION_FAILED}]
            admin = await client_as(b, ADMIN)
            assert await _write(admin, _markers((PID, 0, True, 0, {TOPIC: [0]}))) == [
                {(TOPIC, 0): 0}]
    run(go())


def test_api_versions_advertises_kafkas_range(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            client = await b.client()
            answer = await client.call(ApiVersionsRequest(), 2, ApiVersionsResponse)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            assert ranges[WriteTxnMarkersRequest.API_KEY] == (1, 2)
    run(go())
