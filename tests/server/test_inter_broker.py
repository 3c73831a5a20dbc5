"""The inter-broker client (`server.inter_broker`) against the in-process broker: requests
pipelined on one connection and matched to their responses, the version both sides serve,
a node that is not live or does not answer (a timeout on the broker's clock, here a manual
one) is `PeerUnavailable`, a peer that went away fails what waited on it, and the next
request connects again to where the map then says the node listens."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from broker_inproc import InProcBroker, run, settle

from groupcoord.coordinator.clock import ManualClock
from groupcoord.server.cluster_map import ClusterMap
from groupcoord.server.config import Listener
from groupcoord.server.inter_broker import InterBrokerClient, PeerUnavailable
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse
from groupcoord.wire.generated.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

PEER = 7
LISTENER = "PLAINTEXT"


def _map(port: int) -> ClusterMap:
    cluster = ClusterMap([PEER], {})
    cluster.nodes[PEER].endpoints[LISTENER] = Listener("127.0.0.1", port, LISTENER)
    return cluster


def _markers(topic: str) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(markers=[WritableTxnMarker(
        producer_id=1, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
        topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=[0])])])


def test_requests_are_pipelined_and_matched(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = InterBrokerClient(1, _map(b.port), LISTENER, b.broker.clock)
            try:
                metadata, written, unknown = await asyncio.gather(
                    client.send(PEER, MetadataRequest(topics=None), MetadataResponse),
                    client.send(PEER, _markers("t"), WriteTxnMarkersResponse),
                    client.send(PEER, _markers("nope"), WriteTxnMarkersResponse))
                assert "t" in [t.name for t in metadata.topics]
                assert written.markers[0].topics[0].partitions[0].error_code == 0
                assert unknown.markers[0].topics[0].name == "nope"
                assert unknown.markers[0].topics[0].partitions[0].error_code == 3
            finally:
                await client.close()
    run(go())


def test_a_node_that_is_not_live_or_gone(tmp_path: Path) -> None:
    async def go() -> None:
        cluster = ClusterMap([PEER], {})
        client = InterBrokerClient(1, cluster, LISTENER, ManualClock())
        with pytest.raises(PeerUnavailable):  # no endpoint: not live
            await client.send(PEER, MetadataRequest(topics=None), MetadataResponse)
        first = tmp_path / "first"
        async with InProcBroker(first) as b:
            cluster.nodes[PEER].endpoints[LISTENER] = Listener("127.0.0.1", b.port, LISTENER)
            await client.send(PEER, MetadataRequest(topics=None), MetadataResponse)
        # The node stopped: refused (or closed), then it restarts on another port.
        with pytest.raises(PeerUnavailable):
            await client.send(PEER, MetadataRequest(topics=None), MetadataResponse)
        async with InProcBroker(tmp_path / "second") as b:
            cluster.nodes[PEER].endpoints[LISTENER] = Listener("127.0.0.1", b.port, LISTENER)
            answer = await client.send(PEER, MetadataRequest(topics=None), MetadataResponse)
            assert answer.brokers[0].port == b.port
        await client.close()
    run(go())


def test_no_answer_within_the_timeout_on_the_brokers_clock() -> None:
    async def go() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        clock = ManualClock()
        client = InterBrokerClient(1, _map(port), LISTENER, clock, request_timeout_ms=5_000)
        try:
            waiting = asyncio.ensure_future(
                client.send(PEER, MetadataRequest(topics=None), MetadataResponse))
            await settle(lambda: accepted)
            clock.advance(4_999)
            await asyncio.sleep(0)
            assert not waiting.done()
            clock.advance(1)
            with pytest.raises(PeerUnavailable):
                await waiting
        finally:
            await client.close()
            for writer in accepted:
                writer.close()
            server.close()
            await server.wait_closed()
    run(go())
