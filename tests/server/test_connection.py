"""Connection behaviour: framing, pipelining order, protocol errors close the connection."""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, RawClient, run
from out_of_order import OutOfOrderMetadata

from groupcoord.apis.errors import ApiError
from groupcoord.apis.registry import ApiSpec, load_handlers
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)


async def _failing(ctx: Any, header: Any, request: Any, version: int) -> Any:
    raise ApiError(42, "nope")


def _handlers() -> dict[int, ApiSpec]:
    table = load_handlers(["api_versions"])
    table[3] = ApiSpec(3, 0, 12, OutOfOrderMetadata().handle, MetadataRequest, MetadataResponse, 9)
    table[60] = ApiSpec(60, 0, 2, _failing, DescribeClusterRequest, DescribeClusterResponse, 0)
    return table


def _metadata(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=name)])


def test_pipelined_responses_keep_request_order(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            # Handlers finish in the order 2, 3, 1, 4; responses go out as 1, 2, 3, 4.
            names = ["after 2", "now", "after 1", "now"]
            for name in names:
                await c.send(_metadata(name), 9)
            got = [await c.recv(MetadataResponse, 9) for _ in names]
            assert [corr for corr, _ in got] == [1, 2, 3, 4]
            assert [r.topics[0].name for _, r in got] == [f"{n}@/127.0.0.1" for n in names]
    run(go())


def test_request_split_into_single_bytes(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            data = RawClient.frame(ApiVersionsRequest(), 0, 7)
            for i in range(len(data)):
                await c.send_raw(data[i:i + 1])
            corr, resp = await c.recv(ApiVersionsResponse, 0)
            assert corr == 7 and resp.error_code == 0
    run(go())


def test_many_frames_in_one_write(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            await c.send_raw(b"".join(RawClient.frame(ApiVersionsRequest(), 3, i)
                                      for i in range(1, 51)))
            corrs = [(await c.recv(ApiVersionsResponse, 3))[0] for _ in range(50)]
            assert corrs == list(range(1, 51))
    run(go())


def _closes_with_one_line(tmp_path: Path, caplog: Any, payload: bytes, **cfg: Any) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), **cfg) as b:
            c = await b.client()
            await c.send_raw(payload)
            assert await c.closed()
            # The broker still serves other connections.
            other = await b.client()
            resp = await other.call(ApiVersionsRequest(), 0, ApiVersionsResponse)
            assert resp.error_code == 0
    with caplog.at_level(logging.WARNING, logger="groupcoord.server"):
        run(go())
    closing = [r for r in caplog.records if "closing connection" in r.getMessage()]
    assert len(closing) == 1


def test_oversize_frame_closes(tmp_path: Path, caplog: Any) -> None:
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", 4096) + b"x" * 100,
                          max_request_size=1024)


def test_negative_size_closes(tmp_path: Path, caplog: Any) -> None:
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", -5))


def test_unknown_api_key_closes(tmp_path: Path, caplog: Any) -> None:
    body = struct.pack(">hhih", 999, 0, 1, -1)
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", len(body)) + body)


def test_unsupported_version_closes(tmp_path: Path, caplog: Any) -> None:
    body = struct.pack(">hhih", 3, 99, 1, -1)
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", len(body)) + body)


def test_truncated_body_closes(tmp_path: Path, caplog: Any) -> None:
    frame = RawClient.frame(_metadata("now"), 1, 1)
    body = frame[4:-3]
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", len(body)) + body)


def test_short_header_closes(tmp_path: Path, caplog: Any) -> None:
    _closes_with_one_line(tmp_path, caplog, struct.pack(">i", 3) + b"abc")


def test_api_versions_too_new_answers_v0(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            body = struct.pack(">hhih", 18, 77, 5, 1) + b"x" + b"\x00garbage"
            await c.send_raw(struct.pack(">i", len(body)) + body)
            corr, resp = await c.recv(ApiVersionsResponse, 0)
            assert corr == 5
            assert resp.error_code == 35
            assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [
                (18, 0, 5)]
    run(go())


def test_api_error_becomes_response_error(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            resp = await c.call(DescribeClusterRequest(), 0, DescribeClusterResponse)
            assert resp.error_code == 42
    run(go())


def test_response_header_flexibility(tmp_path: Path) -> None:
    """Flexible responses carry header v1 (tagged fields), ApiVersions always v0."""
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            c = await b.client()
            await c.send(ApiVersionsRequest(client_software_name="a", client_software_version="1"), 3)
            data = await c.read_frame()
            resp, end = ApiVersionsResponse.decode(data, 4, 3)
            assert end == len(data) and resp.error_code == 0
            await c.send(_metadata("now"), 9)
            data = await c.read_frame()
            assert data[4] == 0  # empty tagged-field section of header v1
            resp, end = MetadataResponse.decode(data, 5, 9)
            assert end == len(data)
    run(go())
