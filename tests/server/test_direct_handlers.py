"""Handlers that are not coroutine functions (`server.dispatch.Dispatcher._start`): they
start in arrival order with the coroutine handlers of the same connection, what they
return (a future, a coroutine) is answered as an `async def` handler's result would be,
and what they raise gets the same error responses."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from groupcoord.apis import offset_commit
from groupcoord.apis.api_spec import ApiSpec
from groupcoord.apis.errors import ApiError
from groupcoord.apis.registry import load_handlers
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from tests.server.broker_inproc import InProcBroker, RawClient, run

COMMIT_V = 9
HEARTBEAT_V = 4


def _commit(group: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, topics=[OffsetCommitRequestTopic(
        name="t", partitions=[OffsetCommitRequestPartition(partition_index=0,
                                                           committed_offset=1)])])


def _answer(error: int = 0) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[OffsetCommitResponseTopic(
        name="t", partitions=[OffsetCommitResponsePartition(partition_index=0,
                                                            error_code=error)])])


def _table(commit: Any, heartbeat: Any) -> dict[int, ApiSpec]:
    table = load_handlers(["api_versions", "heartbeat", "offset_commit"])
    table[8] = table[8].replace(handler=commit)
    table[12] = table[12].replace(handler=heartbeat)
    return table


async def _pipeline(client: RawClient, requests: list[tuple[Any, int]]) -> None:
    frames = b""
    for request, version in requests:
        client.correlation += 1
        frames += client.frame(request, version, client.correlation)
    await client.send_raw(frames)  # one write: the broker reads them in one go


def test_handlers_start_in_arrival_order_whatever_their_kind(tmp_path: Path) -> None:
    started: list[str] = []

    def commit(ctx: Any, header: Any, request: OffsetCommitRequest,
               version: int) -> Awaitable[OffsetCommitResponse]:
        started.append(request.group_id)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(_answer())
        return fut

    async def heartbeat(ctx: Any, header: Any, request: HeartbeatRequest,
                        version: int) -> HeartbeatResponse:
        started.append(request.group_id)
        return HeartbeatResponse()

    async def go() -> list[int]:
        async with InProcBroker(tmp_path, _table(commit, heartbeat)) as b:
            client = await b.client()
            await _pipeline(client, [(HeartbeatRequest(group_id="hb1"), HEARTBEAT_V),
                                     (_commit("c1"), COMMIT_V),
                                     (HeartbeatRequest(group_id="hb2"), HEARTBEAT_V),
                                     (_commit("c2"), COMMIT_V)])
            got = [(await client.recv(HeartbeatResponse, HEARTBEAT_V))[0],
                   (await client.recv(OffsetCommitResponse, COMMIT_V))[0],
                   (await client.recv(HeartbeatResponse, HEARTBEAT_V))[0],
                   (await client.recv(OffsetCommitResponse, COMMIT_V))[0]]
            return got

    assert run(go()) == [1, 2, 3, 4]
    assert started == ["hb1", "c1", "hb2", "c2"]


def test_what_a_plain_handler_raises_or_returns_is_answered(tmp_path: Path) -> None:
    def commit(ctx: Any, header: Any, request: OffsetCommitRequest,
               version: int) -> Awaitable[OffsetCommitResponse]:
        kind = request.group_id
        if kind == "raises-api-error":
            raise ApiError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if kind == "raises":
            raise RuntimeError("a bug")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if kind == "future-api-error":
            fut.set_exception(ApiError(ErrorCode.NOT_COORDINATOR))
        elif kind == "future-fails":
            fut.set_exception(RuntimeError("a bug"))
        elif kind == "coroutine":
            async def later() -> OffsetCommitResponse:
                await asyncio.sleep(0)
                return _answer(ErrorCode.OFFSET_METADATA_TOO_LARGE)
            return later()
        else:
            asyncio.get_running_loop().call_soon(fut.set_result, _answer())
        return fut

    async def heartbeat(ctx: Any, header: Any, request: HeartbeatRequest,
                        version: int) -> HeartbeatResponse:
        return HeartbeatResponse()

    kinds = ["raises-api-error", "raises", "future-api-error", "future-fails", "coroutine",
             "future"]

    async def go() -> list[int]:
        async with InProcBroker(tmp_path, _table(commit, heartbeat)) as b:
            client = await b.client()
            await _pipeline(client, [(_commit(kind), COMMIT_V) for kind in kinds])
            codes = []
            for _ in kinds:
                _corr, response = await client.recv(OffsetCommitResponse, COMMIT_V)
                codes.append(response.topics[0].partitions[0].error_code)
            return codes

    assert run(go()) == [ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_SERVER_ERROR,
                         ErrorCode.NOT_COORDINATOR, ErrorCode.UNKNOWN_SERVER_ERROR,
                         ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.NONE]


def test_offset_commit_is_a_plain_handler() -> None:
    # The usual commit is answered from the shard's future, with no task of its own.
    assert not asyncio.iscoroutinefunction(offset_commit.handle)
