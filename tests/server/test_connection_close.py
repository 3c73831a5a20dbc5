"""Closing a connection still answers the requests read before the reason to close.

Kafka reads one request at a time per connection, so by the time it meets a malformed
frame, a client EOF or a failed acks=0 produce it has answered every earlier request. The
broker pipelines, so it must first write the responses it owes, then close. Also: the
client host handed to the coordinator is Kafka's `InetAddress.toString()` form.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, RawClient, run
from out_of_order import OutOfOrderMetadata

from groupcoord.apis.registry import ApiSpec, load_handlers
from groupcoord.server.connection import kafka_client_host
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)


async def _close_after_me(ctx: Any, header: Any, request: Any, version: int) -> Any:
    """Behaves like a failed acks=0 produce: no response, and the connection closes."""
    ctx.close_connection()
    return None


def _handlers() -> dict[int, ApiSpec]:
    table = load_handlers(["api_versions"])
    table[3] = ApiSpec(3, 0, 12, OutOfOrderMetadata().handle, MetadataRequest, MetadataResponse, 9)
    table[60] = ApiSpec(60, 0, 2, _close_after_me, DescribeClusterRequest,
                        DescribeClusterResponse, 0)
    return table


def _metadata(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=name)])


async def _send_slow_pair(c: RawClient) -> None:
    for name in ("after 1", "now"):
        await c.send(_metadata(name), 9)


async def _expect_pair_then_close(c: RawClient) -> None:
    got = [await c.recv(MetadataResponse, 9) for _ in range(2)]
    assert [corr for corr, _ in got] == [1, 2]
    assert [r.topics[0].name for _, r in got] == ["after 1@/127.0.0.1", "now@/127.0.0.1"]
    assert await c.closed()


def test_malformed_frame_after_pipelined_requests(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            await _send_slow_pair(c)
            bad = struct.pack(">hhih", 999, 0, 3, -1)
            await c.send_raw(struct.pack(">i", len(bad)) + bad)
            await c.send(_metadata("now"), 9)  # after the bad frame: never answered
            await _expect_pair_then_close(c)
    run(go())


def test_half_close_after_pipelined_requests(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            await _send_slow_pair(c)
            c.writer.write_eof()
            await _expect_pair_then_close(c)
    run(go())


def test_handler_close_answers_earlier_requests_only(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            await _send_slow_pair(c)
            await c.send(DescribeClusterRequest(), 0)
            await c.send(_metadata("now"), 9)  # after the closing request: abandoned
            await _expect_pair_then_close(c)
    run(go())


def test_idle_half_close_closes(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            c.writer.write_eof()
            assert await c.closed()
    run(go())


def test_client_host_is_kafka_inet_address_string() -> None:
    assert kafka_client_host("127.0.0.1") == "/127.0.0.1"
    assert kafka_client_host("::1") == "/0:0:0:0:0:0:0:1"
    assert kafka_client_host("fe80::1%lo") == "/fe80:0:0:0:0:0:0:1%lo"
